"""The launcher of one repro script: the only process `verify` starts for it (inside the sandbox).

It is run as `python -I -c <this file's text> <settings>` by the repro environment's interpreter,
so it imports nothing but the standard library and nothing of nanopedia. It writes the script
(read from stdin) into its working directory, lowers its own resource limits (inherited by every
rank and every child), starts the ranks with the torchrun variables, each with its stdout and
stderr on its own pipe back to `verify`, and waits for them as torchrun does: once one rank
fails the others get SIGTERM, then SIGKILL after the grace period; at the deadline every rank
still running is killed. It prints the exit codes, one JSON object, on its own stdout.

Each rank runs the script under `RUN`, which ends the process as Python would once the script
returns, but without the interpreter's own teardown: a repro checks what the script did, and two
gloo ranks at times abort while C++ objects are destroyed at exit ("terminate called without an
active exception", a race `native-abort-sigabrt` describes), whatever the script did.

Inside the sandbox the launcher is the first process of a PID namespace: when it exits, the
kernel kills every process a repro started, whatever session or group it moved to. Without the
sandbox (`--no-sandbox`) only the ranks' sessions are killed.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from typing import Any

#: Which settings key holds which limit (the values are set by `sandbox.Limits`).
RLIMITS = {
    "cpu_seconds": resource.RLIMIT_CPU,
    "memory_bytes": resource.RLIMIT_DATA,
    "file_bytes": resource.RLIMIT_FSIZE,
    "processes": resource.RLIMIT_NPROC,
    "core_bytes": resource.RLIMIT_CORE,
}

#: The program each rank runs (`python -c RUN`): the script as `__main__`, as `python script.py`
#: runs it, then what Python does before it finalises (wait for non-daemon threads, run the
#: atexit handlers, flush stdio) and `os._exit` with the status Python would give. The traceback
#: of an uncaught exception starts at the script, as it would without this program.
RUN = """
import atexit, os, signal, sys, threading, types
path = os.path.abspath("script.py")
sys.argv[:] = ["script.py"]
sys.path[0] = os.path.dirname(path)
main = sys.modules["__main__"] = types.ModuleType("__main__")
main.__file__ = path
try:
    with open(path, "rb") as f:
        exec(compile(f.read(), path, "exec"), main.__dict__)
    status = 0
except SystemExit as stop:
    status = 0 if stop.code is None else stop.code
    if not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
except BaseException as error:
    error.__traceback__ = error.__traceback__.tb_next  # this program's own frame
    sys.excepthook(type(error), error, error.__traceback__)
    status = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
for thread in threading.enumerate():
    if not thread.daemon and thread is not threading.main_thread():
        thread.join()
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
if status == -signal.SIGINT:  # as Python does: die of the signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
os._exit(status & 0xFF)
"""


def main(settings: dict[str, Any]) -> int:
    script = sys.stdin.buffer.read()
    with open("script.py", "wb") as f:
        f.write(script)
    for key, value in settings["limits"].items():
        _lower(RLIMITS[key], int(value))
    env = settings["env"]
    deadline = time.monotonic() + float(settings["timeout"])
    procs = []
    for rank, fd in enumerate(settings["fds"]):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RUN],
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                start_new_session=True,
                close_fds=True,
                env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            )
        )
        os.close(fd)
    codes = wait(procs, deadline, float(settings["grace"]))
    print(json.dumps({"codes": codes}), flush=True)
    return 0


def _lower(which: int, value: int) -> None:
    """Lower a limit (never raise it: the caller's own may be lower still)."""
    soft, hard = resource.getrlimit(which)
    capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (capped, capped))


def wait(procs: list[subprocess.Popen[bytes]], deadline: float, grace: float) -> list[int | None]:
    """Exit codes in the order the ranks ended, or None for a rank still running at `deadline`.

    As torchrun does, once one rank fails the others are stopped (SIGTERM, then SIGKILL after
    `grace` seconds) instead of waiting in a collective for a peer that is gone. Every rank's
    session is killed at the end."""
    codes: list[int | None] = []
    running = list(procs)
    stop_at: float | None = None
    while running:
        now = time.monotonic()
        for proc in [p for p in running if p.poll() is not None]:
            running.remove(proc)
            codes.append(proc.returncode)
            if proc.returncode != 0 and stop_at is None and running:
                stop_at = now + grace
                for other in running:
                    _signal(other, signal.SIGTERM)
        if running and (now >= deadline or (stop_at is not None and now >= stop_at)):
            if stop_at is None or now >= deadline:
                codes += [None] * len(running)
            else:
                codes += [-signal.SIGKILL] * len(running)
            break
        time.sleep(0.02)
    for proc in procs:
        _signal(proc, signal.SIGKILL)
        proc.wait()
    return codes


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
