"""Log scanning: every entry's fingerprints matched against training logs in one streaming pass.

One set of every fingerprint (`presence`) says which patterns occur in a buffer (a per-line Python
loop is ten times slower); only those patterns are then run alone to locate their lines. Evidence
lines get a rank and a timestamp (`lines`); torchrun's "Root Cause (first observed failure)" block
names the rank that died first. A large plain log is scanned in stretches by several processes
and merged as if one pass had read it. Ranking the evidence is `rank`'s.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import IO, TYPE_CHECKING

import re2

from nanopedia.content.fingerprints import scan_options
from nanopedia.diagnosis import presence
from nanopedia.diagnosis.catalogue import EntryView, FingerprintView, view
from nanopedia.diagnosis.lines import (
    TIMESTAMP_WINDOW,
    LineRanks,
    earlier_timestamp,
    file_rank,
    nearby_rank,
    timestamp,
)
from nanopedia.diagnosis.logs import (
    BUFFER_BYTES,
    Buffer,
    Waiting,
    buffers,
    mapped,
    newlines,
    open_log,
    open_regular,
    segments,
    streamed,
)
from nanopedia.errors import Problem

if TYPE_CHECKING:
    from nanopedia.diagnosis.elastic import ErrorFile
    from nanopedia.model import Entry, Indicates

#: Evidence lines kept per fingerprint and file; the count stops there too ("50+").
EVIDENCE_CAP = 50
#: Decisive lines past `EVIDENCE_CAP` still located in one stretch of a log, all fingerprints
#: together, for the first failure alone: thousands of ranks may print one error into a combined
#: log, and the earliest of them need not be among the first 50.
LATE_LINES = 4096
#: Characters of an evidence line kept (JSON shows them whole; the text report cuts them visibly).
TEXT_CHARS = 2000


ROOT_CAUSE = r"Root Cause \(first observed failure\):"
ROOT_RANK = r"^\s*rank\s*: (\d{1,6}) \(local_rank: \d+\)"
#: torchrun's agent lists the global ranks it started ("Rendezvous complete for workers"): the
#: ranks a combined log of one node speaks for, so those that printed no evidence are named.
LAUNCHER_RANKS = r"\bglobal_ranks=\[([0-9][0-9, ]*)\]"
#: Ranks read from launcher lines, at most.
MAX_RANKS = 1 << 16
#: Lines after the Root Cause heading in which its `rank :` line is looked for.
ROOT_SPAN = 8


_DIGITS = re.compile(r"\d+", re.ASCII)


@dataclass(frozen=True, slots=True)
class Probe:
    """One fingerprint with the entry it belongs to: what the matcher reports a hit against."""

    entry_id: str
    """Id of the entry that owns the fingerprint."""
    title: str
    """The entry's title, shown with a candidate."""
    fingerprint: FingerprintView
    """The fingerprint itself."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One log line that a fingerprint matched."""

    entry: str
    """Id of the entry whose fingerprint matched."""
    title: str
    """That entry's title."""
    file: str
    """The log as named on the command line (`<stdin>` for `-`)."""
    line: int
    """1-based line number in the (decompressed) log."""
    rank: int | None
    """The rank that printed the line, when the prefix, message or file name says."""
    text: str
    """The line, cut to `TEXT_CHARS` characters."""
    fingerprint: str
    """Id of the fingerprint that matched."""
    indicates: Indicates
    """What the fingerprint indicates."""
    timestamp: str | None
    """Sortable `MMDDhhmmss.fffffffff` of the line or the nearest earlier timestamped line."""
    consequence: bool = False
    """The fingerprint describes a consequence of a failure elsewhere (its `collateral` field)."""
    specificity: int = 0
    """Fixed characters in the fingerprint's pattern (`literal_length`): breaks ties."""
    collateral: bool = False
    """Judged a consequence of another entry's decisive failure in this diagnosis."""
    span: tuple[int, int] | None = None
    """Characters of `text` the fingerprint matched (start, end), so a report that cuts the line
    keeps the matched words in view; None when no pattern located it (a Flight Recorder
    finding)."""


