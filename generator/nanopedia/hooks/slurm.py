"""Slurm's Epilog: the verdict on a batch job, written next to its output when the job ends.

slurmd runs the `Epilog` of slurm.conf as root on every node of a job once the job has ended,
with the job described in its environment. `contrib/slurm/epilog.sh` runs this module there
(`python -m nanopedia.hooks.slurm`). On the job's first node (where the batch script ran) it
finds the job's output from `SLURM_JOB_STDOUT` and `SLURM_JOB_STDERR` (Slurm 22.05 and later:
the `--output`/`--error` pattern as given, which it expands as slurmstepd does; unset, the
default `slurm-<jobid>.out` in `SLURM_JOB_WORK_DIR`), switches to the job's user before it opens
any file, diagnoses the output and writes `<output>.nanopedia.txt` beside it.

It writes when a known failure matched: a job whose exit status says it failed
(`SLURM_JOB_EXIT_CODE2` is not `0:0`) gets any verdict, one that exited 0 a verdict that is not
of the benign kind. Slurm hands the Epilog `0:0` for a batch job ended by `scancel`, by its time
limit or by preemption (seen on 22.05.8), so the output, not the exit status, has the last word.
Nothing is written for a healthy job, on the other nodes, or where the output cannot be found:
a job array's default name needs array ids the Epilog is not given.

An Epilog that fails sets the node to DRAIN, so this never fails: every problem is one line on
stderr (slurmd's log) and exit status 0, within `TIMEOUT` seconds.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import socket
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from nanopedia.diagnosis import result
from nanopedia.diagnosis.catalogue import EntryView

#: Seconds the whole Epilog may take (the node stays COMPLETING meanwhile).
TIMEOUT = 60
#: Candidates in the written verdict.
TOP = 3
#: Appended to the output's path to name the verdict file.
SUFFIX = ".nanopedia.txt"
#: `%[width]X` of an output pattern (`sbatch --output`, "filename pattern").
FIELD = re.compile(r"%(\d*)([%AaJjNnstux])")


@dataclass(frozen=True, slots=True)
class Job:
    """What slurmd tells an Epilog about the job that ended (`prep_script_slurmd.c`)."""

    id: int
    """`SLURM_JOB_ID`."""
    uid: int
    """`SLURM_JOB_UID`: whose files the output are, and who the diagnosis runs as."""
    gid: int
    """`SLURM_JOB_GID`."""
    user: str
    """`SLURM_JOB_USER` (`%u`)."""
    node: str
    """`SLURMD_NODENAME`: the node this Epilog runs on."""
    nodes: str
    """`SLURM_JOB_NODELIST` or `SLURM_NODELIST`: the allocation, a Slurm hostlist."""
    work_dir: str
    """`SLURM_JOB_WORK_DIR`: where relative output patterns start."""
    stdout: str | None
    """`SLURM_JOB_STDOUT`: the `--output` pattern; None: Slurm's default."""
    stderr: str | None
    """`SLURM_JOB_STDERR`: the `--error` pattern; None: into the output."""
    exit_code: str
    """`SLURM_JOB_EXIT_CODE2`, `<exit>:<signal>` of the batch script."""


class Skip(Exception):
    """Why this Epilog does nothing for the job (one line for slurmd's log)."""


class Timeout(BaseException):
    """TIMEOUT passed (a BaseException, so no `except Exception` on the way swallows it)."""


def job_from_env(env: Mapping[str, str]) -> Job:
    """The job of an Epilog's environment."""
    try:
        return Job(
            id=int(env["SLURM_JOB_ID"]),
            uid=int(env["SLURM_JOB_UID"]),
            gid=int(env["SLURM_JOB_GID"]),
            user=env.get("SLURM_JOB_USER", ""),
            node=env["SLURMD_NODENAME"],
            nodes=env.get("SLURM_JOB_NODELIST") or env["SLURM_NODELIST"],
            work_dir=env.get("SLURM_JOB_WORK_DIR", ""),
            stdout=env.get("SLURM_JOB_STDOUT") or None,
            stderr=env.get("SLURM_JOB_STDERR") or None,
            exit_code=env.get("SLURM_JOB_EXIT_CODE2", ""),
        )
    except KeyError as err:
        raise Skip(f"not run as a Slurm Epilog: {err.args[0]} is not set") from None
    except ValueError as err:
        raise Skip(f"not run as a Slurm Epilog: {err}") from None


