"""Log diagnosis: every entry's fingerprints matched against training logs in one streaming pass.

Logs are read in large buffers (plain or gzip, any size, bounded memory). Each buffer ends at a line
boundary and the incomplete last line is carried into the next, so a match that straddles a read
boundary is still found. One `re2.Set` holding every fingerprint says which patterns occur in a
buffer (a per-line Python loop is ten times slower); only those patterns are then run alone to
locate their lines. Evidence lines get a rank (`[rank3]:`, torchrun's `[default3]:`, `[Rank 3]`,
the file name) and a timestamp; torchrun's "Root Cause (first observed failure)" block names the
rank that died first. Scoring and the rules below are mirrored by `theme/static/diagnose-worker.js`,
which reads `export_data()`, so the browser page gives the same answers.
"""

from __future__ import annotations

import gzip
import os
import re
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import IO, Any

import re2
from nanopedia.content.fingerprints import line_program, literal_length, scan_options
from nanopedia.content.fingerprints import program as browser_program
from nanopedia.errors import Problem
from nanopedia.model import Entry, Fingerprint, Indicates

#: Bytes read per buffer: large enough that the set's per-call overhead vanishes.
BUFFER_BYTES = 8 << 20
#: A line longer than this is cut (its bytes past the cut are still scanned, as the next piece).
MAX_LINE_BYTES = 1 << 20
#: Evidence lines kept per fingerprint and file; the count stops there too ("50+").
EVIDENCE_CAP = 50
#: Characters of an evidence line kept (JSON shows them whole; the text report cuts them visibly).
TEXT_CHARS = 2000
#: Score of one fingerprint by what it indicates; extra lines of the same fingerprint add 10 % each,
#: up to five.
WEIGHTS: dict[str, float] = {"decisive": 10.0, "context": 4.0, "supporting": 3.0, "benign": 1.0}
#: Weight left to collateral evidence, so the cause ranks above its consequences.
COLLATERAL_FACTOR = 0.1
#: Bytes before an untimestamped evidence line searched for the nearest earlier timestamp.
TIMESTAMP_WINDOW = 16 << 10

#: Problem codes that make an entry's fingerprints unusable: a pattern outside the portable
#: subset. (A pattern `check` finds slow, E033, still matches in linear time; that verdict is
#: timed, and the load of the machine must never take an entry out of a diagnosis.)
UNUSABLE_PATTERN = frozenset({"E030"})

ROOT_CAUSE = r"Root Cause \(first observed failure\):"
ROOT_RANK = r"^\s*rank\s*: (\d{1,6}) \(local_rank: \d+\)"
#: torchrun's agent lists the global ranks it started ("Rendezvous complete for workers"): the
#: ranks a combined log of one node speaks for, so those that printed no evidence are named.
LAUNCHER_RANKS = r"\bglobal_ranks=\[([0-9][0-9, ]*)\]"
#: Ranks read from launcher lines, at most.
MAX_RANKS = 1 << 16
#: Lines after the Root Cause heading in which its `rank :` line is looked for.
ROOT_SPAN = 8

# Ranks have at most six digits: a line of 5,000 digits is not a rank (and no int() of it).
_PREFIX_RANK = re.compile(r"^\s*\[[A-Za-z_]*?(\d{1,6})\]:", re.ASCII)
#: A launcher's rank prefix anywhere in a line (a record glued to the one before it).
_JOINED_RANK = re.compile(r"\[(?:rank|default)(\d{1,6})\]:", re.ASCII)
_MESSAGE_RANK = re.compile(
    r"\[Rank (\d{1,6})\]|\bRank (\d{1,6}):|\bon rank (\d{1,6})\b|OVERFLOW! Rank (\d{1,6})\b|"
    r"\bfor rank (\d{1,6}):",
    re.ASCII,  # \d and \b as JavaScript reads them
)
_FILE_RANK = re.compile(
    r"(?:rank|default|worker)[_-]?(\d{1,6})(?:[^0-9]|$)", re.IGNORECASE | re.ASCII
)
_ISO_TIME = re.compile(r"\b\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?", re.ASCII)
_GLOG_TIME = re.compile(r"\b[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", re.ASCII)
_DIGITS = re.compile(r"\d+", re.ASCII)
_ENQUEUED = re.compile(r"[Ll]ast enqueued (?:NCCL )?work: (-?\d{1,18})\b", re.ASCII)