@dataclass(frozen=True, slots=True)
class FileScan:
    """What one log gave: evidence per probe, Root Cause ranks and its size."""

    file: str
    """The log's name."""
    evidence: tuple[Evidence, ...]
    """Located evidence, in line order."""
    counts: dict[int, int]
    """Probe index to lines matched (capped at `EVIDENCE_CAP`)."""
    root_ranks: tuple[tuple[int, int], ...]
    """(line, rank) of each torchrun Root Cause block."""
    lines: int
    """Number of lines read."""
    bytes: int
    """Number of (decompressed) bytes read."""
    ranks: tuple[int, ...] = ()
    """Ranks the launcher's `global_ranks=[...]` lines say this log speaks for."""
    open_at_deadline: bool = False
    """A pipe (stdin) was still open, silent, at the deadline: only what came before was read."""
    late: tuple[Evidence, ...] = ()
    """Decisive lines past `EVIDENCE_CAP`, not shown but compared for the first failure: of each
    fingerprint the earliest, and the earliest that names its rank (`_keep`)."""
    uncompared: bool = False
    """Decisive lines past `LATE_LINES` too: the first failure is the earliest of the others."""


class DiagnoseTimeout(Exception):
    """The overall deadline passed; names the pattern that was slowest on the last buffer (the
    CLI says how long it ran: it knows when it started)."""

    def __init__(self, slowest: Probe | None, file: str) -> None:
        self.slowest = slowest
        self.file = file
        name = f"'{slowest.entry_id}/{slowest.fingerprint.id}'" if slowest else "none found"
        super().__init__(
            f"while reading {file}, the slowest fingerprint on the last buffer was {name}"
        )

    def __reduce__(self) -> tuple[type, tuple[Probe | None, str]]:
        return DiagnoseTimeout, (self.slowest, self.file)  # raised in a worker, re-raised here


class Matcher:
    """Every fingerprint compiled once: one RE2 set to find which occur, one program each to locate.

    Three structural patterns (torchrun's Root Cause heading, its `rank :` line, the agent's
    `global_ranks=[...]`) ride in the same set so the multi-rank bookkeeping costs no extra pass.
    """

    def __init__(self, entries: Iterable[EntryView | Entry]) -> None:
        self.probes: tuple[Probe, ...] = tuple(
            Probe(e.id, e.title, fp)
            for e in sorted((view(e) for e in entries), key=lambda e: e.id)
            for fp in e.fingerprints
        )
        self.programs = ["(?m)" + p.fingerprint.program for p in self.probes]
        self.programs += ["(?m)" + ROOT_CAUSE, "(?m)" + ROOT_RANK, LAUNCHER_RANKS]
        self.root_index = len(self.probes)
        self.set = presence.re2_set(self.programs)
        #: Which programs a buffer may hold (`presence`): the set's exact answer, or a faster
        #: one after `accelerate`.
        self.present: presence.Presence = presence.exact(self.set)
        self.regexes = _Programs(self.programs)
        self.specificity = [p.fingerprint.specificity for p in self.probes]
        #: Lines `rank.diagnose` takes for the first failure: located past `EVIDENCE_CAP` too.
        self.decisive = [
            p.fingerprint.indicates == "decisive" and not p.fingerprint.collateral
            for p in self.probes
        ]
        self.index = {(p.entry_id, p.fingerprint.id): i for i, p in enumerate(self.probes)}

    def accelerate(self, store: presence.Store | None) -> None:
        """Answer `present` with Hyperscan's compiled database where it is installed: for a log
        of gigabytes (`presence.ACCELERATE_BYTES`); the answer of a scan is the same."""
        self.present = presence.accelerated(self.programs, store) or self.present

    def slowest(self, sample: bytes) -> Probe | None:
        """The probe whose pattern alone takes longest on `sample`: named when the deadline hits."""
        worst, worst_time = None, -1.0
        for probe, regex in zip(self.probes, self.regexes, strict=False):
            start = time.perf_counter()
            for _ in regex.finditer(sample):
                pass
            spent = time.perf_counter() - start
            if spent > worst_time:
                worst, worst_time = probe, spent
        return worst


