"""The sandbox every repro script runs in: Debian's bubblewrap (`bwrap`) around the launcher.

Repros come from pull requests: strangers' code. Inside the sandbox a script sees

- the whole file system read-only, with the caller's home, `/root` and `/run` (agent and
  docker sockets) replaced by empty folders and `/tmp` by its own, except the interpreter's
  own folders (mounted again where they lie in one of those: pyenv in a home, a checkout's
  venv in `/tmp`);
- a private, size-capped `/tmp` as its working directory and home: with `/dev/shm`, the only
  place it can write;
- new PID, network, IPC and UTS namespaces: only its own processes, and only a loopback
  interface (two ranks in one sandbox still meet on 127.0.0.1; nothing outside is reachable);
- an allow-listed environment (no secret of the caller) and resource limits (`Limits`);
- the unprivileged user 65534, with no capabilities and no new privileges.

As root (CI) the user namespace is *not* unshared: bwrap would map the sandbox's user onto root
outside, which the kernel exempts from the process limit and which reads root's files. Instead
bwrap sets up the mounts as root and `setpriv` drops to the real user 65534 before the launcher
runs. As anyone else bwrap unshares the user namespace and maps them onto 65534.

When the launcher (the PID namespace's first process) exits, or `verify` dies, every process in
the sandbox is killed (`--die-with-parent`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

#: The user (and group) scripts run as: `nobody`.
NOBODY = 65534
#: Bytes the sandbox's `/tmp` (the script's working directory and home) may hold; its `/dev/shm`
#: (DataLoader workers pass batches there) may hold as much again. Both are memory.
TMP_BYTES = 512 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of every process a script starts (setrlimit, inherited)."""

    cpu_seconds: int
    """CPU time of one process (RLIMIT_CPU); the wall clock is `--timeout`."""
    memory_bytes: int
    """Data segment and private mappings of one process (RLIMIT_DATA). Not the address space
    (RLIMIT_AS): torch reserves far more than it uses."""
    file_bytes: int
    """The largest file a process may write (RLIMIT_FSIZE)."""
    processes: int
    """Processes and threads of the sandbox's user (RLIMIT_NPROC): a fork bomb stops there."""
    core_bytes: int = 0
    """No core dumps."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def limits_for(timeout: float) -> Limits:
    """The limits of a script run under `timeout` seconds (CPU time: two busy threads for the
    whole timeout, plus a start)."""
    return Limits(
        cpu_seconds=int(2 * timeout) + 30,
        memory_bytes=8 << 30,
        file_bytes=256 << 20,
        processes=1024,
    )


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The tools the sandbox needs, found on PATH."""

    bwrap: str
    setpriv: str | None
    """`setpriv`, used only as root (to drop to `NOBODY`)."""


def find() -> Sandbox | None:
    """bwrap (and setpriv when running as root) on PATH, or None when one is missing."""
    bwrap = shutil.which("bwrap")
    setpriv = shutil.which("setpriv")
    if bwrap is None or (os.geteuid() == 0 and setpriv is None):
        return None
    return Sandbox(bwrap, setpriv)


MISSING_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; it brings bwrap), "
    "or, only for repros you trust (your own, or a reviewed pull request's), "
    "pass --no-sandbox"
)


def hidden_dirs() -> list[str]:
    """Folders replaced by empty ones: where the caller keeps secrets and sockets."""
    return sorted({str(Path.home()), "/root", "/run"} - {"/"})  # a HOME of / hides nothing


def kept_dirs(python: str) -> list[str]:
    """The interpreter's folders, mounted again when they lie in a hidden folder."""
    exe = Path(python).absolute()
    found = {exe.parent.parent, Path(os.path.realpath(exe)).parent.parent}
    if os.path.realpath(exe) == os.path.realpath(sys.executable):
        found |= {Path(sys.prefix), Path(sys.base_prefix)}
    return sorted(str(p) for p in found)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def command(box: Sandbox, inner: Sequence[str], python: str) -> list[str]:
    """The command line that runs `inner` in the sandbox, in its `/tmp`."""
    root = os.geteuid() == 0
    args = [box.bwrap, "--die-with-parent", "--new-session"]
    if root:
        args += [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
    else:
        args += [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid",
            str(NOBODY),
            "--gid",
            str(NOBODY),
        ]
    args += [
        "--hostname",
        "localhost",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        "/dev/shm",
        "--proc",
        "/proc",
    ]
    hidden = hidden_dirs()
    for folder in hidden:
        if os.path.isdir(folder):
            args += ["--tmpfs", folder]
    # The script's own /tmp before the interpreter's folders, which may lie in the caller's
    # /tmp (a checkout with its venv there) and are mounted again on top of it.
    args += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    made: set[str] = set()
    for folder in kept_dirs(python):
        top = next((h for h in [*hidden, "/tmp"] if _under(folder, h)), None)
        if top is None or not os.path.isdir(folder):
            continue
        # the folders between the empty one and the kept one, traversable by the sandbox's user
        for parent in reversed(Path(folder).parents):
            step = str(parent)
            if _under(step, top) and step != top and step not in made:
                made.add(step)
                args += ["--perms", "0755", "--dir", step]
        args += ["--ro-bind", folder, folder]
    args += ["--chdir", "/tmp", "--"]
    if root and box.setpriv:
        args += [
            box.setpriv,
            "--reuid",
            str(NOBODY),
            "--regid",
            str(NOBODY),
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]
    return args + list(inner)


def probe(box: Sandbox, python: str, env: dict[str, str]) -> str | None:
    """Why the sandbox cannot run `python` here (bwrap's own words), or None when it can."""
    try:
        done = subprocess.run(
            command(box, [python, "-I", "-c", "pass"], python),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", errors="replace").strip()
    return text.splitlines()[-1] if text else f"bwrap exited {done.returncode}"
