"""`nanopedia run -- COMMAND ...`: run a training command and, when it fails, say why at its end.

The command's stdout and stderr each come back on a pipe of their own and go out unchanged to
ours, chunk by chunk as they are read (no pty: the bytes are the command's own, but a program
that buffers differently when its output is not a terminal does so here too; Python is told not
to, below). A reader thread per stream also keeps its bounded tail (`diagnosis/tails.py`).

Before starting it, the wrapper switches on what makes a failure speak, each only where the user
has not set it (`SWITCHES`; `--no-env` sets none): torchrun's log folder (its `--log-dir`, read
from `PET_LOG_DIR`, holds each rank's `attempt_N/<rank>/error.json`), the error file of
torchelastic's `@record` (`TORCHELASTIC_ERROR_FILE`: a script's own, or torchrun's copy of the
first failure's), the Flight Recorder (`TORCH_FR_BUFFER_SIZE`, 2000 entries as torch's own
default; NCCL dumps it on a watchdog timeout, `TORCH_NCCL_DUMP_ON_TIMEOUT`, into
`TORCH_FR_DUMP_TEMP_FILE`), and unbuffered Python output (`PYTHONUNBUFFERED`). They all point into
one folder, `nanopedia-run-XXXX` beside the verdict JSON, removed when the command succeeds.

The command runs in a process group of its own; SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2
sent to the wrapper go to that group, so a Ctrl-C or a scheduler's SIGTERM reaches torchrun and
its ranks once. When the command exits non-zero the wrapper diagnoses the kept tail together with
the torchelastic error files and Flight Recorder dumps the run left in its folder (the same
engine, readers and report as `diagnose` given the output and that folder: the error files'
timestamps decide the first failure, the dumps name the rank behind), prints the verdict at the
end of stderr, writes the JSON (`--json`, default `nanopedia-verdict.json`), and exits with the
command's code: 128 + N when signal N killed it, as a shell says.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import IO, Any

from nanopedia.diagnosis.tails import StreamTail, Tails
from nanopedia.errors import fail

#: Signals passed on to the command's process group.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
#: Bytes read from a pipe at once, and the size asked of each pipe (Linux; fewer switches
#: between the command and the readers than the default 64 KiB).
CHUNK = 1 << 20
#: Seconds the readers may go on after the command exited (a child it left behind may hold its
#: pipes open): then the verdict is given without them.
DRAIN_SECONDS = 5.0
#: Candidates shown in the printed verdict.
TOP = 3
#: The name the kept output is diagnosed under (its evidence lines cite it as their file).
OUTPUT_NAME = "<output>"


def switches(folder: Path) -> dict[str, str]:
    """The variables the wrapper sets where they are unset, all pointing into `folder`."""
    return {
        "PET_LOG_DIR": str(folder / "torchelastic"),
        "TORCHELASTIC_ERROR_FILE": str(folder / "error.json"),
        "TORCH_FR_BUFFER_SIZE": "2000",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_FR_DUMP_TEMP_FILE": str(folder / "flight-recorder" / "rank_"),
        "PYTHONUNBUFFERED": "1",
    }


def exit_code(returncode: int) -> int:
    """A shell's exit status for a child's: 128 + N for a child killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def run_command(args: argparse.Namespace) -> int:
    argv = list(args.cmd)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        fail(
            "nanopedia run",
            "E050",
            "no command to run",
            "put it after '--': nanopedia run -- torchrun --nproc_per_node 2 train.py",
        )
    verdict_path = Path(args.json)
    if not verdict_path.parent.is_dir():
        fail(
            str(verdict_path),
            "E050",
            "the folder for the verdict JSON does not exist",
            "create it, or pass --json PATH in an existing folder",
        )
    env = dict(os.environ)
    folder: Path | None = None
    set_here: list[str] = []
    if not args.no_env:
        folder = Path(tempfile.mkdtemp(prefix="nanopedia-run-", dir=verdict_path.parent))
        (folder / "flight-recorder").mkdir()
        for key, value in switches(folder.resolve()).items():
            if key not in env:
                env[key] = value
                set_here.append(key)
    tails = Tails()
    code, how = _run(argv, env, tails)
    if code == 0:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        return 0
    kept = _evidence(folder)
    try:
        _verdict(
            argv, code, how, tails, verdict_path, folder if kept else None, kept, set_here, args
        )
    except Exception as err:  # the command's exit code matters more than our verdict
        print(
            f"nanopedia: the command {how}; no verdict: {type(err).__name__}: {err}",
            file=sys.stderr,
        )
    return code