def usable_entries(root: PurePath) -> tuple[list[EntryView], list[Problem]]:
    """The entries of a folder that can take part in a diagnosis, and the first problem of each
    entry file left out: one that did not load, or one with an invalid pattern (a link that goes
    nowhere does not make its fingerprints wrong). Compiled now; `catalogue.load` with a store
    reuses what an earlier run compiled."""
    from pathlib import Path

    from nanopedia.diagnosis.catalogue import usable

    return usable(Path(root))


class _Programs:
    """Each pattern's own RE2 program, compiled the first time a buffer holds a match of it: a
    log meets a few of them, and compiling all costs more than reading a one-screen log."""

    __slots__ = ("_programs", "_compiled")

    def __init__(self, programs: list[str]) -> None:
        self._programs = programs
        self._compiled: list[re2._Regexp | None] = [None] * len(programs)

    def __len__(self) -> int:
        return len(self._programs)

    def __getitem__(self, index: int) -> re2._Regexp:
        regex = self._compiled[index]
        if regex is None:
            regex = self._compiled[index] = re2.compile(self._programs[index], scan_options())
        return regex

    def __iter__(self) -> Iterator[re2._Regexp]:
        return (self[i] for i in range(len(self._programs)))


def scan(
    stream: IO[bytes],
    name: str,
    matcher: Matcher,
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
    buffer_bytes: int = BUFFER_BYTES,
) -> FileScan:
    """Match every fingerprint against one log; `deadline` is a `time.monotonic()` value.

    A pipe that stays open past the deadline (`logs.Waiting`) ends the input there: what came
    before it is the log, and the scan says so (`open_at_deadline`)."""

    def waited() -> bool:
        return bool(getattr(stream, "timed_out", False))

    part = _scan_part(buffers(stream, buffer_bytes), name, matcher, deadline, progress, waited)
    return replace(_merge(name, [part], matcher), open_at_deadline=waited())


@dataclass(slots=True)
class _Part:
    """What one stretch of a log gave, line numbers counted from the stretch's start."""

    evidence: list[Evidence]
    counts: dict[int, int]
    roots: list[int]
    rank_lines: list[tuple[int, int]]
    ranks: set[int]
    lines: int
    bytes: int
    late: list[Evidence]
    uncompared: bool