@dataclass(frozen=True, slots=True)
class Probe:
    """One fingerprint with the entry it belongs to: what the matcher reports a hit against."""

    entry_id: str
    """Id of the entry that owns the fingerprint."""
    title: str
    """The entry's title, shown with a candidate."""
    fingerprint: Fingerprint
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """One entry that matched, with its score and the lines that prove it."""

    id: str
    """The entry id."""
    title: str
    """The entry title."""
    score: float
    """Sum of fingerprint weights; collateral evidence counts for `COLLATERAL_FACTOR`."""
    benign: bool
    """All its evidence is of the benign kind (normal in moderation, explained by the entry)."""
    evidence: tuple[Evidence, ...]
    """The lines, in file then line order."""
    strength: int = 2
    """`tier` of its evidence: 2, a decisive line of its own; 1, only evidence shared with other
    entries or of a weaker kind; 0, collateral evidence only."""

    @property
    def possible(self) -> bool:
        """No decisive line of its own: a possible answer, never ranked above a certain one."""
        return self.strength < 2


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The answer: candidates best first, and where the first failure appeared."""

    matches: tuple[Candidate, ...]
    """Candidate entries, best first."""
    initiating_rank: int | None
    """The rank that failed first, when known."""
    initiating: Evidence | None
    """The evidence line of the first failure, when one stands out."""
    initiating_reason: str | None
    """How the first failure was decided (Root Cause block, timestamps, NCCL progress, order)."""
    files: tuple[FileScan, ...] = field(default=())
    """Per-file scan results, in the order given."""
    silent_ranks: tuple[int, ...] = ()
    """Ranks known from per-rank file names, or from the launcher's rank list in a combined log,
    that gave no evidence at all: a rank that hung, was killed before it could print, or ran
    fine."""


class DiagnoseTimeout(Exception):
    """The overall deadline passed; names the pattern that was slowest on the last buffer (the
    CLI says how long it ran: it knows when it started)."""

    def __init__(self, slowest: Probe | None, file: str) -> None:
        self.slowest = slowest
        self.file = file
        name = f"'{slowest.entry_id}/{slowest.fingerprint.id}'" if slowest else "none found"
        super().__init__(f"while reading {file}, the slowest fingerprint on the last buffer was "
                         f"{name}")

    def __reduce__(self) -> tuple[type, tuple[Probe | None, str]]:
        return DiagnoseTimeout, (self.slowest, self.file)  # raised in a worker, re-raised here


class Matcher:
    """Every fingerprint compiled once: one RE2 set to find which occur, one program each to locate.

    Three structural patterns (torchrun's Root Cause heading, its `rank :` line, the agent's
    `global_ranks=[...]`) ride in the same set so the multi-rank bookkeeping costs no extra pass.
    """

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.probes: tuple[Probe, ...] = tuple(
            Probe(e.id, e.title, fp)
            for e in sorted(entries, key=lambda e: e.id)
            for fp in e.fingerprints
        )
        programs = [line_program(p.fingerprint) for p in self.probes]
        programs += ["(?m)" + ROOT_CAUSE, "(?m)" + ROOT_RANK, LAUNCHER_RANKS]
        self.root_index = len(self.probes)
        self.set = re2.Set.SearchSet(scan_options())
        for program in programs:
            self.set.Add(program)
        self.set.Compile()
        self.regexes = [re2.compile(program, scan_options()) for program in programs]
        self.specificity = [literal_length(p.fingerprint.pattern) for p in self.probes]
        self.index = {(p.entry_id, p.fingerprint.id): i for i, p in enumerate(self.probes)}

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


def usable_entries(root: PurePath) -> tuple[list[Entry], list[Problem]]:
    """The entries of a folder that can take part in a diagnosis, and the first problem of each
    entry file left out: one that did not load, or one with an invalid pattern (a link that goes
    nowhere does not make its fingerprints wrong)."""
    from pathlib import Path

    from nanopedia.content.corpus import gather

    catalog, problems = gather(Path(root))
    loaded = {s.doc.path for s in catalog.sources}
    left_out = {p.location.path: p for p in reversed(problems) if p.severity == "error" and (
        p.location.path not in loaded or p.code in UNUSABLE_PATTERN)}
    usable = [s.entry for s in catalog.sources if s.doc.path not in left_out]
    return usable, [first for path, first in sorted(left_out.items()) if path.endswith(".yaml")]


def open_log(path: str) -> tuple[IO[bytes], IO[bytes]]:
    """The log's bytes and the raw file under them (its position drives the progress bar).

    `-` is stdin; gzip is recognised by its magic number, not by the file name.
    """
    raw: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if head != b"\x1f\x8b":
        return raw, raw
    if path == "-":
        return Capped(gzip.GzipFile(fileobj=raw, mode="rb"), None), raw  # type: ignore[return-value]
    raw.close()
    unpacked = gzip.GzipFile(path, "rb")  # owns (and closes) its file, unlike fileobj=
    size = os.path.getsize(path)
    return Capped(unpacked, size), unpacked.fileobj  # type: ignore[return-value]


#: A gzip log may unpack to this many times its size, and to at least `UNPACKED_FLOOR` bytes:
#: real logs compress 10 to 100 times; 10 GB of zeros fit in 10 MB.
UNPACKED_RATIO = 200
UNPACKED_FLOOR = 2 << 30


class LogTooLarge(OSError):
    """A compressed log unpacks to far more than any real log (a gzip bomb)."""


class Stream:
    """A stream known by its `read`, with the `readinto` that `buffers` fills its array with."""

    def read(self, size: int = -1) -> bytes:
        raise NotImplementedError

    def readinto(self, into: memoryview) -> int:
        data = self.read(len(into))
        into[: len(data)] = data
        return len(data)


class Capped(Stream):
    """A gzip stream that stops with `LogTooLarge` past its unpacking limit; a corrupt stream
    raises `OSError` (never `zlib.error`), so the CLI names the file instead of crashing."""

    def __init__(self, stream: IO[bytes], packed: int | None) -> None:
        self.stream = stream
        self.limit = max(UNPACKED_FLOOR, UNPACKED_RATIO * (packed or 0))
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(size)
        except (zlib.error, EOFError) as err:
            raise OSError(f"not a valid gzip file ({err})") from None
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise LogTooLarge(f"it unpacks to more than {self.limit:,} bytes, far more than a "
                              "real log; unpack it yourself if it is one")
        return data

    def __enter__(self) -> Capped:
        return self

    def __exit__(self, *_: object) -> None:
        self.stream.close()

    def close(self) -> None:
        self.stream.close()


#: One buffer: the first `length` bytes of `data` are whole lines.
Buffer = tuple[bytes | bytearray, int]


def buffers(stream: IO[bytes], size: int = BUFFER_BYTES) -> Iterator[Buffer]:
    """Whole-line buffers of about `size` bytes, normalised so both engines see the same lines.

    CRLF becomes LF and a lone CR (progress bars) a space, so line numbers are those of `grep -n`
    and `.` means the same in RE2 and JavaScript; colour codes go. A line longer than
    `MAX_LINE_BYTES` is cut so memory stays bounded; the cut does not count as a new line.

    The stream is read into one reused array, its incomplete last line moved to the front for the
    next read: a buffer with nothing to normalise or unwrap (nearly all of them) is that array,
    valid until the next buffer is asked for, so no byte is copied in Python on the way to RE2.
    """
    buf = bytearray(size + max(size, MAX_LINE_BYTES))  # a carry is shorter than either
    view = memoryview(buf)
    have = 0  # bytes carried at the front: a line without its newline yet
    while got := stream.readinto(view[have : have + size]):  # type: ignore[attr-defined]
        end = have + got
        cut = buf.rfind(b"\n", have, end)  # a carry holds no newline
        if cut < 0:
            if end < MAX_LINE_BYTES:
                have = end
                continue
            yield _cleaned(buf, end)
            have = 0
            continue
        yield _cleaned(buf, cut + 1)
        have = end - cut - 1
        buf[:have] = bytes(view[cut + 1 : end])  # a copy: the two ranges may overlap
    if have:
        last = unwrap(normalise(bytes(view[:have])) + b"\n")
        yield last, len(last)


def _cleaned(buf: bytearray, length: int) -> Buffer:
    """The first `length` bytes of `buf` as `normalise` then `unwrap` leave them: `buf` itself
    when neither has work (found with memchr, not a pass in Python), else a normalised copy."""
    if buf.find(b"\r", 0, length) < 0 and buf.find(b"\x1b", 0, length) < 0:
        if wrap_width(bytes(buf[: min(length, WRAP_SAMPLE)])) is None:
            return buf, length
        data = unwrap(bytes(buf[:length]))
    else:
        data = unwrap(normalise(bytes(buf[:length])))
    return data, len(data)


def normalise(data: bytes) -> bytes:
    """CRLF to LF, lone CR to space, ANSI colour and cursor sequences (CSI) removed, so a
    coloured `[rank0]:` prefix is still a prefix (cheap: only when a CR or an ESC is present)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b" ")
    if b"\x1b" in data and b"\x1b[" in data:  # memchr first: a two-byte find is slow
        data = _CSI.sub(b"", data)
    return data