def _run(argv: list[str], env: dict[str, str], tails: Tails) -> tuple[int, str]:
    """Run the command with its output pumped through; its exit code and how it ended."""
    child: list[int] = []
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if not child:
            pending.append(signum)  # before the command started: sent once it has
            return
        try:
            os.killpg(child[0], signum)
        except ProcessLookupError:
            pass

    before = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        try:
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, process_group=0
            )
        except OSError as err:
            print(f"nanopedia: cannot run {argv[0]!r}: {err.strerror or err}", file=sys.stderr)
            return (127 if isinstance(err, FileNotFoundError) else 126), "not started"
        child.append(proc.pid)
        for signum in pending:
            forward(signum, None)
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            threading.Thread(
                target=_pump,
                args=(pipe, out, tails.streams[name]),
                daemon=True,
                name=f"nanopedia-run-{name}",
            )
            for pipe, out, name in ((proc.stdout, 1, "stdout"), (proc.stderr, 2, "stderr"))
        ]
        for reader in readers:
            reader.start()
        returncode = proc.wait()
        for reader in readers:
            reader.join(DRAIN_SECONDS)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    code = exit_code(returncode)
    if returncode < 0:
        return code, f"was killed by {signal.Signals(-returncode).name}"
    return code, f"exited with {code}"


def _pump(pipe: IO[bytes], out: int, tail: StreamTail) -> None:
    """Copy a pipe to our file descriptor `out` as bytes arrive, keeping its tail. A reader of
    ours that went away (`| head`) stops the copying, never the reading: the command runs on.

    The bytes are read into one buffer, reused: a fresh `os.read` buffer for every read put
    each byte of the output on a page the kernel had to map (most of the wrapper's time)."""
    fd = pipe.fileno()
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK)
    except (ImportError, AttributeError, OSError):
        pass  # another system, or above /proc/sys/fs/pipe-max-size: the default size then
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    writing = True
    while size := os.readv(fd, [buffer]):
        if writing:
            try:
                left = view[:size]
                while left:
                    left = left[os.write(out, left) :]
            except OSError:
                writing = False
        tail.feed(bytes(view[:size]))
    pipe.close()


def _evidence(folder: Path | None) -> list[str]:
    """The files the run left in the wrapper's folder (error files, dumps, rank logs), by path;
    the folder is removed when it holds none."""
    if folder is None:
        return []
    found = sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.stat().st_size)
    if not found:
        shutil.rmtree(folder, ignore_errors=True)
    return found


def _verdict(
    argv: list[str],
    code: int,
    how: str,
    tails: Tails,
    path: Path,
    folder: Path | None,
    kept: list[str],
    set_here: list[str],
    args: argparse.Namespace,
) -> None:
    """Diagnose the kept output with the error files and dumps the run left in the folder,
    print the verdict at the end of stderr, write the JSON."""
    from nanopedia.commands.log_cli import _config_base_url
    from nanopedia.diagnosis import readers, result, text_report
    from nanopedia.diagnosis.triage import load_entries
    from nanopedia.incremental.catalogue import user_store

    data = tails.merged()
    # Every file of the folder is looked at (the automatic dumps are named `rank_<N>`); its
    # logs (torchrun's --redirects) are listed, not read: the output kept holds what was shown.
    _, found = readers.gather([str(folder)], every_file=True) if folder else ([], readers.Found())
    usable, skipped = load_entries(args.entries, user_store())
    base_url = args.base_url or _config_base_url()
    res = result.from_texts([(OUTPUT_NAME, data)], usable, base_url, skipped, found=found)
    out: dict[str, Any] = res.as_json()
    out["run"] = {
        "command": argv,
        "exit_code": code,
        "ended": how,
        "output_bytes": {n: s.total for n, s in tails.streams.items()},
        "kept_bytes": len(data),
        "environment_set": sorted(set_here),
        "evidence_folder": str(folder) if folder else None,
        "evidence_files": kept,
        "evidence_unread": [
            {"file": e.name, "message": e.message, "hint": e.hint} for e in found.problems
        ],
    }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(
        json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    os.replace(temporary, path)
    read = [
        _count(len(found.errors), "torchelastic error file"),
        _count(len(found.dumps), "Flight Recorder dump"),
    ]
    shown = f"the last {len(data):,} bytes of its output" + "".join(f" and {r}" for r in read if r)
    lines = ["", f"nanopedia: the command {how}; the verdict on {shown}:"]
    lines.append(res.as_text(TOP, text_report.columns()))
    for e in found.problems:
        lines.append(f"nanopedia: not read: {e.name}: {e.message}")
        if e.hint:
            lines.append(f"  hint: {e.hint}")
    if folder:
        lines.append(f"nanopedia: what the run left (error files, Flight Recorder dumps): {folder}")
    lines.append(f"nanopedia: verdict JSON: {path}")
    sys.stdout.flush()
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


def _count(n: int, what: str) -> str:
    """`2 torchelastic error files`; empty for none."""
    return f"{n} {what}{'s' * (n != 1)}" if n else ""
