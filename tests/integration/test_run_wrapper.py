"""`nanopedia run -- COMMAND`: real commands under the wrapper, their bytes, codes and signals.

The torchrun case needs torch and lives in tests/repro/test_run_torchrun.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nanopedia.cli import main
from nanopedia.commands import wrap

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generator")}
WRAP = [sys.executable, "-m", "nanopedia", "run"]
LOGS = ROOT / "tests" / "logs"

FAILS = """\
import sys
print("step 1 loss 2.31", flush=True)
print("warming up", file=sys.stderr, flush=True)
def backward():
    raise RuntimeError("one of the variables needed for gradient computation has been modified "
                       "by an inplace operation: [torch.FloatTensor [4]], which is output 0 of "
                       "ReluBackward0, is at version 1; expected version 0 instead.")
try:
    backward()
except RuntimeError:
    import traceback; traceback.print_exc()
    sys.exit(3)
"""

# Bytes no decoder would keep as they are: invalid UTF-8, a lone CR, a NUL, no final newline.
SUCCEEDS = """\
import os, sys
out, err = sys.stdout.buffer, sys.stderr.buffer
for i in range(40_000):
    out.write(b"step %d loss 0.%04d \\xff\\xfe [rank1]: [default0]: ok\\r\\n" % (i, i % 9973))
    if i % 997 == 0:
        err.write(b"progress %d\\r" % i)
out.write(b"\\x00\\x1b[31mdone without newline")
"""

HANGS = """\
import os, signal, subprocess, sys, time
def said(signum, frame):
    print(f"child got {signal.Signals(signum).name}", flush=True)
    if signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
signal.signal(signal.SIGTERM, said)
signal.signal(signal.SIGUSR1, said)
grandchild = subprocess.Popen(["sleep", "600"])
print(f"ready {grandchild.pid}", flush=True)
while True:
    time.sleep(0.05)
"""


@dataclass
class Done:
    returncode: int
    stdout: bytes
    stderr: bytes


@pytest.fixture
def wrapped(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Done]:
    """`nanopedia run [EXTRA] -- python job.py` in the test's folder, run in this process (the
    wrapper's code where mutation testing sees it) with its file descriptors captured: the
    command is a real process, its bytes go through the wrapper's pumps to fds 1 and 2. The
    signal test below runs the wrapper in a process of its own, as a scheduler signals it."""
    monkeypatch.chdir(tmp_path)

    def run(script: str, *extra: str) -> Done:
        (tmp_path / "job.py").write_text(script)
        code = main(["run", *extra, "--", sys.executable, "job.py"])
        out, err = capfdbinary.readouterr()
        return Done(code, out, err)

    return run


def test_a_failing_command_keeps_its_code_and_gets_the_verdict_at_the_end(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    direct = subprocess.run(
        [sys.executable, "-c", FAILS], capture_output=True, timeout=60, check=False
    )
    done = wrapped(FAILS)
    assert done.returncode == direct.returncode == 3
    assert done.stdout == direct.stdout
    err = done.stderr.decode()
    assert err.startswith("warming up\nTraceback (most recent call last):")
    tail = err[err.index("\nnanopedia: the command exited with 3") :]
    assert "verdict: autograd-inplace-modified" in tail
    assert tail.rstrip().endswith("nanopedia: verdict JSON: nanopedia-verdict.json")
    verdict = json.loads((tmp_path / "nanopedia-verdict.json").read_text())
    assert verdict["matches"][0]["id"] == "autograd-inplace-modified"
    assert verdict["run"]["exit_code"] == 3
    assert verdict["run"]["command"] == [sys.executable, "job.py"]
    assert "TORCHELASTIC_ERROR_FILE" in verdict["run"]["environment_set"]
    assert not list(tmp_path.glob("nanopedia-run-*"))  # the run left no evidence: removed


def test_the_verdict_agrees_with_diagnose_on_the_same_text(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    done = wrapped(FAILS, "--json", "v.json")
    log = tmp_path / "out.log"
    log.write_bytes(done.stdout + done.stderr[: done.stderr.index(b"\nnanopedia: ")] + b"\n")
    direct = subprocess.run(
        [sys.executable, "-m", "nanopedia", "diagnose", str(log), "--json"],
        env=ENV,
        capture_output=True,
        timeout=60,
        check=False,
    )
    ours, theirs = json.loads((tmp_path / "v.json").read_text()), json.loads(direct.stdout)
    assert [m["id"] for m in ours["matches"]] == [m["id"] for m in theirs["matches"]]
    assert ours["matches"][0]["cause"] == theirs["matches"][0]["cause"]


# A job that leaves torch's real files (tests/logs/elastic, tests/logs/flight) where the wrapper's
# variables point, as torchrun and the Flight Recorder do, and prints nothing of its error.
LEAVES_ERROR_FILES = f"""\
import os, shutil, sys
src = {str(LOGS / "elastic" / "two-errors" / "attempt_0")!r}
for rank in ("0", "1"):
    dest = os.path.join(os.environ["PET_LOG_DIR"], "3f2a_x", "attempt_0", rank)
    os.makedirs(dest)
    shutil.copy(os.path.join(src, rank, "error.json"), dest)