def _scan_part(
    bufs: Iterable[Buffer],
    name: str,
    matcher: Matcher,
    deadline: float | None,
    progress: Callable[[int], None] | None,
    waited: Callable[[], bool] = lambda: False,
    before: bytes = b"",
) -> _Part:
    """One stretch of whole lines scanned; `before` is the text preceding it (for timestamps).

    Every loop here is bounded: at most `EVIDENCE_CAP` lines per fingerprint, `LATE_LINES` more
    decisive ones in all, Root Cause headings, and only the `rank :` lines that can belong to a
    heading (within `ROOT_SPAN` lines after one, or at the stretch's start where a heading may
    sit in the stretch before). A line's text and timestamp are read once, however many patterns
    match it (a line can hold the examples of every fingerprint).
    """
    rank_of_file = file_rank(name)
    evidence: list[Evidence] = []
    late: dict[tuple[str, str], tuple[Evidence, Evidence | None]] = {}
    late_left, uncompared = LATE_LINES, False
    counts: dict[int, int] = {}
    roots: list[int] = []
    rank_lines: list[tuple[int, int]] = []
    line_base = 0
    total = 0
    ranks: set[int] = set()
    tail = before[-TIMESTAMP_WINDOW:]
    root_at, rank_at, launcher_at = (matcher.root_index + i for i in range(3))
    for data, length in bufs:
        total += length
        view = memoryview(data)[:length]
        hits = matcher.present(view)
        buf = b""  # a buffer with a hit to locate is read from a copy, lines and all
        located: list[
            tuple[int, int, int, bool]
        ] = []  # (offset, probe index, match end, past the cap)
        for index in hits:
            counted = index != rank_at
            decisive = index < root_at and matcher.decisive[index]  # located past the cap too
            if counted and counts.get(index, 0) >= EVIDENCE_CAP and not (decisive and late_left):
                if decisive and not uncompared:  # a decisive line is there and not compared
                    buf = buf or bytes(view)  # (`present` may name a pattern that is not)
                    uncompared = matcher.regexes[index].search(buf) is not None
                continue
            buf = buf or bytes(view)  # not copied when every hit is past its cap
            regex, pos = matcher.regexes[index], 0
            while (m := regex.search(buf, pos)) is not None:
                past = decisive and counts.get(index, 0) >= EVIDENCE_CAP
                if past and not late_left:
                    uncompared = True
                    break
                if past:
                    late_left -= 1
                elif counted:
                    counts[index] = counts.get(index, 0) + 1
                located.append((m.start(), index, m.end(), past))
                pos = buf.find(b"\n", m.start()) + 1  # one hit per line, as the browser does
                if pos <= 0 or (counted and not decisive and counts[index] >= EVIDENCE_CAP):
                    break
        located.sort()
        line, pos = line_base, 0
        read: dict[int, _Line] = {}  # by the line's start
        for offset, index, match_end, past in located:
            line += buf.count(b"\n", pos, offset)
            pos = offset
            start = buf.rfind(b"\n", 0, offset) + 1
            end = buf.find(b"\n", offset)
            if start not in read:
                text = buf[start : end if end >= 0 else len(buf)].decode("utf-8", "replace")
                stamp = timestamp(text) or earlier_timestamp(buf, start, tail)
                read[start] = _Line(text, stamp, LineRanks(text))
            text = read[start].text
            if index == root_at:
                roots.append(line + 1)
                continue
            if index == rank_at:
                near = line + 1 <= ROOT_SPAN or (roots and line + 1 - roots[-1] <= ROOT_SPAN)
                if near and len(rank_lines) < ROOT_SPAN * (EVIDENCE_CAP + 1):
                    rank = matcher.regexes[index].search(text).group(1)
                    rank_lines.append((line + 1, int(rank)))
                continue
            if index == launcher_at:
                listed = _DIGITS.findall(matcher.regexes[index].search(text).group(1))
                ranks.update(int(r) for r in listed[:MAX_RANKS] if len(r) <= 6)
                continue
            probe, said = matcher.probes[index], read[start]
            column = (
                offset - start
                if text.isascii()
                else len(buf[start:offset].decode("utf-8", "replace"))
            )
            found = Evidence(
                entry=probe.entry_id,
                title=probe.title,
                file=name,
                line=line + 1,
                rank=nearby_rank(buf, start, end, said.ranks.at(column), rank_of_file),
                text=said.shown,
                fingerprint=probe.fingerprint.id,
                indicates=probe.fingerprint.indicates,
                consequence=probe.fingerprint.collateral,
                specificity=matcher.specificity[index],
                timestamp=said.stamp,
                span=said.span(column, buf[offset:match_end]),
            )
            if past:
                _keep(late, found)
            else:
                evidence.append(found)
        line_base = line + newlines(data, pos, length)  # lines past the last hit
        # the text before the next buffer: a pipe's buffers can be shorter than the window
        tail = (tail + bytes(view[-TIMESTAMP_WINDOW:]))[-TIMESTAMP_WINDOW:]
        if progress:
            progress(total)
        if deadline is not None and time.monotonic() > deadline and not waited():
            raise DiagnoseTimeout(matcher.slowest(bytes(view[: 1 << 20])), name)
    evidence.sort(key=lambda e: e.line)
    return _Part(
        evidence, counts, roots, rank_lines, ranks, line_base, total, _kept(late), uncompared
    )


