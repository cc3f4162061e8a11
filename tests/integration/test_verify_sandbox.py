"""`verify` runs strangers' repros: the sandbox holds against hostile ones (issue #38).

The hostile scripts in `tests/fixtures/hostile-repros/` come from the reliability review (turn 3,
cases V01-V17); each case here puts one into alpha-failure (its repro's broken script, or its code
example) in a copy of the fixture corpus, or runs a small hostile script, and checks what must not
happen: a secret seen, the network or the host's loopback reached, a file written outside the
scratch folder, a process left behind, a hang past the timeout, output filling the disk, an escape
sequence reaching the terminal, an imported module's code running inside verify. Commands that
could hang run in a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.commands import verify

HOSTILE = FIXTURES / "hostile-repros"
SECRET = "ghp_fake_secret_for_the_sandbox_test"

pytestmark = pytest.mark.usefixtures("bwrap")


def _checkout(tmp_path: Path, broken: str | None = None, example: str | None = None) -> Path:
    """A checkout holding the fixture corpus, alpha-failure's repro given `broken` as its broken
    script and its code example replaced by `example` (each a script's text)."""
    repo = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "corpus", repo / "entries")
    alpha = repo / "entries" / "alpha-failure.yaml"
    text = alpha.read_text()
    if broken is not None:
        start, end = text.index("    broken: |\n"), text.index("    fixed: |\n")
        text = text[:start] + "    broken: |\n" + textwrap.indent(broken, " " * 6) + text[end:]
    if example is not None:
        start = text.index("    code: |\n")
        end = text.index("    why:", start)
        text = text[:start] + "    code: |\n" + textwrap.indent(example, " " * 6) + text[end:]
    alpha.write_text(text)
    return repo


def _script(name: str) -> str:
    return (HOSTILE / f"{name}.script").read_text()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _verify(
    repo: Path, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`nanopedia verify ARGS` in `repo` as a subprocess, with a secret in its environment."""
    full = {**os.environ, "GITHUB_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "nanopedia", "verify", "--entries", "entries", *args],
        cwd=repo,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_hostile_repro_sees_no_secret_and_changes_nothing(tmp_path: Path) -> None:
    """V01, V03, V04: the review's hostile repro reads the secrets, writes into the checkout
    (found through /proc/<ppid>/cwd) and leaves a daemon; inside the sandbox it sees no secret,
    its writes stay in its /tmp, and HOME is untouched."""
    repo = _checkout(tmp_path, broken=_script("hostile"))
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    before, home_before = _snapshot(repo), _snapshot(home)
    ran = _verify(
        repo,
        "alpha-failure",
        "--format",
        "json",
        env={"HOME": str(home), "SSH_AUTH_SOCK": str(home / "agent")},
    )
    assert ran.returncode in (0, 1), ran.stderr
    report = json.loads(ran.stdout)
    broken = report["repros"][0]["broken"]["output_tail"]
    assert "secrets seen: []" in broken
    assert SECRET not in ran.stdout + ran.stderr
    time.sleep(0.5)  # the daemon, had it lived, writes a heartbeat every 0.1 s
    assert _snapshot(repo) == before
    assert _snapshot(home) == home_before


DAEMON = textwrap.dedent("""
    import os, subprocess, sys, time
    marker = sys.argv[1] if len(sys.argv) > 1 else "{marker}"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c",
                     "import time; time.sleep(120)  # {marker}"])
        os._exit(0)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # {marker}-pg"],
                     process_group=0)
    time.sleep(0.5)
    print("RuntimeError: expected scalar type BFloat16 but found Float", file=sys.stderr)
    sys.exit(1)
""")


def _alive(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_an_interpreter_under_tmp_runs_the_script() -> None:
    """A checkout cloned under /tmp with its venv in it: the sandbox's own /tmp hid the
    interpreter, and every repro failed with setpriv's 'No such file or directory'."""
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        python = Path(folder) / "clone" / ".venv" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.symlink_to(sys.executable)
        run = verify.run_script("print('ran in the sandbox')", python=str(python), timeout=30)
    assert run.code == 0 and "ran in the sandbox" in run.output, run.output


def test_no_process_outlives_the_run() -> None:
    """V05, V07: a setsid'd double-forked daemon and a child in its own process group die with
    the sandbox (a PID namespace), not only the ranks' process groups."""
    marker = f"nanopedia-daemon-{os.getpid()}-{time.monotonic_ns()}"
    run = verify.run_script(DAEMON.format(marker=marker), timeout=30)
    assert run.code == 1, run.output
    time.sleep(0.3)
    assert _alive(marker) == []