# torchrun's copy of the first failure's file, for its own @record
shutil.copy(os.path.join(src, "1", "error.json"), os.environ["TORCHELASTIC_ERROR_FILE"])
print("step 1 loss 2.31")
sys.exit(1)
"""

LEAVES_DUMPS = f"""\
import os, pickle, shutil, sys
for rank in ("0", "1"):
    src = os.path.join({str(LOGS / "flight" / "skip")!r}, f"rank{{rank}}.json")
    shutil.copy(src, os.environ["TORCH_FR_DUMP_TEMP_FILE"] + rank)
with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + "2", "wb") as f:  # as NCCL dumps: a pickle
    pickle.dump({{"entries": []}}, f)
print("collective timed out", file=sys.stderr)
sys.exit(6)
"""


def test_the_verdict_reads_the_error_files_the_run_left(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    """The output shows no error: the ranks' error files give the verdict, their timestamps
    the first failure, and torchrun's copy of rank 1's file is not a third failure."""
    done = wrapped(LEAVES_ERROR_FILES)
    assert done.returncode == 1 and done.stdout == b"step 1 loss 2.31\n"
    err = done.stderr.decode()
    assert "the verdict on the last 17 bytes of its output and 2 torchelastic error files:" in err
    assert "verdict: shape-mismatch: " in err
    assert "\ntorchelastic error files (earliest first):\n   rank 1 at " in err
    out = json.loads((tmp_path / "nanopedia-verdict.json").read_text())
    assert (out["matches"][0]["id"], out["initiating_rank"]) == ("shape-mismatch", 1)
    assert out["initiating_reason"].startswith("earliest torchelastic error file: ")
    assert out["initiating"]["file"].endswith("/3f2a_x/attempt_0/1/error.json")
    assert [(e["rank"], e["attempt"]) for e in out["error_files"]] == [(1, 0), (0, 0)]
    assert len(out["run"]["evidence_files"]) == 3 and out["run"]["evidence_unread"] == []


def test_the_verdict_reads_the_dumps_and_names_a_pickle_it_would_not_load(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    done = wrapped(LEAVES_DUMPS)
    assert done.returncode == 6
    err = done.stderr.decode()
    assert "and 2 Flight Recorder dumps:\nverdict: training-hang-no-error: " in err
    assert "rank 1 behind: never entered collective #3" in err
    assert "/flight-recorder/rank_2: a Python pickle, not a JSON Flight Recorder dump" in err
    assert "\n  hint: write each rank's dump as JSON" in err
    out = json.loads((tmp_path / "nanopedia-verdict.json").read_text())
    (finding,) = out["flight_recorder"]["findings"]
    assert (finding["kind"], finding["ranks"], out["initiating_rank"]) == ("behind", [1], 1)
    (unread,) = out["run"]["evidence_unread"]
    assert unread["file"].endswith("/flight-recorder/rank_2")
    assert "never unpickles" in unread["message"]


def test_a_succeeding_command_passes_every_byte_and_leaves_nothing(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    direct = subprocess.run(
        [sys.executable, "-c", SUCCEEDS], capture_output=True, timeout=60, check=True
    )
    done = wrapped(SUCCEEDS)
    assert done.returncode == 0
    assert done.stdout == direct.stdout and len(done.stdout) > 1_000_000
    assert done.stderr == direct.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.py"]


def test_sigterm_and_sigusr1_reach_the_command_and_its_children(tmp_path: Path) -> None:
    """A scheduler's SIGTERM to the wrapper reaches the command's process group once; the
    wrapper then exits 143, as a shell does for a command killed by SIGTERM."""
    (tmp_path / "job.py").write_text(HANGS)
    proc = subprocess.Popen(
        [*WRAP, "--", sys.executable, "job.py"],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline().decode()
    assert ready.startswith("ready "), ready
    grandchild = int(ready.split()[1])
    proc.send_signal(signal.SIGUSR1)
    assert proc.stdout.readline() == b"child got SIGUSR1\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert out == b"child got SIGTERM\n"
    assert b"nanopedia: the command was killed by SIGTERM" in err
    assert json.loads((tmp_path / "nanopedia-verdict.json").read_text())["run"]["exit_code"] == 143
    for _ in range(100):  # the grandchild got the SIGTERM too (init reaps it)
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the command's own child did not get the SIGTERM")


def test_a_command_killed_by_a_signal_exits_128_plus_it(
    tmp_path: Path, wrapped: Callable[..., Done]
) -> None:
    done = wrapped("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert done.returncode == 137
    assert b"the command was killed by SIGKILL" in done.stderr


def test_variables_are_set_only_where_unset(
    tmp_path: Path, wrapped: Callable[..., Done], monkeypatch: pytest.MonkeyPatch
) -> None:
    show = (
        "import os, sys\nfor k in ('PET_LOG_DIR', 'TORCHELASTIC_ERROR_FILE', "
        "'TORCH_FR_BUFFER_SIZE', 'PYTHONUNBUFFERED'):\n    print(k, os.environ.get(k))\n"
        "sys.exit(1)\n"
    )
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "7")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    done = wrapped(show)
    out = dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())
    assert out["TORCH_FR_BUFFER_SIZE"] == "7" and out["PYTHONUNBUFFERED"] == "1"
    folder = Path(out["TORCHELASTIC_ERROR_FILE"]).parent
    assert folder.parent == tmp_path and folder.name.startswith("nanopedia-run-")
    assert out["PET_LOG_DIR"] == str(folder / "torchelastic")
    run = json.loads((tmp_path / "nanopedia-verdict.json").read_text())["run"]
    assert run["environment_set"] == sorted(set(wrap.switches(folder)) - {"TORCH_FR_BUFFER_SIZE"})
    assert run["evidence_folder"] is None  # the command left nothing there: removed
    assert not folder.exists()
    plain = wrapped(show, "--no-env").stdout.decode()
    assert "TORCHELASTIC_ERROR_FILE None" in plain and "PYTHONUNBUFFERED None" in plain
    run = json.loads((tmp_path / "nanopedia-verdict.json").read_text())["run"]
    assert run["environment_set"] == [] and run["evidence_folder"] is None


def test_a_missing_command_exits_127_and_no_command_is_a_usage_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--", "no-such-command-xyz"]) == 127
    assert "nanopedia: cannot run 'no-such-command-xyz'" in capfd.readouterr().err
    assert main(["run", "--"]) == 2
    err = capfd.readouterr().err
    assert "no command to run" in err and "put it after '--'" in err
    assert main(["run", "--json", "no-such-folder/v.json", "--", "true"]) == 2
    assert "the folder for the verdict JSON does not exist" in capfd.readouterr().err
    # the command that did not start has its verdict JSON (on no output); no folder is left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nanopedia-verdict.json"]