def first_node(hostlist: str) -> str:
    """The first host of a Slurm hostlist (`gpu[003-004,9],cpu1` gives `gpu003`): the node
    where a batch script runs."""
    head = re.match(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", hostlist)
    name = head.group(0) if head else hostlist
    return re.sub(r"\[([^\]\-,]*)[^\]]*\]", r"\1", name)


def failed(job: Job) -> bool:
    """Whether the batch script's exit status says it failed."""
    return job.exit_code not in ("", "0:0")


def expand(pattern: str, job: Job, host: str) -> str:
    """The file name slurmstepd makes of an output pattern for the batch step
    (`src/slurmd/common/fname.c`), as a glob: the job name (`%x`) and array ids (`%A`, `%a`),
    which an Epilog is not given, become `*`; glob characters of the rest are escaped."""
    if "\\" in pattern:  # Slurm expands nothing then, and only drops the backslashes
        name = pattern.replace("\\", "")
        return glob.escape(name if name.startswith("/") else os.path.join(job.work_dir, name))
    known = {
        "%": "%",
        "j": str(job.id),
        "J": str(job.id),
        "N": host,
        "n": "0",
        "t": "0",
        "s": "batch",
        "u": job.user,
    }
    out = []
    last = 0
    for field in FIELD.finditer(pattern):
        out.append(glob.escape(pattern[last : field.start()]))
        width, letter = field.groups()
        value = known.get(letter)
        if value is None:
            out.append("*")
        elif letter in "jJnt":
            out.append(value.zfill(min(int(width or 0), 10)))
        else:
            out.append(glob.escape(value))
        last = field.end()
    out.append(glob.escape(pattern[last:]))
    name = "".join(out)
    return name if name.startswith("/") else os.path.join(glob.escape(job.work_dir), name)


def output_files(job: Job, host: str) -> list[str]:
    """The job's output file, then its error file when it has its own; regular files only."""
    patterns = [job.stdout or f"slurm-{job.id}.out"]
    if job.stderr and job.stderr != job.stdout:
        patterns.append(job.stderr)
    files = []
    for pattern in patterns:
        found = sorted(glob.glob(expand(pattern, job, host)))
        if len(found) != 1:
            kind = "no file" if not found else f"{len(found)} files"
            raise Skip(f"{kind} for the output pattern {pattern!r}")
        try:
            mode = os.stat(found[0]).st_mode
        except OSError as err:
            raise Skip(f"{found[0]}: {err.strerror}") from None
        if not stat.S_ISREG(mode):
            raise Skip(f"{found[0]} is not a regular file")
        files.append(found[0])
    return files


def become(job: Job) -> None:
    """Switch this process to the job's user for good, so that every file is read and written
    with the user's rights (a link the user planted cannot make root write elsewhere)."""
    if os.geteuid() == job.uid and os.getegid() == job.gid:
        return
    if os.geteuid() != 0:
        raise Skip(f"runs as uid {os.geteuid()}, not as root: cannot act as uid {job.uid}")
    try:
        os.initgroups(job.user, job.gid)
    except (OSError, KeyError):
        os.setgroups([])
    os.setgid(job.gid)
    os.setuid(job.uid)


def load_entries() -> list[EntryView]:
    """The catalogue's entries, loaded while this process can still read the install (the
    job's user may not: an interpreter under /root), with the one module a diagnosis imports
    late (numpy, when `diagnosis/logs.py` first counts lines)."""
    import numpy  # noqa: F401

    from nanopedia.diagnosis import catalogue
    from nanopedia.incremental.catalogue import user_store
    from nanopedia.theme_dir import locate_entries

    return list(catalogue.load(locate_entries(), user_store()).entries)


def verdict(job: Job, files: list[str], entries: list[EntryView]) -> str | None:
    """The text to write beside the output, or None when there is nothing to say."""
    found = result.from_paths(files, entries)
    if not found.matches or (found.confidence == "benign" and not failed(job)):
        return None
    return (
        f"nanopedia: job {job.id}, exit status {job.exit_code or 'unknown'} as Slurm reported "
        f"it; the verdict on {', '.join(files)}:\n{found.as_text(TOP)}\n"
    )


def write_beside(output: str, text: str) -> Path:
    """Write `text` to `<output>.nanopedia.txt`, whole or not at all, readable by whoever may
    read the output (it quotes the output's lines)."""
    target = Path(output + SUFFIX)
    scratch = target.with_name(f".{target.name}.{os.getpid()}")
    mode = stat.S_IMODE(os.stat(output).st_mode) & 0o666
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), mode)
            file.write(text)
        os.replace(scratch, target)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    return target


def run(env: Mapping[str, str], host: str) -> str:
    """Everything the Epilog does for one job; what it did, in one line."""
    job = job_from_env(env)
    try:
        if first_node(job.nodes) != job.node:
            raise Skip(f"the batch script ran on {first_node(job.nodes)}")
        entries = load_entries()
        become(job)
        files = output_files(job, host)
        text = verdict(job, files, entries)
        if text is None:
            return f"job {job.id}: no known failure in {', '.join(files)}"
        return f"job {job.id}: verdict written to {write_beside(files[0], text)}"
    except Skip as why:
        raise Skip(f"job {job.id}: {why}") from None


def _timeout(signum: int, frame: FrameType | None) -> None:
    raise Timeout


def main() -> int:
    """The Epilog: one line on stderr, and 0 whatever happened."""
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(TIMEOUT)
    try:
        said = run(os.environ, socket.gethostname().split(".")[0])
    except Skip as why:
        said = str(why)
    except Timeout:
        said = f"stopped after {TIMEOUT} s"
    except Exception as err:  # never drain a node over a diagnosis
        said = f"failed: {type(err).__name__}: {err}"
    finally:
        signal.alarm(0)
    print(f"nanopedia epilog: {said}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
