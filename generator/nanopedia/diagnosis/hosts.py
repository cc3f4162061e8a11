"""Host attribution: the machine a job's first failure happened on (a bad GPU fails first again).

The first failure's host is, in this order: a host the initiating line names itself (NCCL's
`host:pid:tid [dev]` prefix, Open MPI's `[host:pid]`, a pdsh/DeepSpeed `host: ` prefix, SLURM's
`srun: error: host: task N`, `slurmstepd-host:` and `*** JOB n ON host CANCELLED`); else the host
that the head of the same file (its first `HEAD_BYTES`) names for that rank (NCCL's init lines);
else the host the heads of the job's files name for that rank; else the only host the head of the
file names. Names ending like source files (`train.py`) are never hosts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_H = r"[A-Za-z][\w.-]*"
#: Host rules on one line, strongest first (see the module docstring).
_LINE_HOSTS = [re.compile(p, re.ASCII) for p in (
    rf"\bsrun: error: ({_H}): task \d+",
    rf"\bslurmstepd-({_H}):",
    rf"\*\*\* (?:JOB|STEP) [\d.]+ ON ({_H}) CANCELLED",
    rf"(?<![\w.-])({_H}):\d+:\d+ \[\d+\]",
    rf"\[({_H}):\d+\]",
    rf"^\s*({_H}\d[\w.-]*): ",
)]
#: Host prefixes of a head's lines: NCCL's after an optional `[rankN]:` (or Open MPI
#: `[job,rank]<stdout>:`) prefix, and pdsh's at the start of a line before a bracket.
_HEAD_NCCL = re.compile(
    rf"\s*(?:\[[A-Za-z_]*?(\d{{1,6}})\]:|\[\d+,(\d{{1,6}})\]<\w+>:)?\s*({_H}):\d+:\d+ \[\d+\]",
    re.ASCII)
_HEAD_PDSH = re.compile(rf"({_H}\d[\w.-]*): (?:\[[A-Za-z_]*?(\d{{1,6}})\]:|\[)", re.ASCII)
#: NCCL lines of a head looked at, and first lines looked at for a pdsh prefix (it is on every
#: line of such a log): a head is searched in bounded time.
HEAD_NCCL_LINES = 64
HEAD_PDSH_LINES = 32
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go|java|js|ts|so)$",
                          re.IGNORECASE)


def _host(name: str | None) -> str | None:
    return None if name is None or _SOURCE_FILE.search(name) else name


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
        m = _HEAD_PDSH.match(head[start : end if end >= 0 else len(head)].decode("utf-8",
                                                                                 "replace"))
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


def first_host(initiating: dict[str, Any] | None, rank: int | None,
               heads: Mapping[str, HeadHosts]) -> tuple[str | None, str | None]:
    """The first failure's host and the rule that found it (`line`, `file-rank`, `job-rank`,
    `file`), or (None, None)."""
    if initiating and (host := line_host(initiating["text"])):
        return host, "line"
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