#: Bytes at the start of a buffer in which a terminal's hard wrap is looked for.
WRAP_SAMPLE = 64 << 10
#: The narrowest terminal whose wrapping is undone.
WRAP_MIN = 60


def wrap_width(data: bytes) -> int | None:
    """The width a terminal hard-wrapped this text at, or None.

    A copied terminal screen cuts every long record at the same column, mid-word: the widest
    width (in characters, at least `WRAP_MIN`) that two different lines of the sample share is
    the wrap when at least half the lines near or past it have exactly it, at most one line (a
    glued progress bar) is wider, and at least one of them cuts a word or a number in two.
    Fixed-format training lines share a width too, but end where a record ends.
    """
    sample = data[:WRAP_SAMPLE]
    lines = sample.split(b"\n")[:-1]
    if not lines:
        return None
    # Runs on every buffer read: ASCII text needs no per-line count, the cheap tests come first.
    widths = list(map(len, lines)) if sample.isascii() else [columns(line) for line in lines]
    seen: dict[int, set[bytes]] = {}
    for line, w in zip(lines, widths, strict=True):
        if w >= WRAP_MIN:
            seen.setdefault(w, set()).add(line)
    wide = [w for w, texts in seen.items() if len(texts) >= 2]
    if not wide:
        return None
    width = max(wide)
    if sum(w > width for w in widths) > 1:
        return None
    near = {line for line, w in zip(lines, widths, strict=True) if w > width * 9 // 10}
    if 2 * len(seen[width]) < len(near):
        return None
    if not any(widths[i] == width and _same_class(lines[i][-1:], lines[i + 1][:1])
               for i in range(len(lines) - 1)):
        return None
    return width


def _same_class(a: bytes, b: bytes) -> bool:
    """Two ASCII letters or two digits: a word or a number cut in two."""
    return (a.isalpha() and b.isalpha()) or (a.isdigit() and b.isdigit())


def columns(line: bytes) -> int:
    """Characters in a UTF-8 line (the bytes that do not continue a character): the columns a
    terminal gave it, wide characters aside."""
    return len(line.translate(None, _CONTINUATION))


_CONTINUATION = bytes(range(0x80, 0xC0))


def unwrap(data: bytes) -> bytes:
    """Text hard-wrapped by a terminal with each record joined back into one line.

    A line of the wrap width (or wider: a progress bar glued to its start) continues on the
    next, unless it ends in padding (two spaces). The newlines removed are put back after the
    joined record, as empty lines, so line numbers and byte offsets of everything else stay
    those of the file.
    """
    width = wrap_width(data)
    if width is None:
        return data
    out: list[bytes] = []
    held = 0
    for line in data.split(b"\n")[:-1]:
        if len(line) >= width and columns(line) >= width and not line.endswith(b"  "):
            out.append(line)
            held += 1
            continue
        out.append(line + b"\n" * (held + 1))
        held = 0
    if held:
        out.append(b"\n" * held)
    return b"".join(out)


#: An ANSI control sequence: ESC [, parameter bytes, intermediate bytes, one final byte.
_CSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")


def line_rank(text: str, file_rank: int | None, at: int = 0) -> int | None:
    """The rank that printed the text at character `at` of a line: the last `[rankN]:` or
    `[defaultN]:` prefix before it (records joined on one line keep their own ranks), the line's
    leading prefix, its message, then the file name."""
    joined = list(_JOINED_RANK.finditer(text, 0, at + 1))
    found = (joined[-1] if joined else _PREFIX_RANK.match(text)) or _MESSAGE_RANK.search(text)
    if found:
        return int(next(g for g in found.groups() if g is not None))
    return file_rank


#: Lines either side of an evidence line whose rank says who printed it, when it names none.
NEIGHBOUR_LINES = 3


def _rank_at(buf: bytes, start: int, end: int, text: str, rank_of_file: int | None,
             offset: int) -> int | None:
    """`line_rank` of the text at `offset`, else the file's rank, else the rank of the nearest
    line within `NEIGHBOUR_LINES` that names one (a traceback whose launcher prefix is on its
    other lines), unless the lines before and after at that distance disagree."""
    own = line_rank(text, None, len(buf[start:offset].decode("utf-8", "replace")))
    if own is not None or rank_of_file is not None:
        return own if own is not None else rank_of_file
    before, after = start, (end if end >= 0 else len(buf))
    for _ in range(NEIGHBOUR_LINES):
        found = set()
        if before > 0:
            begin = buf.rfind(b"\n", 0, before - 1) + 1
            found.add(line_rank(buf[begin : before - 1].decode("utf-8", "replace"), None))
            before = begin
        if after < len(buf) - 1:
            stop = buf.find(b"\n", after + 1)
            stop = len(buf) if stop < 0 else stop
            found.add(line_rank(buf[after + 1 : stop].decode("utf-8", "replace"), None))
            after = stop
        found.discard(None)
        if found:
            return found.pop() if len(found) == 1 else None
    return None


def file_rank(name: str) -> int | None:
    """Rank from a per-rank file name (`rank3.log`, torchrun's `<log_dir>/.../3/stderr.log`)."""
    path = PurePath(name)
    found = _FILE_RANK.search(path.name)
    if found:
        return int(found.group(1))
    if path.stem in ("stdout", "stderr") and re.fullmatch(r"[0-9]{1,6}", path.parent.name):
        return int(path.parent.name)
    return None


def timestamp(text: str) -> str | None:
    """The last timestamp in `text`, whatever its format, as sortable `MMDDhhmmss.fffffffff`.

    The year is ignored because glog lines as ProcessGroupNCCL prints them have none, and their
    month is not zero-padded (`E710 18:00:32` is July 10).
    """
    last = None
    for regex in (_ISO_TIME, _GLOG_TIME):
        for found in regex.finditer(text):
            if last is None or found.start() > last.start():
                last = found  # the nearest timestamp of any format, not the last of the first
    if last is None:
        return None
    mo, d, h, mi, s, frac = last.groups()
    return f"{mo.zfill(2)}{d}{h}{mi}{s}.{(frac or '').ljust(9, '0')[:9]}"


def scan(
    stream: IO[bytes],
    name: str,
    matcher: Matcher,
    deadline: float | None = None,
    progress: Callable[[int], None] | None = None,
    buffer_bytes: int = BUFFER_BYTES,
) -> FileScan:
    """Match every fingerprint against one log; `deadline` is a `time.monotonic()` value."""
    part = _scan_part(buffers(stream, buffer_bytes), name, matcher, deadline, progress)
    return _merge(name, [part], matcher)


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


def _scan_part(
    bufs: Iterable[Buffer],
    name: str,
    matcher: Matcher,
    deadline: float | None,
    progress: Callable[[int], None] | None,
    before: bytes = b"",
) -> _Part:
    """One stretch of whole lines scanned; `before` is the text preceding it (for timestamps).

    Every loop here is bounded: at most `EVIDENCE_CAP` lines per fingerprint and Root Cause
    headings, and only the `rank :` lines that can belong to a heading (within `ROOT_SPAN`
    lines after one, or at the stretch's start where a heading may sit in the stretch before).
    """
    rank_of_file = file_rank(name)
    evidence: list[Evidence] = []
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
        hits = matcher.set.Match(view) or []
        buf = bytes(view) if hits else b""  # a buffer with hits is read from a copy, lines and all
        located: list[tuple[int, int]] = []  # (offset, probe index)
        for index in hits:
            if counts.get(index, 0) >= EVIDENCE_CAP and index != rank_at:
                continue
            regex, pos = matcher.regexes[index], 0
            while (m := regex.search(buf, pos)) is not None:
                located.append((m.start(), index))
                pos = buf.find(b"\n", m.start()) + 1  # one hit per line, as the browser does
                if index != rank_at:
                    counts[index] = counts.get(index, 0) + 1
                    if counts[index] >= EVIDENCE_CAP:
                        break
                if pos <= 0:
                    break
        located.sort()
        line, pos = line_base, 0
        for offset, index in located:
            line += buf.count(b"\n", pos, offset)
            pos = offset
            start = buf.rfind(b"\n", 0, offset) + 1
            end = buf.find(b"\n", offset)
            text = buf[start : end if end >= 0 else len(buf)].decode("utf-8", "replace")
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
            probe = matcher.probes[index]
            evidence.append(
                Evidence(
                    entry=probe.entry_id,
                    title=probe.title,
                    file=name,
                    line=line + 1,
                    rank=_rank_at(buf, start, end, text, rank_of_file, offset),
                    text=text.strip()[:TEXT_CHARS],
                    fingerprint=probe.fingerprint.id,
                    indicates=probe.fingerprint.indicates,
                    consequence=probe.fingerprint.collateral,
                    specificity=matcher.specificity[index],
                    timestamp=timestamp(text) or earlier_timestamp(buf, start, tail),
                )
            )
        line_base = line + data.count(b"\n", pos, length)  # lines past the last hit
        tail = bytes(view[-TIMESTAMP_WINDOW:])
        if progress:
            progress(total)
        if deadline is not None and time.monotonic() > deadline:
            raise DiagnoseTimeout(matcher.slowest(bytes(view[: 1 << 20])), name)
    evidence.sort(key=lambda e: e.line)
    return _Part(evidence, counts, roots, rank_lines, ranks, line_base, total)


def _merge(name: str, parts: list[_Part], matcher: Matcher) -> FileScan:
    """The stretches of one log as one scan: lines renumbered, the first `EVIDENCE_CAP` lines of
    each fingerprint kept (what one pass over the whole log keeps), Root Cause headings paired
    with their `rank :` lines across stretch boundaries, in one linear pass."""
    evidence: list[Evidence] = []
    counts: dict[int, int] = {}
    roots: list[int] = []
    rank_lines: list[tuple[int, int]] = []
    ranks: set[int] = set()
    base = 0
    for part in parts:
        for ev in part.evidence:
            index = matcher.index[(ev.entry, ev.fingerprint)]
            if counts.get(index, 0) < EVIDENCE_CAP:
                counts[index] = counts.get(index, 0) + 1
                evidence.append(replace(ev, line=ev.line + base) if base else ev)
        roots += [r + base for r in part.roots]  # each part holds at most EVIDENCE_CAP
        rank_lines += [(ln + base, r) for ln, r in part.rank_lines]
        ranks |= part.ranks
        base += part.lines
    for index in range(matcher.root_index, matcher.root_index + 3):
        counts.pop(index, None)
    return FileScan(name, tuple(evidence), counts, pair_roots(roots[:EVIDENCE_CAP], rank_lines),
                    base, sum(p.bytes for p in parts), tuple(sorted(ranks)[:MAX_RANKS]))


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
    stream, under = open_log(path)
    with stream:
        if stream is not under or path == "-":
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

    with multiprocessing.get_context("fork").Pool(min(jobs, len(cuts))) as pool:
        parts, done = [], 0
        work = [(path, name, start, end, deadline) for start, end in cuts]
        for part in pool.imap(_pool_segment, work):
            done += part.bytes
            if progress:
                progress(done)
            parts.append(part)
    return _merge(name, parts, matcher)


#: A plain log is scanned in stretches of at most about this many bytes (cut at a newline).
SEGMENT_BYTES = 64 << 20
_POOL_MATCHER: Matcher | None = None


def segments(stream: IO[bytes], size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges covering the file, each ending just after a newline (or at the
    end): the file is read forward once in all, even when it is one enormous line.

    The stretches are of one length, at most `SEGMENT_BYTES` (a short last one would leave a
    core idle while the other scans it).
    """
    stride = -(-size // max(1, -(-size // SEGMENT_BYTES)))
    cuts, start, pos = [], 0, 0
    while (target := (len(cuts) + 1) * stride) < size:  # from the file's start: no drift
        pos = max(pos, target)
        stream.seek(pos)
        while True:
            block = stream.read(1 << 16)
            if not block:
                pos = size
                break
            found = block.find(b"\n")
            if found >= 0:
                pos += found + 1
                break
            pos += len(block)
        if pos >= size:
            break
        cuts.append((start, pos))
        start = pos
    cuts.append((start, size))
    return cuts


class _Slice:
    """Bytes `start` to `end` of a file, read like a stream."""

    def __init__(self, file: IO[bytes], end: int) -> None:
        self.file, self.left = file, end - file.tell()

    def readinto(self, into: memoryview) -> int:
        got = self.file.readinto(into[: min(len(into), self.left)])  # type: ignore[attr-defined]
        self.left -= got
        return got


def _scan_segment(
    path: str, name: str, start: int, end: int, deadline: float | None, matcher: Matcher
) -> _Part:
    with open(path, "rb") as file:
        file.seek(max(0, start - TIMESTAMP_WINDOW))
        before = file.read(start - file.tell())
        return _scan_part(buffers(_Slice(file, end)), name, matcher, deadline, None,  # type: ignore[arg-type]
                          before)


def _pool_segment(work: tuple[str, str, int, int, float | None]) -> _Part:
    assert _POOL_MATCHER is not None
    return _scan_segment(*work, _POOL_MATCHER)


def earlier_timestamp(buf: bytes, start: int, before: bytes = b"",
                      window: int = TIMESTAMP_WINDOW) -> str | None:
    """The timestamp of the nearest earlier line within `window` bytes (traceback lines have none,
    the log line before them usually does); `before` is the text preceding `buf`."""
    head = buf[max(0, start - window) : start]
    if start < window and before:
        head = (before + head)[-window:]
    return timestamp(head.decode("utf-8", "replace"))


def entry_score(evidence: list[Evidence], shared: set[tuple[str, int]]) -> float:
    """Sum over distinct fingerprints of weight x (1 + 0.1 x extra lines, at most five).

    Extra lines count once per rank and text: a rank that prints the same line a thousand times
    (a warning in a loop) is one piece of evidence, not a thousand. A line that fingerprints of
    several entries match counts as supporting at most for each: it cannot decide between them,
    so the context lines (frames, warnings) do.
    """
    seen: dict[str, set[tuple[int | None, str]]] = {}
    weight: dict[str, float] = {}
    for ev in evidence:
        seen.setdefault(ev.fingerprint, set()).add((ev.rank, ev.text))
        w = WEIGHTS[ev.indicates] * (COLLATERAL_FACTOR if ev.collateral else 1.0)
        if (ev.file, ev.line) in shared:
            w = min(w, WEIGHTS["supporting"])
        weight[ev.fingerprint] = max(weight.get(ev.fingerprint, 0.0), w)
    score = sum(w * (1 + 0.1 * min(len(seen[fp]) - 1, 5)) for fp, w in weight.items())
    return round(score, 2)


def tier(evidence: Iterable[Evidence], shared: set[tuple[str, int]]) -> int:
    """2: a decisive line that is neither collateral nor matched by another entry too; 1: other
    evidence that is not collateral; 0: collateral only. Candidates sort by tier first, so a
    wrapper never outranks what it wraps and a generic line never outranks an exact error."""
    own = [e for e in evidence if not e.collateral]
    if any(e.indicates == "decisive" and (e.file, e.line) not in shared for e in own):
        return 2
    return 1 if own else 0


def rank_key(c: Candidate) -> tuple[int, float, float, int, str]:
    """Best first: tier, score, the strongest kind of line it has (an entry that calls the line
    decisive beats one that calls it supporting), the most specific pattern among those lines,
    then the id (deterministic, never decisive in practice)."""
    strongest = max(WEIGHTS[e.indicates] for e in c.evidence)
    specific = max(e.specificity for e in c.evidence if WEIGHTS[e.indicates] == strongest)
    return (-c.strength, -c.score, -strongest, -specific, c.id)


def first_failure(evidence: list[Evidence], order: dict[str, int]) -> Evidence | None:
    """The earliest line: by timestamp when every candidate has one, else by file then line."""
    if not evidence:
        return None
    if all(e.timestamp for e in evidence):
        return min(evidence, key=lambda e: (e.timestamp or "", order[e.file], e.line))
    return min(evidence, key=lambda e: (order[e.file], e.line))


def diagnose(scans: list[FileScan]) -> Diagnosis:
    """Rank the entries the scans point to and find the rank where the failure began.

    Rules (mirrored in `diagnose-worker.js`): when there is decisive or supporting evidence from a
    fingerprint that is not `collateral` (a rank that really failed), the lines of `collateral`
    fingerprints are marked collateral and weigh little. An entry whose only evidence is `context`
    lines is no candidate. The first failure is the torchrun Root Cause rank when a block names
    one; else the earliest decisive line that is not collateral; for a pure collective timeout,
    the rank whose last enqueued NCCL work is lowest (it is the one behind); else the earliest
    line of the best candidate.
    """
    order = {s.file: i for i, s in enumerate(scans)}
    evidence = [ev for s in scans for ev in s.evidence]
    primary = [e for e in evidence if e.indicates == "decisive" and not e.consequence]
    if any(e.indicates in ("decisive", "supporting") and not e.consequence for e in evidence):
        evidence = [replace(e, collateral=True) if e.consequence else e for e in evidence]
    by_entry: dict[str, list[Evidence]] = {}
    owners: dict[tuple[str, int], set[str]] = {}
    for ev in evidence:
        by_entry.setdefault(ev.entry, []).append(ev)
        owners.setdefault((ev.file, ev.line), set()).add(ev.entry)
    shared = {where for where, ids in owners.items() if len(ids) > 1}
    matches = []
    for entry_id, found in by_entry.items():
        if all(e.indicates == "context" for e in found):
            continue
        found.sort(key=lambda e: (order[e.file], e.line))
        benign = all(e.indicates == "benign" for e in found)
        score = entry_score(found, shared)
        matches.append(Candidate(entry_id, found[0].title, score, benign, tuple(found),
                                 tier(found, shared)))
    matches.sort(key=rank_key)
    first, reason = _initiating(scans, matches, primary, order)
    rank = first.rank if first else None
    roots = [r for s in scans for _, r in s.root_ranks]
    if roots:
        rank, reason = roots[0], "torchrun Root Cause (first observed failure) block"
        in_rank = [e for e in primary or (matches[0].evidence if matches else ()) if e.rank == rank]
        first = first_failure(in_rank, order)
    known = {r for s in scans if (r := file_rank(s.file)) is not None}
    spoke = {e.rank for e in evidence}
    if any(r is not None for r in spoke):  # a launcher's ranks, once some line names its rank
        known |= {r for s in scans for r in s.ranks}
    silent = tuple(sorted(known - spoke))
    return Diagnosis(tuple(matches), rank, first, reason, tuple(scans), silent)


def _initiating(
    scans: list[FileScan], matches: list[Candidate], primary: list[Evidence], order: dict[str, int]
) -> tuple[Evidence | None, str | None]:
    """The first failure's evidence line and how it was chosen (before any Root Cause block)."""
    if primary:
        first = first_failure(primary, order)
        how = "timestamps" if all(e.timestamp for e in primary) else "line order"
        return first, f"earliest decisive error ({how})"
    if not matches:
        return None, None
    top = list(matches[0].evidence)
    behind = [
        (int(m.group(1)), e)
        for e in top
        if e.rank is not None
        for m in [_ENQUEUED.search(e.text)]
        if m
    ]
    if len({n for n, _ in behind}) > 1:
        lowest = min(n for n, _ in behind)
        first = min((e for n, e in behind if n == lowest), key=lambda e: (order[e.file], e.line))
        return first, "lowest last enqueued NCCL work (the rank that fell behind)"
    return first_failure(top, order), "earliest line of the best candidate"


def entry_link(entry_id: str, base_url: str | None) -> str:
    """Where a reader finds the entry: under the configured base URL, else the built site."""
    if base_url:
        return f"{base_url.rstrip('/')}/entries/{entry_id}.html"
    return f"site/entries/{entry_id}.html"


def evidence_json(ev: Evidence) -> dict[str, Any]:
    """One evidence line as the `--json` output and the browser page show it."""
    return {
        "file": ev.file,
        "line": ev.line,
        "rank": ev.rank,
        "text": ev.text,
        "fingerprint": ev.fingerprint,
        "indicates": ev.indicates,
        "collateral": ev.collateral,
        "timestamp": ev.timestamp,
    }


def as_json(result: Diagnosis, base_url: str | None, top: int | None = None) -> dict[str, Any]:
    """The `--json` object: `matches` best first, the initiating rank and per-file totals."""
    matches = result.matches[:top] if top else result.matches
    return {
        "matches": [
            {
                "id": c.id,
                "title": c.title,
                "score": c.score,
                "benign": c.benign,
                "possible": c.possible,
                "url": entry_link(c.id, base_url),
                "evidence": [evidence_json(e) for e in c.evidence],
            }
            for c in matches
        ],
        "initiating_rank": result.initiating_rank,
        "initiating": evidence_json(result.initiating) if result.initiating else None,
        "initiating_reason": result.initiating_reason,
        "silent_ranks": list(result.silent_ranks),
        "files": [{"file": s.file, "lines": s.lines, "bytes": s.bytes} for s in result.files],
    }


def fingerprint_rows(entry: Entry) -> list[dict[str, Any]]:
    """An entry's fingerprints as the browser matcher reads them, each with what the page's
    verdict shows as `report.cause_and_fix` does: the title of the root cause the line points
    to (`cause`, None when none), the entry's first root cause and its first fix step."""
    causes = {rc.id: rc.title for rc in entry.root_causes}
    return [
        {
            "entry": entry.id,
            "title": entry.title,
            "id": fp.id,
            "pattern": fp.pattern,
            "program": browser_program(fp),
            "ignore_case": fp.ignore_case,
            "indicates": fp.indicates,
            "collateral": fp.collateral,
            "specificity": literal_length(fp.pattern),
            "cause": causes.get(fp.cause) if fp.cause else None,
            "first_cause": entry.root_causes[0].title,
            "fix": entry.fix[0].title,
        }
        for fp in entry.fingerprints
    ]


def export_data(entries: Iterable[Entry]) -> dict[str, Any]:
    """Everything the browser matcher needs, so its rules cannot drift from these constants."""
    return {
        "fingerprints": [row for e in sorted(entries, key=lambda e: e.id)
                         for row in fingerprint_rows(e)],
        "weights": WEIGHTS,
        "collateral_factor": COLLATERAL_FACTOR,
        "evidence_cap": EVIDENCE_CAP,
        "text_chars": TEXT_CHARS,
        "buffer_bytes": BUFFER_BYTES,
        "max_line_bytes": MAX_LINE_BYTES,
        "timestamp_window": TIMESTAMP_WINDOW,
        "root_cause": ROOT_CAUSE,
        "root_rank": ROOT_RANK,
        "root_span": ROOT_SPAN,
        "launcher_ranks": LAUNCHER_RANKS,
        "wrap_sample": WRAP_SAMPLE,
        "wrap_min": WRAP_MIN,
        "neighbour_lines": NEIGHBOUR_LINES,
        "max_ranks": MAX_RANKS,
        "prefix_rank": _PREFIX_RANK.pattern,
        "message_rank": _MESSAGE_RANK.pattern,
        "joined_rank": _JOINED_RANK.pattern,
        "file_rank": _FILE_RANK.pattern,
        "iso_time": _ISO_TIME.pattern,
        "glog_time": _GLOG_TIME.pattern,
        "enqueued": _ENQUEUED.pattern,
    }