def test_no_network_not_even_the_hosts_loopback() -> None:
    """V02: a listener on the host's 127.0.0.1 is not reachable (the sandbox has a loopback of
    its own), nor is any other address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        outside = socket.gethostbyname(socket.gethostname())
        script = textwrap.dedent(f"""
            import socket
            for host in ("127.0.0.1", {outside!r}, "1.1.1.1"):
                try:
                    socket.create_connection((host, {port}), timeout=2).sendall(b"exfil")
                    print(host, "reached")
                except OSError as err:
                    print(host, "unreachable", type(err).__name__)
        """)
        run = verify.run_script(script, timeout=30)
        with pytest.raises(TimeoutError):
            server.accept()
    assert run.code == 0 and "reached" not in run.output.replace("unreachable", ""), run.output


def test_two_ranks_meet_on_the_sandboxs_loopback() -> None:
    """Both ranks run in one sandbox, so a rendezvous on MASTER_ADDR:MASTER_PORT still works."""
    script = textwrap.dedent("""
        import os, socket, time
        addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
        if os.environ["RANK"] == "0":
            with socket.create_server(addr) as srv:
                conn, _ = srv.accept()
                print("got", conn.recv(10).decode())
        else:
            for _ in range(100):
                try:
                    socket.create_connection(addr).sendall(b"hello")
                    break
                except OSError:
                    time.sleep(0.05)
    """)
    run = verify.run_script(script, ranks=2, timeout=30)
    assert run.code == 0 and "[default0]:got hello" in run.output.splitlines(), run.output


def test_scripts_run_unprivileged_under_limits() -> None:
    """V11: the user is 65534 (nobody), and CPU time, memory, file size and processes are
    limited; the environment is an allow-list."""
    script = textwrap.dedent("""
        import os, resource
        names = ("CPU", "DATA", "FSIZE", "NPROC", "CORE")
        print(os.getuid(), os.getgid(), os.getgroups())
        print({n: resource.getrlimit(getattr(resource, "RLIMIT_" + n))[0] for n in names})
        print(sorted(os.environ))
    """)
    run = verify.run_script(script, timeout=30)
    uid, limits, names = run.output.splitlines()
    assert uid == "65534 65534 [65534]" or uid == "65534 65534 []"
    got = eval(limits)  # noqa: S307 (our own script's dict of ints)
    assert all(0 <= v < 1 << 40 for v in got.values()), got
    assert got["CORE"] == 0 and got["NPROC"] <= 4096
    assert "GITHUB_TOKEN" not in names


def test_huge_output_is_capped_while_written(tmp_path: Path, monkeypatch) -> None:
    """V09: 200 MiB of output never reaches the disk: the pipe's reader keeps the last
    `OUTPUT_CAP` bytes. A file the script writes is capped by RLIMIT_FSIZE."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    script = textwrap.dedent("""
        import os, sys, time
        block = b"x" * (1 << 20)
        for _ in range(200):
            os.write(1, block)
        try:
            with open("big.bin", "wb") as f:
                for _ in range(400):
                    f.write(block)
        except OSError as err:
            print("\\nfile stopped:", type(err).__name__, flush=True)
        time.sleep(1)
        print("last line")
    """)
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            size = sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file())
            peak = max(peak, size)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run = verify.run_script(script, timeout=60)
    finally:
        done.set()
        watcher.join()
    assert peak < 1 << 20, peak
    assert len(run.output) <= verify.OUTPUT_CAP
    assert run.output.endswith("last line\n")
    assert "file stopped: OSError" in run.output or run.code == -25  # EFBIG or SIGXFSZ
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(
    "broken",
    [
        "import os, shutil, sys\nshutil.rmtree(os.getcwd(), ignore_errors=True)\nsys.exit(1)\n",
        "import os, sys\nos.mkfifo('rank0.out')\nos.mkfifo('script.out')\nsys.exit(1)\n",
    ],
)
def test_a_script_that_attacks_its_scratch_fails_cleanly(tmp_path: Path, broken: str) -> None:
    """V13: deleting the scratch folder is a plain FAIL, not an internal error."""
    repo = _checkout(tmp_path, broken=broken)
    ran = _verify(repo, "alpha-failure", "--timeout", "10", timeout=60)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "FAIL alpha-failure/float-input" in ran.stdout
    assert "internal error" not in ran.stderr and "Traceback" not in ran.stderr


def test_a_fifo_for_an_output_file_does_not_hang_verify(tmp_path: Path) -> None:
    """V14: the review's FIFO repro ends within its timeout with a clear FAIL."""
    repo = _checkout(tmp_path, broken=_script("fifo"))
    start = time.monotonic()
    ran = _verify(repo, "alpha-failure", "--timeout", "5", timeout=60)
    assert time.monotonic() - start < 40
    assert ran.returncode == 1 and "FAIL alpha-failure/float-input" in ran.stdout, ran.stderr


def test_escape_sequences_in_output_do_not_reach_the_terminal(tmp_path: Path) -> None:
    """V10: OSC title and clipboard writes and a screen clear are shown escaped."""
    payload = (
        r"print('\x1b]0;PWNED\x07\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x9b31m'); "
        "raise SystemExit(1)\n"
    )
    repo = _checkout(tmp_path, broken=payload)
    ran = _verify(repo, "alpha-failure", timeout=60)
    assert ran.returncode == 1 and "FAIL" in ran.stdout
    assert "\x1b" not in ran.stdout and "\x07" not in ran.stdout and "\x9b" not in ran.stdout
    assert "\\x1b]0;PWNED" in ran.stdout


def test_examples_are_checked_without_running_their_modules_here(tmp_path: Path) -> None:
    """V16, V17: `import this` prints nothing into `--format json`, and `import unittest.__main__`
    does not take verify over: it finishes and reports the example."""
    repo = _checkout(tmp_path, example="import this\n" + _script("import-side-effect"))
    ran = _verify(repo, "alpha-failure", "--format", "json", timeout=120)
    report = json.loads(ran.stdout)  # only JSON on stdout
    assert report["examples"]["checked"] == 1
    [problem] = report["examples"]["problems"]
    assert "cannot be checked" in problem["message"] and "SystemExit" in problem["message"]
    assert ran.returncode == 1


def test_without_bwrap_verify_refuses_unless_told(tmp_path: Path) -> None:
    """Without bubblewrap, verify stops with a clear message (exit 2); `--no-sandbox` is the
    explicit opt-out, for trusted repros."""
    repo = _checkout(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    ran = _verify(repo, "alpha-failure", env={"PATH": str(empty)}, timeout=60)
    assert ran.returncode == 2
    assert "bwrap is not installed" in ran.stderr and "--no-sandbox" in ran.stderr
    ran = _verify(repo, "alpha-failure", "--no-sandbox", env={"PATH": str(empty)}, timeout=60)
    assert ran.returncode == 0, ran.stdout + ran.stderr