@dataclass(slots=True)
class _Line:
    """What a scan reads from an evidence line, once however many fingerprints match it (a line
    can hold a hit of every one)."""

    text: str
    stamp: str | None
    ranks: LineRanks
    shown: str = field(init=False)
    """`text` stripped and cut to `TEXT_CHARS`: the evidence's text."""
    lead: int = field(init=False)
    """Characters stripped from the start of `text`."""

    def __post_init__(self) -> None:
        self.shown = self.text.strip()[:TEXT_CHARS]
        self.lead = len(self.text) - len(self.text.lstrip())

    def span(self, column: int, match: bytes) -> tuple[int, int]:
        """The match that starts at character `column` of the line as characters of `shown`."""
        first = column - self.lead
        last = first + len(match.decode("utf-8", "replace"))
        return max(0, min(first, len(self.shown))), max(0, min(last, len(self.shown)))


def _keep(kept: dict[tuple[str, str], tuple[Evidence, Evidence | None]], ev: Evidence) -> None:
    """Keep `ev` if it is its fingerprint's earliest line past the cap, or the earliest that names
    a rank, in `rank.first_failure`'s order within one log (timestamp, an untimed line first, then
    line): with them, the first failure and its rank are what all the lines would give (when
    they have timestamps; in line order a late line never comes first), in bounded memory."""
    first, named = kept.get((ev.entry, ev.fingerprint), (ev, None))
    if (ev.timestamp or "", ev.line) < (first.timestamp or "", first.line):
        first = ev
    if ev.rank is not None and (
        named is None or (ev.timestamp or "", ev.line) < (named.timestamp or "", named.line)
    ):
        named = ev
    kept[(ev.entry, ev.fingerprint)] = (first, named)


def _kept(kept: dict[tuple[str, str], tuple[Evidence, Evidence | None]]) -> list[Evidence]:
    """The lines `_keep` kept, each once, in line order."""
    lines = dict.fromkeys(e for pair in kept.values() for e in pair if e is not None)
    return sorted(lines, key=lambda e: (e.line, e.entry, e.fingerprint))


def _merge(name: str, parts: list[_Part], matcher: Matcher) -> FileScan:
    """The stretches of one log as one scan: lines renumbered, the first `EVIDENCE_CAP` lines of
    each fingerprint kept (what one pass over the whole log keeps), the decisive ones past them
    kept for the first failure as `_keep` does, Root Cause headings paired with their `rank :`
    lines across stretch boundaries, in one linear pass. Each stretch locates its own
    `LATE_LINES`: past them, what one pass would have compared can differ (`uncompared` says so)."""
    evidence: list[Evidence] = []
    late: dict[tuple[str, str], tuple[Evidence, Evidence | None]] = {}
    counts: dict[int, int] = {}
    roots: list[int] = []
    rank_lines: list[tuple[int, int]] = []
    ranks: set[int] = set()
    base = 0
    for part in parts:
        for ev in part.evidence:
            index = matcher.index[(ev.entry, ev.fingerprint)]
            moved = replace(ev, line=ev.line + base) if base else ev
            if counts.get(index, 0) < EVIDENCE_CAP:
                counts[index] = counts.get(index, 0) + 1
                evidence.append(moved)
            elif matcher.decisive[index]:
                _keep(late, moved)
        for ev in part.late:
            _keep(late, replace(ev, line=ev.line + base) if base else ev)
        roots += [r + base for r in part.roots]  # each part holds at most EVIDENCE_CAP
        rank_lines += [(ln + base, r) for ln, r in part.rank_lines]
        ranks |= part.ranks
        base += part.lines
    for index in range(matcher.root_index, matcher.root_index + 3):
        counts.pop(index, None)
    return FileScan(
        name,
        tuple(evidence),
        counts,
        pair_roots(roots[:EVIDENCE_CAP], rank_lines),
        base,
        sum(p.bytes for p in parts),
        tuple(sorted(ranks)[:MAX_RANKS]),
        late=tuple(_kept(late)),
        uncompared=any(p.uncompared for p in parts),
    )


