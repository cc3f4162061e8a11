"""Host attribution: the machine a job's first failure happened on (a bad GPU fails first again).

The first failure's host is, in this order: a host the initiating line names itself (NCCL's
`host:pid:tid [dev]` prefix, Open MPI's `[host:pid]`, a pdsh/DeepSpeed `host: ` prefix, SLURM's
`srun: error: host: task N`, `srun: error: Node failure on host`, `slurmstepd-host:` and
`*** JOB n ON host CANCELLED`, the host of a syslog or journal line such as the kernel's
`host kernel: NVRM: Xid (PCI:...)`); else the host torchrun's error summary gives for that rank
(its `host :` line above `rank : N`); else the host that the head of the same file (its first
`HEAD_BYTES`) names for that rank (NCCL's init lines); else the host the heads of the job's files
name for that rank; else the only host the head of the file names. Names ending like source files
(`train.py`) are never hosts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_H = r"[A-Za-z][\w.-]*"
#: Host rules on one line, strongest first (see the module docstring).
_LINE_HOSTS = [
    re.compile(p, re.ASCII)
    for p in (
        rf"\bsrun: error: ({_H}): task \d+",
        rf"\bslurmstepd-({_H}):",
        rf"\*\*\* (?:JOB|STEP) [\d.]+ ON ({_H}) CANCELLED",
        rf"\bsrun: error: Node failure on ({_H})",
        # syslog (`Dec  5 10:00:01 host kernel: ...`) and ISO journal lines
        # (`2026-12-05T10:00:01+00:00 host kernel: ...`): the host stands before the process
        # that wrote the line
        rf"^\s*(?:[A-Z][a-z]{{2}} +\d{{1,2}} \d\d:\d\d:\d\d|\d{{4}}-\d\d-\d\dT[\d:.,+-]+Z?) ({_H}) "
        r"[\w./-]+(?:\[\d+\])?: ",
        rf"(?<![\w.-])({_H}):\d+:\d+ \[\d+\]",
        rf"\[({_H}):\d+\]",
        rf"^\s*({_H}\d[\w.-]*): ",
    )
]
#: Host prefixes of a head's lines: NCCL's after an optional `[rankN]:` (or Open MPI
#: `[job,rank]<stdout>:`) prefix, and pdsh's at the start of a line before a bracket.
_HEAD_NCCL = re.compile(
    rf"\s*(?:\[[A-Za-z_]*?(\d{{1,6}})\]:|\[\d+,(\d{{1,6}})\]<\w+>:)?\s*({_H}):\d+:\d+ \[\d+\]",
    re.ASCII,
)
_HEAD_PDSH = re.compile(rf"({_H}\d[\w.-]*): (?:\[[A-Za-z_]*?(\d{{1,6}})\]:|\[)", re.ASCII)
#: NCCL lines of a head looked at, and first lines looked at for a pdsh prefix (it is on every
#: line of such a log): a head is searched in bounded time.
HEAD_NCCL_LINES = 64
HEAD_PDSH_LINES = 32
_SOURCE_FILE = re.compile(
    r"\.(?:py|pyx|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go|java|js|ts|so)$", re.IGNORECASE
)


def _host(name: str | None) -> str | None:
    """A host name, or None for a source file's name or a log level (`INFO`, `ERROR`)."""
    if name is None or _SOURCE_FILE.search(name) or (name.isalpha() and name.isupper()):
        return None
    return name


def line_host(text: str) -> str | None:
    """The host a line names itself, by the rules of the module docstring."""
    for regex in _LINE_HOSTS:
        found = regex.search(text)
        if found and _host(found.group(1)):
            return found.group(1)
    return None


@dataclass
class HeadHosts:
    """The hosts the head of one file names, and for which ranks."""

    by_rank: dict[int, str] = field(default_factory=dict)
    hosts: set[str] = field(default_factory=set)


def head_hosts(head: bytes, file_rank: int | None) -> HeadHosts:
    """Hosts of the NCCL and pdsh prefixes in a file's head; a line's rank is its `[rankN]:`
    (or Open MPI `[job,rank]<stdout>:`) prefix, else the file's rank."""
    out = HeadHosts()
    found: list[tuple[int, str, str | None]] = []
    pos = 0
    for _ in range(HEAD_NCCL_LINES):  # jump from one " NCCL " to the next: no regex per line
        hit = head.find(b" NCCL ", pos)
        if hit < 0:
            break
        start = head.rfind(b"\n", 0, hit) + 1
        pos = head.find(b"\n", hit) + 1 or len(head)
        m = _HEAD_NCCL.match(head[start:hit].decode("utf-8", "replace"))
        if m:
            found.append((start, m.group(3), m.group(1) or m.group(2)))
    start = 0
    for _ in range(HEAD_PDSH_LINES):
        end = head.find(b"\n", start)
        m = _HEAD_PDSH.match(
            head[start : end if end >= 0 else len(head)].decode("utf-8", "replace")
        )
        if m:
            found.append((start, m.group(1), m.group(2)))
        if end < 0:
            break
        start = end + 1
    for _, name, prefix in sorted(found):
        host = _host(name)
        if host is None:
            continue
        out.hosts.add(host)
        rank = int(prefix) if prefix else file_rank
        if rank is not None:
            out.by_rank.setdefault(rank, host)
    return out


#: torchrun's error summary: `host : name` and, within the next line, `rank : N (local_rank: M)`.
_SUMMARY = re.compile(
    rb"\bhost\s*: (" + _H.encode() + rb")[ \t]*\r?\n[^\n]{0,80}?\n?"
    rb"\s*rank\s*: (\d{1,6}) \(local_rank",
    re.ASCII,
)
#: Bytes kept from the end of one buffer for a summary block cut by the next; ranks kept per job.
_SUMMARY_CARRY = 512
SUMMARY_RANKS = 4096


class SummaryHosts:
    """The host of each rank that torchrun's error summaries (`Root Cause`, `Other Failures`)
    name, from a job's bytes as the scan reads them: torchrun knows where each rank ran."""

    def __init__(self) -> None:
        self.by_rank: dict[int, str] = {}
        self.carry = b""

    def feed(self, data: bytes) -> None:
        if b"host" not in data and b"host" not in self.carry:
            self.carry = b""
            return
        block = self.carry + data
        for m in _SUMMARY.finditer(block):
            host = _host(m.group(1).decode("ascii"))
            if host and len(self.by_rank) < SUMMARY_RANKS:
                self.by_rank.setdefault(int(m.group(2)), host)
        self.carry = block[-_SUMMARY_CARRY:]


def first_host(
    initiating: dict[str, Any] | None,
    rank: int | None,
    heads: Mapping[str, HeadHosts],
    summary: Mapping[int, str] | None = None,
) -> tuple[str | None, str | None]:
    """The first failure's host and the rule that found it (`line`, `summary`, `file-rank`,
    `job-rank`, `file`), or (None, None)."""
    if initiating and (host := line_host(initiating["text"])):
        return host, "line"
    if rank is not None and summary and rank in summary:
        return summary[rank], "summary"
    file = heads.get(initiating["file"]) if initiating else None
    if rank is not None:
        if file and rank in file.by_rank:
            return file.by_rank[rank], "file-rank"
        named = sorted({h.by_rank[rank] for h in heads.values() if rank in h.by_rank})
        if len(named) == 1:
            return named[0], "job-rank"
    if file and len(file.hosts) == 1:
        return next(iter(file.hosts)), "file"
    return None, None
