"""Which fingerprints occur in a buffer of a log: the first question a scan asks of every buffer.

RE2's set answers it (`re2_set`) at about 600 MB/s a core on this machine, whatever the number of
patterns (its lazy DFA walks a table per byte), and builds its DFA states on the first megabytes
each process reads (about 0.1 s for the shipped entries). Hyperscan's block-mode database of the
same patterns answers at about 750 MB/s and is compiled ahead (0.4 s, then read back from the
cache in a millisecond), so a log of gigabytes takes it (`accelerated`; the CLI asks for it when
a log is at least `ACCELERATE_BYTES`). Measured with `bench/diagnose_throughput.py --cli`.

The database is compiled in Hyperscan's prefilter mode, so its answer may name a pattern that does
not occur (a construct it widens; a class such as `\\s` that crosses a newline, which RE2's
`never_nl` does not), never leave one out: `scan` locates every named pattern with its own RE2
program, which decides. That holds for ASCII text, where a byte is a character for both. RE2
reads UTF-8 (a `.` is a whole character) and Hyperscan reads bytes, so a buffer holding a byte
over 0x7F is answered by the RE2 set instead: one more pattern of the database reports such a
byte, and the scan stops there.

Hyperscan ships wheels for x86-64 Linux and arm64 macOS; elsewhere the package is not installed
and the RE2 set answers every buffer.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import re2

from nanopedia.content.fingerprints import scan_options

#: A log at least this large is scanned with the compiled database: below it, its compilation on
#: a cold cache costs more than it saves.
ACCELERATE_BYTES = 64 << 20

#: What answers the question: the indices of the patterns a buffer may hold, ascending.
Presence = Callable[[Any], list[int]]


class Store(Protocol):
    """Where a compiled database is kept between runs (`incremental.catalogue.FolderStore`)."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...


def re2_set(programs: Sequence[str]) -> re2.Set:
    """One RE2 set of every program, exact: the patterns it names occur in the buffer."""
    found = re2.Set.SearchSet(scan_options())
    for program in programs:
        found.Add(program)
    found.Compile()
    return found


def exact(programs: re2.Set) -> Presence:
    """The RE2 set's answer, as a sorted list (it gives None when nothing occurs)."""

    def present(data: Any) -> list[int]:
        return sorted(programs.Match(data) or [])

    return present


def accelerated(
    programs: Sequence[str], exact_set: re2.Set, store: Store | None
) -> Presence | None:
    """Hyperscan's answer, the RE2 set's for a buffer with a byte over 0x7F; None when Hyperscan
    is not installed or cannot compile one of the programs (the RE2 set then answers alone).
    The compiled database is kept in `store` (None: compiled every time)."""
    try:
        import hyperscan
    except ImportError:
        return None
    sentinel = len(programs)
    database = _database(hyperscan, [*programs, _NON_ASCII], store)
    if database is None:
        return None
    fallback = exact(exact_set)

    def collect(index: int, _start: int, _end: int, _flags: int, found: list[int]) -> bool:
        found.append(index)
        return index == sentinel  # True ends the scan: the RE2 set reads this buffer

    def present(data: Any) -> list[int]:
        found: list[int] = []
        try:
            database.scan(data, match_event_handler=collect, context=found)
        except hyperscan.ScanTerminated:
            return fallback(data)
        return sorted(found)

    return present


#: Any byte over 0x7F: the database's last pattern.
_NON_ASCII = r"[\x80-\xff]"


def _database(hyperscan: Any, programs: list[str], store: Store | None) -> Any:
    """The block-mode database of `programs`, read from `store` when an earlier run compiled it
    (its bytes checked against the hash stored with them), else compiled and stored."""
    key = hashlib.sha256(
        "\0".join([hyperscan.__version__, platform.machine(), *programs]).encode()
    ).hexdigest()
    name = f"hyperscan-{key[:24]}.db"
    if store is not None:
        database = _loaded(hyperscan, store.get(name))
        if database is not None:
            return database
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH
    flags |= hyperscan.HS_FLAG_ALLOWEMPTY
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=[p.encode() for p in programs],
            ids=list(range(len(programs))),
            elements=len(programs),
            flags=[flags] * len(programs),
        )
    except hyperscan.error:
        return None
    database.scratch = hyperscan.Scratch(database)
    if store is not None:
        data = hyperscan.dumpb(database)
        store.put(name, hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
    return database


def _loaded(hyperscan: Any, stored: bytes | None) -> Any:
    """A stored database, or None when there is none or it is not what was stored."""
    if stored is None:
        return None
    digest, _, data = stored.partition(b"\n")
    if digest != hashlib.sha256(data).hexdigest().encode():
        return None
    try:
        database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
    except hyperscan.error:  # another CPU's database: compiled again
        return None
    return database