def pair_roots(roots: list[int], rank_lines: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """(heading line, rank) for each Root Cause heading followed within `ROOT_SPAN` lines by a
    `rank :` line: two sorted lists walked once."""
    paired, j = [], 0
    for root in roots:
        while j < len(rank_lines) and rank_lines[j][0] <= root:
            j += 1
        if j < len(rank_lines) and rank_lines[j][0] <= root + ROOT_SPAN:
            paired.append((root, rank_lines[j][1]))
    return tuple(paired)


def scan_error_file(error: ErrorFile, matcher: Matcher, deadline: float | None = None) -> FileScan:
    """A torchelastic error file's traceback scanned as a log of its own: each line it matches
    is that rank's evidence (the rank of its folder where the line names none), timed by the
    file's timestamp, so the error files' times decide the first failure. Its line numbers are
    those of the traceback (`extraInfo.py_callstack`), which the file holds as one string."""
    import io

    found = scan(
        io.BytesIO(error.traceback.encode("utf-8", "replace")), error.file, matcher, deadline
    )
    stamp = error.sortable

    def timed(lines: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
        return tuple(
            replace(
                e, rank=e.rank if e.rank is not None else error.rank, timestamp=stamp or e.timestamp
            )
            for e in lines
        )

    return replace(found, evidence=timed(found.evidence), late=timed(found.late))


def scan_file(
    path: str,
    matcher: Matcher,
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    name: str | None = None,
) -> FileScan:
    """One log file scanned, a large plain one by `jobs` processes at once.

    A plain file is cut into stretches of about `SEGMENT_BYTES` that end at a newline; each is
    scanned alone (the bytes before it give its first lines their timestamps) and the results are
    merged as if one pass had read the file. The cuts do not depend on `jobs`, so the answer is
    the same on any machine. Gzip and standard input are one stream, read in one pass.
    """
    name = name or path
    stream, under = open_log(path, deadline, pipes=True)
    with stream:
        if stream is not under or path == "-" or isinstance(under, Waiting):
            shown = (lambda _: progress(under.tell())) if progress and path != "-" else None
            return scan(stream, name, matcher, deadline, shown)
        cuts = segments(stream, os.fstat(stream.fileno()).st_size)
    if len(cuts) == 1 or jobs <= 1:
        parts, done = [], 0
        for start, end in cuts:
            part = _scan_segment(path, name, start, end, deadline, matcher)
            done += part.bytes
            if progress:
                progress(done)
            parts.append(part)
        return _merge(name, parts, matcher)
    global _POOL_MATCHER
    _POOL_MATCHER = matcher  # inherited by the forked workers: compiled once
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import numpy  # noqa: F401  (the workers count newlines with it: imported once, before forking)

    work = [(path, name, start, end, deadline) for start, end in cuts]
    pool = ProcessPoolExecutor(min(jobs, len(cuts)), multiprocessing.get_context("fork"))
    parts, done = [], 0
    try:
        for part in pool.map(_pool_segment, work):
            done += part.bytes
            if progress:
                progress(done)
            parts.append(part)
    except BrokenProcessPool:
        raise OSError("a process reading it died (was it cut short while it was read?)") from None
    finally:
        pool.shutdown(cancel_futures=True)
    return _merge(name, parts, matcher)


_POOL_MATCHER: Matcher | None = None


def _scan_segment(
    path: str,
    name: str,
    start: int,
    end: int,
    deadline: float | None,
    matcher: Matcher,
    read: Callable[[IO[bytes], int, int], Iterable[Buffer]] = streamed,
) -> _Part:
    """Bytes `start` to `end` of a plain log, the bytes before them giving its first lines their
    timestamps; a worker `read`s them from a memory map (`mapped`), the CLI's own process streams
    them."""
    with open_regular(path) as file:
        file.seek(max(0, start - TIMESTAMP_WINDOW))
        before = file.read(start - file.tell())
        return _scan_part(read(file, start, end), name, matcher, deadline, None, before=before)


def _pool_segment(work: tuple[str, str, int, int, float | None]) -> _Part:
    assert _POOL_MATCHER is not None
    return _scan_segment(*work, _POOL_MATCHER, mapped)
