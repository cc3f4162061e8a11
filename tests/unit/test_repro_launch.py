"""The repro launcher: how it waits for its ranks (torchrun's rules: a failed rank stops the others,
SIGKILL after the grace period, nothing past the deadline), the limits it lowers, and the program
each rank runs (`repro_launch.RUN`): `python script.py`, less the teardown.

Each case of RUN runs the same script both ways, as `python script.py` and as `python -c RUN`, and
compares what a reader of the output and the exit code would see; the one difference is meant: a
crash while the interpreter tears down, after the script returned, no longer fails the rank.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nanopedia.commands import repro_launch
from nanopedia.commands.repro_launch import RUN

SAME = {
    "names": "import sys\nprint(__name__, __file__, sys.argv, sys.path[0])\n",
    "traceback": "def f():\n    raise ValueError('boom')\nf()\n",
    "syntax error": "x = (\n",
    "exit message": "import sys\nsys.exit('bye')\n",
    "exit code": "import sys\nsys.exit(3)\n",
    "exit None": "import sys\nsys.exit(None)\n",
    "exit code wraps": "import sys\nsys.exit(300)\n",
    "exit -1": "import sys\nsys.exit(-1)\n",
    "interrupt": "raise KeyboardInterrupt\n",
    "threads and atexit": (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "print('main done', flush=True)\n"
    ),
    "unflushed output": "import sys\nsys.stdout.write('no newline, no flush')\n",
    "pickle of a __main__ class": (
        "import pickle\nclass A: pass\nprint(type(pickle.loads(pickle.dumps(A()))).__name__)\n"
    ),
    "warning from __main__": "import warnings\nwarnings.warn('old', DeprecationWarning)\n",
    "script's own names": "path = 1\nstatus = 'mine'\nprint(path, status)\n",
}

#: An object whose destructor aborts once Python clears the modules at exit: the shape of the
#: gloo race (C++ objects destroyed at exit) with no torch.
TEARDOWN_ABORT = (
    "import os, sys\n"
    "class Bomb:\n"
    "    def __del__(self):\n"
    "        os.abort()\n"
    "sys.modules['bomb'] = Bomb()\n"
    "print('steps done')\n"
)


def _run(tmp_path: Path, script: str, argv: list[str]) -> tuple[int, str]:
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
    )
    return done.returncode, done.stdout.decode()


@pytest.mark.parametrize("script", SAME.values(), ids=SAME.keys())
def test_a_script_reads_and_ends_as_under_python_script_py(tmp_path: Path, script: str) -> None:
    expected = _run(tmp_path, script, ["script.py"])
    assert _run(tmp_path, script, ["-c", RUN]) == expected


def test_a_crash_in_the_interpreters_teardown_does_not_fail_the_rank(tmp_path: Path) -> None:
    assert _run(tmp_path, TEARDOWN_ABORT, ["script.py"])[0] != 0  # the race, as Python has it
    assert _run(tmp_path, TEARDOWN_ABORT, ["-c", RUN]) == (0, "steps done\n")


def test_an_exception_still_fails_the_rank_and_shows_only_the_scripts_frames(
    tmp_path: Path,
) -> None:
    code, output = _run(tmp_path, "raise RuntimeError('gloo')\n", ["-c", RUN])
    assert code == 1
    assert output.splitlines() == [
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "script.py"}", line 1, in <module>',
        "    raise RuntimeError('gloo')",
        "RuntimeError: gloo",
    ]


# The launcher's own steps, in this process (a mutation test sees only what runs here): the
# ranks it starts are real processes.


@pytest.fixture
def start() -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    """Starts `sh -c SCRIPT` as a rank (a session of its own); whatever `wait` leaves (a bug
    that returns early) is killed and reaped after the test, so no rank outlives it."""
    started: list[subprocess.Popen[bytes]] = []

    def rank(script: str) -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen(["sh", "-c", script], start_new_session=True))
        return started[-1]

    yield rank
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_ranks_that_succeed_are_waited_for_in_the_order_they_end(start) -> None:
    began = time.monotonic()
    procs = [start("sleep 0.3; exit 0"), start("exit 0")]
    assert repro_launch.wait(procs, time.monotonic() + 30, grace=5) == [0, 0]
    assert time.monotonic() - began >= 0.3  # a rank that ends well stops nobody


def test_once_a_rank_fails_the_others_get_sigterm_within_a_fraction_of_a_second(start) -> None:
    procs = [start("sleep 30"), start("exit 3")]
    began = time.monotonic()
    assert repro_launch.wait(procs, time.monotonic() + 30, grace=5) == [3, -signal.SIGTERM]
    assert time.monotonic() - began < 0.9  # polled often, not once a second


def test_a_rank_that_ignores_sigterm_is_killed_after_the_grace_period(start) -> None:
    procs = [start("trap '' TERM; sleep 30"), start("sleep 0.1; exit 3")]
    began = time.monotonic()
    codes = repro_launch.wait(procs, time.monotonic() + 30, grace=0.5)
    took = time.monotonic() - began
    assert codes == [3, -signal.SIGKILL]
    assert 0.5 <= took < 5


def test_ranks_still_running_at_the_deadline_have_no_code(start) -> None:
    procs = [start("sleep 30"), start("sleep 30")]
    began = time.monotonic()
    assert repro_launch.wait(procs, time.monotonic() + 0.3, grace=5) == [None, None]
    assert 0.3 <= time.monotonic() - began < 5


def test_the_deadline_cuts_the_grace_period_short(start) -> None:
    procs = [start("trap '' TERM; sleep 30"), start("exit 3")]
    began = time.monotonic()
    assert repro_launch.wait(procs, time.monotonic() + 0.3, grace=20) == [3, None]
    assert time.monotonic() - began < 5


def test_a_ranks_own_children_die_with_its_session(tmp_path: Path, start) -> None:
    pid_file = tmp_path / "child"
    procs = [start(f"sleep 30 & echo $! > {pid_file}; exit 0")]
    assert repro_launch.wait(procs, time.monotonic() + 30, grace=5) == [0]
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def test_signalling_a_rank_already_gone_or_not_ours_is_no_error(start, monkeypatch) -> None:
    done = start("exit 0")
    done.wait()
    repro_launch._signal(done, signal.SIGKILL)  # its session is gone: ProcessLookupError

    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(pid)

    monkeypatch.setattr(os, "killpg", refuse)
    repro_launch._signal(done, signal.SIGKILL)


@pytest.mark.parametrize(
    ("hard", "asked", "set_to"),
    [
        (resource.RLIM_INFINITY, 100, 100),  # no ceiling: the asked value
        (50, 100, 50),  # the caller's ceiling is lower: kept
        (500, 100, 100),
    ],
)
def test_a_limit_is_only_ever_lowered(monkeypatch, hard: int, asked: int, set_to: int) -> None:
    calls = []
    monkeypatch.setattr(resource, "getrlimit", {resource.RLIMIT_CPU: (hard, hard)}.get)
    monkeypatch.setattr(resource, "setrlimit", lambda which, pair: calls.append((which, pair)))
    repro_launch._lower(resource.RLIMIT_CPU, asked)
    assert calls == [(resource.RLIMIT_CPU, (set_to, set_to))]


def test_main_writes_the_script_starts_each_rank_on_its_pipe_and_prints_the_codes(
    tmp_path: Path, monkeypatch, capsys, request
) -> None:
    lowered = []
    monkeypatch.setattr(repro_launch, "_lower", lambda which, value: lowered.append((which, value)))
    script = (
        b"import os, sys, time\n"
        b"rank = int(os.environ['RANK'])\n"
        b"print('rank', rank, os.environ['LOCAL_RANK'], os.environ['SEEN'], flush=True)\n"
        b"print('own session', os.getsid(0) == os.getpid(), file=sys.stderr, flush=True)\n"
        b"print('stdin', repr(sys.stdin.read()), flush=True)\n"
        b"def is_open(fd):\n"
        b"    try:\n"
        b"        return bool(os.fstat(fd))\n"
        b"    except OSError:\n"
        b"        return False\n"
        b"print('pipes', sum(is_open(int(fd)) for fd in os.environ['PIPES'].split()), flush=True)\n"
        b"time.sleep(30 if rank == 0 else 0.3)  # rank 1 fails; rank 0 is stopped\n"
        b"sys.exit(4)\n"
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(script)))
    monkeypatch.chdir(tmp_path)
    # What this process's own standard input holds must not reach a rank.
    r, w = os.pipe()
    os.write(w, b"not for the ranks")
    os.close(w)
    saved = os.dup(0)
    os.dup2(r, 0)
    os.close(r)
    request.addfinalizer(lambda: (os.dup2(saved, 0), os.close(saved)))
    pipes = [os.pipe() for _ in range(2)]
    for _, w in pipes:  # as verify's pass_fds hands them to the launcher: one rank gets each
        os.set_inheritable(w, True)
    settings = {
        "fds": [w for _, w in pipes],
        "env": {
            "PATH": os.environ["PATH"],
            "SEEN": "yes",
            "PIPES": " ".join(str(w) for _, w in pipes),
        },
        "timeout": 30,
        "grace": 5,
        "limits": {"cpu_seconds": 60, "file_bytes": 1 << 20},
    }
    assert repro_launch.main(settings) == 0
    for _, w in pipes:  # the launcher closed its copy of each rank's write end
        with pytest.raises(OSError):
            os.fstat(w)
    outputs = []
    for r, _ in pipes:
        with os.fdopen(r, "rb") as f:
            outputs.append(f.read().decode())
    assert outputs == [
        f"rank {rank} {rank} yes\nown session True\nstdin ''\npipes 0\n" for rank in (0, 1)
    ]
    assert (tmp_path / "script.py").read_bytes() == script
    assert capsys.readouterr().out == '{"codes": [4, -15]}\n'
    assert lowered == [(resource.RLIMIT_CPU, 60), (resource.RLIMIT_FSIZE, 1 << 20)]
