"""Fleet triage: every job under some folders diagnosed with the engine of `nanopedia diagnose`,
then summed up for a platform team: which entries cost the most jobs, which hosts and ranks keep
failing first (a bad GPU), and which failures the encyclopedia does not know yet.

Python API, for a pipeline that has its own scheduler (Spark, Airflow, a job-failure hook)::

    from nanopedia.diagnosis.triage import triage
    result = triage(["/logs/week-32"], jobs=8)        # folders and files, grouped as the CLI does
    result = triage({"job-17": lines})                # a mapping job -> lines (str or bytes) ...
    result = triage({"job-18": {"rank0.log": l0, "rank1.log": l1}})   # ... or -> {file: lines}
    result.jobs[0]["verdict"]                         # the entry id of the first job, or None
    result.summary["entries"][0]                      # {"id": ..., "jobs": 312, "possible": 4, ...}
    json.dumps(result.as_json(), indent=2, sort_keys=True)   # what `--format json` prints

`TriageResult.as_json()` follows `generator/diagnosis/triage.schema.json` (`"schema_version": 1`; removing or
renaming a field bumps the version, adding one does not). `stream()` yields the same job records
one at a time, in job order, for a fleet too large to hold; `Summary` folds them.

Jobs (`find_jobs`): a folder holding torchrun `attempt_<n>/` folders (or rank-numbered folders
with `stdout.log`/`stderr.log`) is one job with every log below it; in any other folder, the log
files whose names carry a rank (`rank3.log`, `worker-2.err`, the rule `diagnose` uses) are one job,
the folder; every other log file is a job of its own (`slurm-<id>.out`, `train.log.gz`). Log files
are named `*.log`, `*.out`, `*.err`, `*.txt`, each optionally `.gz`; a file given on the command
line is a job whatever its name. `--job-pattern` replaces these rules by a glob (`*` and `?`
within one path segment, `**` across segments, `[...]`) matched against paths relative to each
PATH: a matching folder is one job with every log file below it, a matching file is a job.

Each file is opened with `diagnose.open_log` and its first `HEAD_BYTES` checked: NUL bytes there
make it binary, no line break in the first `MAX_LINE_BYTES` makes it one huge line (not a log);
both are skipped, named, as are unreadable files and files past `max_file_bytes` (unpacked). No
skip is fatal, and no file is read past those limits, so memory and time stay bounded.

The first failure's host is, in this order: a host the initiating line names itself (NCCL's
`host:pid:tid [dev]` prefix, Open MPI's `[host:pid]`, a pdsh/DeepSpeed `host: ` prefix, SLURM's
`srun: error: host: task N`, `slurmstepd-host:` and `*** JOB n ON host CANCELLED`); else the host
that the head of the same file (its first `HEAD_BYTES`) names for that rank (NCCL's init lines);
else the host the heads of the job's files name for that rank; else the only host the head of the
file names. Names ending like source files (`train.py`) are never hosts.

Jobs are diagnosed in a process pool (`jobs`, a `Matcher` built once per process) or, with
`ray`, as a Ray Data `map_batches` over the job list (Ray is imported only then). Both return
records in job order, identical whatever the scheduling.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import re2
from nanopedia.diagnosis import scan as diagnose
from nanopedia.errors import Problem
from nanopedia.model import Entry

#: Version of the JSON this module writes (`triage.schema.json`).
SCHEMA_VERSION = 1
SCHEMA = Path(__file__).resolve().parent / "triage.schema.json"
"""The JSON Schema of `TriageResult.as_json()`, shipped with the package."""

#: Bytes of each file read first: checked for NUL bytes, and searched for host names.
HEAD_BYTES = 256 << 10
#: A file with no line break in this many bytes is one line, not a log.
MAX_LINE_BYTES = diagnose.MAX_LINE_BYTES
#: Default limit of a file's (unpacked) size; larger files are skipped, named.
MAX_FILE_BYTES = 2 << 30
#: Default seconds one job may take before its remaining files are skipped.
JOB_DEADLINE = 300.0
#: Candidates kept per job, and evidence lines kept per candidate.
TOP = 3
EVIDENCE_KEPT = 3
#: Characters of an evidence line kept in a job's record (`diagnose --format json` keeps 2,000):
#: 10,000 jobs must not make a JSON of gigabytes.
EVIDENCE_CHARS = 500
#: Error-looking lines: distinct (normalised) lines counted per job, lines looked at per file,
#: and lines kept in the record of a job that no entry matched.
ERROR_KEYS = 256
ERROR_LINES_PER_FILE = 2000
ERROR_LINES_KEPT = 5
#: Hosts kept in a job's record.
HOSTS_KEPT = 32
#: A host or rank is shown when it failed first in at least this many jobs.
REPEATED = 2
#: Bounds of the summary, whatever the fleet: named skips, unmatched jobs listed, distinct error
#: lines counted across jobs, and those shown.
SKIPS_KEPT = 1000
UNMATCHED_KEPT = 1000
GAP_KEYS = 20_000
GAPS_SHOWN = 50
#: Jobs handed to one Ray Data dataset, and per batch.
RAY_WINDOW = 20_000
RAY_BATCH = 16

#: Why a file or folder was not diagnosed.
SKIP_REASONS = {
    "unreadable": "could not be opened or read",
    "binary": f"NUL bytes in its first {HEAD_BYTES >> 10} KiB: not a text log",
    "single-line": f"no line break in its first {MAX_LINE_BYTES >> 20} MiB: not a log",
    "too-large": "larger than the size limit (--max-file-bytes)",
    "deadline": "the job's deadline passed before it was read (--deadline)",
    "not-regular": "not a regular file (a pipe, socket or device)",
    "empty-folder": "an empty folder",
    "no-logs": "no log files below it",
}

LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
_ATTEMPT = re.compile(r"attempt_\d+")
_RANK_DIR = re.compile(r"\d{1,6}")
_STD = ("stdout.log", "stderr.log")


class TriageError(Exception):
    """Bad usage: a path that does not exist, a bad pattern, Ray asked for but not installed."""


@dataclass(frozen=True, slots=True)
class Job:
    """One training job: the logs that are diagnosed together."""

    name: str
    """The folder or file, as the given path names it."""
    layout: str
    """How it was found: `torchrun`, `ranks`, `file`, `pattern` or `lines`."""
    files: tuple[str, ...]
    """Its log files, in rank order (numbers compared as numbers)."""


@dataclass(frozen=True, slots=True)
class Skip:
    """A file or folder left out, and why (`SKIP_REASONS`)."""

    path: str
    reason: str
    detail: str
    job: str | None = None
    """The job it belonged to; None for a folder left out before any job was formed."""

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "detail": self.detail, "job": self.job}


@dataclass(frozen=True, slots=True)
class Options:
    """What every worker needs to know besides the entries."""

    top: int = TOP
    base_url: str | None = None
    max_file_bytes: int = MAX_FILE_BYTES
    """0: no limit."""
    deadline: float = JOB_DEADLINE


# --- finding jobs --------------------------------------------------------------------------------


def natural(text: str) -> tuple[Any, ...]:
    """Sort key comparing digit runs as numbers: `rank2` before `rank10`, `attempt_9` before
    `attempt_10`."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def is_log_name(name: str) -> bool:
    """`*.log`, `*.out`, `*.err`, `*.txt`, each optionally gzipped; no hidden files."""
    base = name[:-3] if name.endswith(".gz") else name
    return not name.startswith(".") and base.endswith(LOG_SUFFIXES)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A `--job-pattern` glob as a regex on `/`-separated relative paths."""
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    if not pattern:
        raise TriageError("--job-pattern is empty")
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                raise TriageError(f"--job-pattern {pattern!r}: '[' at {i + 1} is never closed")
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


@dataclass
class _Listing:
    dirs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Every regular file, log-named or not."""
    skips: list[Skip] = field(default_factory=list)
    empty: bool = True


def _join(folder: str, name: str) -> str:
    """`folder/name`, without a leading `./`: job names as a person would type them."""
    return name if folder == os.curdir else os.path.join(folder, name)


def _list(folder: str) -> _Listing:
    """A folder's subfolders, log files and odd entries, in natural order (symlinked folders
    are not followed: no loops)."""
    out = _Listing()
    try:
        with os.scandir(folder) as it:
            found = sorted(it, key=lambda e: natural(e.name))
    except OSError as err:
        out.skips.append(Skip(folder, "unreadable", err.strerror or str(err)))
        out.empty = False
        return out
    for e in found:
        out.empty = False
        path = _join(folder, e.name)
        try:
            if e.is_dir(follow_symlinks=False):
                out.dirs.append(e.name)
            elif e.is_file():
                out.files.append(e.name)
                if is_log_name(e.name):
                    out.logs.append(e.name)
            elif is_log_name(e.name):
                broken = e.is_symlink() and not os.path.exists(path)
                out.skips.append(Skip(path, "unreadable" if broken else "not-regular",
                                      "a broken symbolic link" if broken
                                      else SKIP_REASONS["not-regular"]))
        except OSError as err:
            out.skips.append(Skip(path, "unreadable", err.strerror or str(err)))
    return out


def _logs_below(folder: str, every_file: bool = False) -> tuple[list[str], list[Skip]]:
    """Every log file below `folder`, in natural order of its relative path."""
    files: list[str] = []
    skips: list[Skip] = []
    todo = [folder]
    while todo:
        here = todo.pop()
        listing = _list(here)
        files += [_join(here, f) for f in (listing.files if every_file else listing.logs)]
        skips += listing.skips
        todo += [_join(here, d) for d in listing.dirs]
    files.sort(key=lambda p: natural(os.path.relpath(p, folder)))
    return files, skips


def _is_run_folder(folder: str, listing: _Listing) -> bool:
    """torchrun's run folder: `attempt_<n>/` inside, or rank-numbered folders of std logs."""
    if any(_ATTEMPT.fullmatch(d) for d in listing.dirs):
        return True
    ranks = [d for d in listing.dirs if _RANK_DIR.fullmatch(d)]
    return bool(ranks) and all(
        any(os.path.isfile(os.path.join(folder, d, s)) for s in _STD) for d in ranks)


def _walk(folder: str) -> Iterator[Job | Skip]:
    listing = _list(folder)
    if listing.empty:
        yield Skip(folder, "empty-folder", SKIP_REASONS["empty-folder"])
        return
    yield from listing.skips
    if _is_run_folder(folder, listing):
        files, skips = _logs_below(folder)
        yield from (Skip(s.path, s.reason, s.detail, folder) for s in skips)
        yield Job(folder, "torchrun", tuple(files)) if files else \
            Skip(folder, "no-logs", SKIP_REASONS["no-logs"])
        return
    paths = [_join(folder, f) for f in listing.logs]
    if any(diagnose.file_rank(f) is not None for f in listing.logs):
        yield Job(folder, "ranks", tuple(paths))
    else:
        yield from (Job(p, "file", (p,)) for p in paths)
    for d in listing.dirs:
        yield from _walk(_join(folder, d))


def _walk_pattern(root: str, rel: str, regex: re.Pattern[str]) -> Iterator[Job | Skip]:
    folder = _join(root, rel) if rel else root
    listing = _list(folder)
    yield from listing.skips
    for name in listing.files:
        path = _join(folder, name)
        if regex.fullmatch(f"{rel}/{name}" if rel else name):
            yield Job(path, "pattern", (path,))
    for name in listing.dirs:
        sub = f"{rel}/{name}" if rel else name
        path = _join(root, sub)
        if not regex.fullmatch(sub):
            yield from _walk_pattern(root, sub, regex)
            continue
        files, skips = _logs_below(path)
        yield from (Skip(s.path, s.reason, s.detail, path) for s in skips)
        yield Job(path, "pattern", tuple(files)) if files else \
            Skip(path, "no-logs", SKIP_REASONS["no-logs"])


def find_jobs(paths: Iterable[str | os.PathLike[str]], pattern: str | None = None
              ) -> Iterator[Job | Skip]:
    """The jobs under `paths` (see the module docstring), and what was left out, in a stable
    order: paths as given, each walked in natural order. Raises `TriageError` first, for every
    path that does not exist."""
    given = [os.path.normpath(os.fspath(p)) for p in paths]
    missing = [p for p in given if not os.path.exists(p)]
    if missing:
        raise TriageError(f"no such file or directory: {', '.join(missing)}")
    regex = glob_regex(pattern) if pattern is not None else None
    return _find(given, pattern, regex)


def _find(given: list[str], pattern: str | None, regex: re.Pattern[str] | None
          ) -> Iterator[Job | Skip]:
    for path in given:
        if not os.path.isdir(path):
            yield Job(path, "file", (path,)) if os.path.isfile(path) else \
                Skip(path, "not-regular", SKIP_REASONS["not-regular"])
            continue
        found = False
        for item in _walk_pattern(path, "", regex) if regex else _walk(path):
            found = found or isinstance(item, Job) or item.reason == "empty-folder"
            yield item
        if not found:
            detail = (f"nothing below it matches --job-pattern {pattern!r}" if regex
                      else SKIP_REASONS["no-logs"] + " (*.log, *.out, *.err, *.txt, optionally "
                      ".gz; --job-pattern names other files)")
            yield Skip(path, "no-logs", detail)


# --- hosts and error lines -----------------------------------------------------------------------

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


#: An error-looking line: an exception class, an ERROR/FATAL level (glog's `E0429 13:55:49.38`
#: and PyTorch's `[E429 13:55:49.38 ...]` too), a crash message.
_ERRORISH = re2.compile(
    rb"(?:Error|Exception)\b|\b[EF]\d{3,4} \d\d:\d\d:\d\d\.|"
    rb"\b(?:ERROR|FATAL|CRITICAL|Fatal|fatal|error)\b|"
    rb"\b(?:failed|FAILED|Killed|Aborted|CANCELLED)\b|Segmentation fault|core dumped|"
    rb"terminate called")
_NORM_PREFIX = re.compile(
    r"^(?:\s*(?:\[[A-Za-z_]*\d{1,6}\]:|\[\d+,\d+\]<\w+>:|[A-Za-z][\w.-]*\d[\w.-]*: |"
    r"[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] ))*\s*", re.ASCII)
_NORM_RULES = [(re.compile(p, re.ASCII), r) for p, r in (
    (r"\x1b\[[0-?]*[ -/]*[@-~]", ""),
    (r"\b([IWEF])\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?", r"\1<time>"),
    (r"\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d+)?|\b\d\d:\d\d:\d\d(?:[.,]\d+)?", "<time>"),
    (r"(?:[A-Za-z]:)?(?:/[\w.@+~-]+){2,}/?", "<path>"),
    (r"\b0x[0-9a-fA-F]+\b|\b(?=[a-f]*\d)[0-9a-f]{8,}\b", "<hex>"),
    (r"\b\d+(?:\.\d+)*", "<n>"),
    (r"\s+", " "),
)]
#: Bytes of a line normalised (a 1 MiB line is cut first), characters of the normalised line,
#: and of its example.
ERROR_SOURCE_BYTES = 4096
ERROR_CHARS = 200
EXAMPLE_CHARS = 300


def normalise_error(text: str) -> str:
    """An error line with what differs between jobs collapsed: rank and host prefixes,
    timestamps, paths, hex, numbers; so the same failure in 40 jobs counts as one line."""
    text = _NORM_PREFIX.sub("", text, count=1)
    for regex, into in _NORM_RULES:
        text = regex.sub(into, text)
    return text.strip()[:ERROR_CHARS]


class ErrorLines:
    """Counts the error-looking lines of one job's bytes as the scan reads them: distinct
    normalised lines (at most `ERROR_KEYS`), each with its first occurrence."""

    def __init__(self) -> None:
        self.counts: dict[str, list[Any]] = {}  # text -> [count, order, example, file, line]
        self.file = ""
        self.carry = b""
        self.line = 0
        self.seen = 0

    def start(self, file: str) -> None:
        self.file, self.carry, self.line, self.seen = file, b"", 0, 0

    def feed(self, data: bytes) -> None:
        data = self.carry + data if self.carry else data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            self.carry = data[:MAX_LINE_BYTES]
            return
        self.carry = data[cut:][:MAX_LINE_BYTES]
        self._block(data[:cut])

    def finish(self) -> None:
        if self.carry:
            self._block(self.carry + b"\n")
        self.carry = b""

    def _block(self, block: bytes) -> None:
        if self.seen >= ERROR_LINES_PER_FILE:
            return
        counted, next_line = 0, 0
        for m in _ERRORISH.finditer(block):
            start = m.start()
            if start < next_line:
                continue
            begin = block.rfind(b"\n", 0, start) + 1
            end = block.find(b"\n", start)
            self.line += block.count(b"\n", counted, begin)
            counted, next_line = begin, end + 1
            raw = block[begin : min(end, begin + ERROR_SOURCE_BYTES)]
            self._add(raw.decode("utf-8", "replace"), self.line + 1)
            self.seen += 1
            if self.seen >= ERROR_LINES_PER_FILE:
                return
        self.line += block.count(b"\n", counted)

    def _add(self, raw: str, line: int) -> None:
        text = normalise_error(raw)
        if not text or text.startswith('File "'):
            return
        row = self.counts.get(text)
        if row is not None:
            row[0] += 1
        elif len(self.counts) < ERROR_KEYS:
            example = raw.translate(_CONTROLS).strip()[:EXAMPLE_CHARS]
            self.counts[text] = [1, len(self.counts), example, self.file, line]

    def top(self, n: int = ERROR_LINES_KEPT) -> list[dict[str, Any]]:
        """The most frequent lines, ties in order of first appearance."""
        rows = sorted(self.counts.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:n]
        return [{"text": t, "count": c, "example": ex, "file": f, "line": ln}
                for t, (c, _, ex, f, ln) in rows]


_CONTROLS = {c: " " for c in [*range(0x20), 0x7F]}


# --- one job -------------------------------------------------------------------------------------


class TooLarge(OSError):
    """A file unpacks past the size limit."""


class _Tapped(diagnose.Stream):
    """The head already read, then the rest of the stream; every byte goes to the error-line
    counter, and reading stops past `limit` bytes."""

    def __init__(self, head: bytes, stream: IO[bytes], limit: int, tap: ErrorLines) -> None:
        self.head, self.stream, self.limit, self.tap, self.total = head, stream, limit, tap, 0

    def read(self, size: int = -1) -> bytes:
        if self.head:
            data, self.head = self.head, b""
        else:
            data = self.stream.read(size)
        self.total += len(data)
        if self.limit and self.total > self.limit:
            raise TooLarge(f"more than {self.limit:,} bytes (--max-file-bytes)")
        self.tap.feed(data)
        return data


class _Lines(diagnose.Stream):
    """Lines (str or bytes, with or without their newline) as a binary stream, read lazily."""

    def __init__(self, lines: Iterable[str | bytes] | str | bytes) -> None:
        if isinstance(lines, (str, bytes)):
            lines = [lines]
        self.lines = iter(lines)
        self.pending = b""

    def read(self, size: int = -1) -> bytes:
        parts, n = [self.pending], len(self.pending)
        while size < 0 or n < size:
            line = next(self.lines, None)
            if line is None:
                break
            data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
            parts.append(data if data.endswith(b"\n") else data + b"\n")
            n += len(parts[-1])
        data = b"".join(parts)
        cut = len(data) if size < 0 else size
        self.pending = data[cut:]
        return data[:cut]

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *_: object) -> None:
        pass


Opener = Callable[[], IO[bytes]]


def _open(path: str, limit: int) -> IO[bytes]:
    """`diagnose.open_log`, refusing at once a plain file larger than `limit` (a gzip file is
    measured as it unpacks)."""
    if limit and os.path.getsize(path) > limit:
        with open(path, "rb") as raw:
            if raw.read(2) != b"\x1f\x8b":
                raise TooLarge(f"{os.path.getsize(path):,} bytes, more than {limit:,} "
                               "(--max-file-bytes)")
    return diagnose.open_log(path)[0]


def _read_head(stream: IO[bytes]) -> tuple[bytes, bool]:
    """The first `HEAD_BYTES` (more, up to `MAX_LINE_BYTES`, while no line break shows), and
    whether the stream ended there."""
    parts: list[bytes] = []
    n = 0
    while n < HEAD_BYTES or (n < MAX_LINE_BYTES and not any(b"\n" in p or b"\r" in p
                                                              for p in parts)):
        data = stream.read(HEAD_BYTES)
        if not data:
            return b"".join(parts), True
        parts.append(data)
        n += len(data)
    return b"".join(parts), False


class Worker:
    """What one process needs to triage jobs: the matcher, built once, and the entries by id."""

    def __init__(self, entries: Sequence[Entry], options: Options) -> None:
        self.matcher = diagnose.Matcher(entries)
        self.by_id = {e.id: e for e in entries}
        self.options = options

    def run(self, job: Job) -> dict[str, Any]:
        """The record of a job of files."""
        def opener(path: str) -> Opener:
            return lambda: _open(path, self.options.max_file_bytes)
        return self.run_streams(job.name, job.layout, [(p, opener(p)) for p in job.files])

    def run_streams(self, name: str, layout: str,
                    files: Iterable[tuple[str, Opener]]) -> dict[str, Any]:
        """Scan each file, diagnose them together, and keep what the summary needs."""
        deadline = time.monotonic() + self.options.deadline
        tap = ErrorLines()
        scans: list[diagnose.FileScan] = []
        skips: list[Skip] = []
        heads: dict[str, HeadHosts] = {}
        for file, open_file in files:
            if time.monotonic() > deadline:
                skips.append(Skip(file, "deadline", SKIP_REASONS["deadline"], name))
                continue
            try:
                with open_file() as stream:
                    head, ended = _read_head(stream)
                    if b"\0" in head[:HEAD_BYTES]:
                        skips.append(Skip(file, "binary", SKIP_REASONS["binary"], name))
                        continue
                    if not ended and b"\n" not in head and b"\r" not in head:
                        skips.append(Skip(file, "single-line", SKIP_REASONS["single-line"], name))
                        continue
                    heads[file] = head_hosts(head[:HEAD_BYTES], diagnose.file_rank(file))
                    tap.start(file)
                    tapped = _Tapped(head, stream, self.options.max_file_bytes, tap)
                    scans.append(diagnose.scan(tapped, file, self.matcher, deadline))  # type: ignore[arg-type]
                    tap.finish()
            except (TooLarge, diagnose.LogTooLarge) as err:
                skips.append(Skip(file, "too-large", str(err), name))
            except diagnose.DiagnoseTimeout:
                skips.append(Skip(file, "deadline", SKIP_REASONS["deadline"], name))
            except (OSError, EOFError) as err:
                reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
                skips.append(Skip(file, "unreadable", reason, name))
        return self._record(name, layout, scans, skips, heads, tap)

    def _record(self, name: str, layout: str, scans: list[diagnose.FileScan], skips: list[Skip],
                heads: dict[str, HeadHosts], tap: ErrorLines) -> dict[str, Any]:
        from nanopedia.diagnosis.report import with_answers

        result = diagnose.diagnose(scans)
        out = with_answers(result, self.by_id, self.options.base_url, self.options.top or None)
        for row in out["matches"]:
            row["evidence_count"] = len(row["evidence"])
            row["evidence"] = row["evidence"][:EVIDENCE_KEPT]
        for ev in [out["initiating"] or {}] + [e for m in out["matches"] for e in m["evidence"]]:
            if "text" in ev:
                ev["text"] = ev["text"][:EVIDENCE_CHARS]
        verdict = next((c for c in result.matches if not c.benign), None)
        status = "matched" if verdict else "skipped" if not scans else \
            "unmatched" if tap.counts else "clean"
        host, how = first_host(out["initiating"], result.initiating_rank, heads) if verdict \
            else (None, None)
        hosts = sorted(set().union(*(h.hosts for h in heads.values())) | ({host} - {None}))
        out.update({
            "job": name,
            "layout": layout,
            "status": status,
            "verdict": verdict.id if verdict else None,
            "confidence": ("possible" if verdict.possible else "certain") if verdict else None,
            "initiating_host": host,
            "host_rule": how,
            "hosts": hosts[:HOSTS_KEPT],
            "bytes": sum(s.bytes for s in scans),
            "lines": sum(s.lines for s in scans),
            "skipped": [s.as_json() for s in skips],
            "error_lines": [] if verdict else tap.top(),
        })
        if not verdict:
            out["initiating_rank"] = out["initiating"] = out["initiating_reason"] = None
        return out


# --- running jobs --------------------------------------------------------------------------------

_WORKER: Worker | None = None


def _init_worker(entries: Sequence[Entry], options: Options) -> None:
    import signal

    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _WORKER = Worker(entries, options)


def _run_job(job: Job) -> dict[str, Any]:
    assert _WORKER is not None, "the pool initializer runs first"
    return _WORKER.run(job)


def _local(items: Iterator[Job | Skip], entries: Sequence[Entry], options: Options,
           jobs: int) -> Iterator[dict[str, Any] | Skip]:
    """Jobs over a process pool, at most `4 x jobs` in flight, results in job order."""
    if jobs <= 1:
        worker = Worker(entries, options)
        yield from (worker.run(i) if isinstance(i, Job) else i for i in items)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs, _init_worker, (entries, options)) as pool:
        window: deque[Any] = deque()
        for item in items:
            window.append(item if isinstance(item, Skip) else pool.apply_async(_run_job, (item,)))
            while len(window) > 4 * jobs:
                head = window.popleft()
                yield head if isinstance(head, Skip) else head.get()
        while window:
            head = window.popleft()
            yield head if isinstance(head, Skip) else head.get()


def _import_ray() -> Any:
    """Ray with Ray Data, imported only for `--ray`."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise TriageError("--ray needs Ray: pip install 'nanopedia[ray]' (or 'ray[data]') "
                          f"({err})") from None
    return ray


class _RayWorker:
    """A Ray Data actor: the matcher built once, then batches of jobs (as JSON) to records."""

    def __init__(self, entries: list[Any], options: Options) -> None:
        import ray

        # `entries` is [ref]: a ref nested in a list is not resolved by Ray, so the actor's own
        # arguments stay small and a restarted actor can fetch the entries again.
        self.worker = Worker(ray.get(entries[0]), options)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy

        results = []
        for text in batch["job"]:
            row = json.loads(str(text))
            job = Job(row["name"], row["layout"], tuple(row["files"]))
            results.append(json.dumps(self.worker.run(job), sort_keys=True))
        return {"index": numpy.asarray(batch["index"], dtype=numpy.int64),
                "result": numpy.array(results, dtype=object)}


def _ray(items: Iterator[Job | Skip], entries: Sequence[Entry], options: Options, jobs: int,
         address: str) -> Iterator[dict[str, Any] | Skip]:
    """Jobs as a Ray Data map on the cluster at `address` (empty: a local instance of `jobs`
    CPUs, no dashboard), `RAY_WINDOW` jobs per dataset, results in job order."""
    import logging

    ray = _import_ray()
    started = not ray.is_initialized()
    try:
        if started and address:
            ray.init(address=address, logging_level=logging.WARNING)
        elif started:
            ray.init(num_cpus=jobs, include_dashboard=False, logging_level=logging.WARNING)
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise TriageError(f"cannot join the Ray cluster at {address or 'a local instance'}: "
                          f"{err}") from None
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # no plan and timing chatter
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "disabled"
        actors = jobs if not address else max(1, int(ray.cluster_resources().get("CPU", 1)))
        shared = [ray.put(list(entries))]
        while window := [item for _, item in zip(range(RAY_WINDOW), items, strict=False)]:
            rows = [{"index": i, "job": json.dumps(asdict(item))}
                    for i, item in enumerate(window) if isinstance(item, Job)]
            done: dict[int, dict[str, Any]] = {}
            ready = iter(range(len(window)))
            pending = next(ready, None)
            if rows:
                data = ray.data.from_items(rows).map_batches(
                    _RayWorker, fn_constructor_args=(shared, options), batch_size=RAY_BATCH,
                    compute=ray.data.ActorPoolStrategy(size=min(actors, len(rows))),
                    batch_format="numpy")
                for row in data.iter_rows():
                    done[int(row["index"])] = json.loads(row["result"])
                    while pending is not None and (isinstance(window[pending], Skip)
                                                   or pending in done):
                        yield window[pending] if pending not in done else done.pop(pending)
                        pending = next(ready, None)
            while pending is not None:  # a job Ray did not return is a KeyError: a bug
                yield done.pop(pending) if isinstance(window[pending], Job) else window[pending]
                pending = next(ready, None)
    finally:
        if started:
            ray.shutdown()


# --- the summary ---------------------------------------------------------------------------------


class Summary:
    """Folds job records (and skips) into the fleet's summary, in bounded memory: counters per
    entry, host and rank, and at most `GAP_KEYS` distinct error lines."""

    def __init__(self) -> None:
        self.status: Counter[str] = Counter()
        self.files = self.bytes = self.lines = 0
        self.titles: dict[str, str] = {}
        self.verdicts: Counter[str] = Counter()
        self.possible: Counter[str] = Counter()
        self.candidates: Counter[str] = Counter()
        self.host_jobs: Counter[str] = Counter()
        self.host_first: dict[str, Counter[str]] = {}
        self.rank_first: dict[int, Counter[str]] = {}
        self.gaps: dict[str, list[Any]] = {}  # text -> [jobs, example, job, file, line]
        self.unmatched: list[dict[str, Any]] = []
        self.unmatched_more = 0
        self.skip_reasons: Counter[str] = Counter()
        self.skips: list[dict[str, Any]] = []

    def add(self, item: dict[str, Any] | Skip) -> None:
        if isinstance(item, Skip):
            self._skip(item.as_json())
            return
        self.status[item["status"]] += 1
        self.files += len(item["files"])
        self.bytes += item["bytes"]
        self.lines += item["lines"]
        for skip in item["skipped"]:
            self._skip(skip)
        for m in item["matches"]:
            self.candidates[m["id"]] += 1
            self.titles.setdefault(m["id"], m["title"])
        self.host_jobs.update(item["hosts"])
        verdict = item["verdict"]
        if verdict:
            self.verdicts[verdict] += 1
            self.possible[verdict] += item["confidence"] == "possible"
            if item["initiating_host"]:
                self.host_first.setdefault(item["initiating_host"], Counter())[verdict] += 1
            if item["initiating_rank"] is not None:
                self.rank_first.setdefault(item["initiating_rank"], Counter())[verdict] += 1
        if item["status"] == "unmatched":
            self._gap(item)

    def _skip(self, skip: dict[str, Any]) -> None:
        self.skip_reasons[skip["reason"]] += 1
        if len(self.skips) < SKIPS_KEPT:
            self.skips.append(skip)

    def _gap(self, item: dict[str, Any]) -> None:
        if len(self.unmatched) < UNMATCHED_KEPT:
            self.unmatched.append({"job": item["job"], "error_lines": item["error_lines"]})
        else:
            self.unmatched_more += 1
        for row in item["error_lines"]:
            gap = self.gaps.get(row["text"])
            if gap is not None:
                gap[0] += 1
            elif len(self.gaps) < GAP_KEYS:
                self.gaps[row["text"]] = [1, row["example"], item["job"], row["file"], row["line"]]

    def as_json(self) -> dict[str, Any]:
        total = sum(self.status.values())
        matched = self.status["matched"]
        return {
            "jobs": {"total": total, **{s: self.status[s] for s in
                                        ("matched", "unmatched", "clean", "skipped")}},
            "files": {"scanned": self.files, "bytes": self.bytes, "lines": self.lines,
                      "skipped": sum(self.skip_reasons.values())},
            "entries": [
                {"id": i, "title": self.titles[i], "jobs": n,
                 "share": round(n / matched, 4), "possible": self.possible[i],
                 "possible_share": round(self.possible[i] / n, 4),
                 "candidate_jobs": self.candidates[i]}
                for i, n in sorted(self.verdicts.items(), key=lambda kv: (-kv[1], kv[0]))],
            "hosts": [
                {"host": h, "first_failures": sum(c.values()), "jobs": self.host_jobs[h],
                 "entries": _counts(c)}
                for h, c in sorted(self.host_first.items(),
                                   key=lambda kv: (-sum(kv[1].values()), kv[0]))
                if sum(c.values()) >= REPEATED],
            "ranks": [
                {"rank": r, "first_failures": sum(c.values()), "entries": _counts(c)}
                for r, c in sorted(self.rank_first.items(),
                                   key=lambda kv: (-sum(kv[1].values()), kv[0]))
                if sum(c.values()) >= REPEATED],
            "gaps": [
                {"text": t, "jobs": n, "example": ex, "job": job, "file": f, "line": ln}
                for t, (n, ex, job, f, ln) in sorted(self.gaps.items(),
                                                     key=lambda kv: (-kv[1][0], kv[0]))
                [:GAPS_SHOWN]],
            "unmatched": self.unmatched,
            "unmatched_more": self.unmatched_more,
            "skipped": {"by_reason": dict(sorted(self.skip_reasons.items())),
                        "files": self.skips,
                        "more": max(0, sum(self.skip_reasons.values()) - len(self.skips))},
        }


def _counts(c: Counter[str]) -> list[dict[str, Any]]:
    return [{"id": i, "jobs": n} for i, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


# --- the API -------------------------------------------------------------------------------------

Source = (str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
          | Mapping[str, Any])


@dataclass(frozen=True, slots=True)
class TriageResult:
    """Every job's record, in job order, and the fleet's summary: what `--format json` prints."""

    jobs: tuple[dict[str, Any], ...]
    """One record per job (see `triage.schema.json`, `$defs/job`)."""
    summary: dict[str, Any]
    """`Summary.as_json()`."""
    entries: dict[str, Any]
    """`{"used": n, "skipped": [problem, ...]}`: the entries the diagnosis could use."""

    def as_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "entries": self.entries,
                "jobs": list(self.jobs), "summary": self.summary}


def load_entries(entries: str | os.PathLike[str] | Sequence[Entry] | None
                 ) -> tuple[list[Entry], list[Problem]]:
    """The entries to match (default: the encyclopedia the package ships) and the problems of
    those left out."""
    if entries is not None and not isinstance(entries, (str, os.PathLike)):
        return list(entries), []
    from nanopedia.theme_dir import locate_entries

    root = Path(entries) if entries is not None else locate_entries()
    if not root.is_dir():
        raise TriageError(f"no such entries directory: {root}")
    return diagnose.usable_entries(root)


def stream(source: Source, entries: Sequence[Entry], *, jobs: int | None = None,
           ray: str | None = None, job_pattern: str | None = None,
           options: Options = Options()) -> Iterator[dict[str, Any] | Skip]:
    """Job records and skips, one at a time, in job order: `source` is a path, paths, or a
    mapping job name -> lines / {file name: lines} (diagnosed in this process, whatever `jobs`
    and `ray` say). Bad paths, a bad pattern and a missing Ray raise `TriageError` here, before
    any job runs; the cluster is joined at the first `next()`."""
    if isinstance(source, Mapping):
        return _from_lines(source, entries, options)
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    items = find_jobs(paths, job_pattern)
    workers = jobs or os.cpu_count() or 1
    if ray is not None:
        _import_ray()
        return _ray(items, entries, options, workers, ray)
    return _local(items, entries, options, workers)


def _from_lines(source: Mapping[str, Any], entries: Sequence[Entry], options: Options
                ) -> Iterator[dict[str, Any]]:
    worker = Worker(entries, options)
    for name, value in source.items():
        files = value.items() if isinstance(value, Mapping) else [(name, value)]
        yield worker.run_streams(
            str(name), "lines",
            [(str(f), (lambda v=v: _Lines(v))) for f, v in files])  # type: ignore[misc]


def triage(source: Source, *, entries: str | os.PathLike[str] | Sequence[Entry] | None = None,
           jobs: int | None = None, ray: str | None = None, job_pattern: str | None = None,
           top: int = TOP, base_url: str | None = None, max_file_bytes: int = MAX_FILE_BYTES,
           deadline: float = JOB_DEADLINE) -> TriageResult:
    """Triage a fleet and return every job's record with the summary.

    `source`: a folder or file, a list of them, or a mapping job name -> lines (or -> {file
    name: lines}). `entries`: a folder or a list of `Entry` (default: the shipped encyclopedia).
    `jobs`: worker processes (default: one per core). `ray`: a cluster address, or "" for a
    local Ray instance of `jobs` CPUs (needs `nanopedia[ray]`). Raises `TriageError` for bad
    usage; unreadable, binary or oversized files are skipped and named, never raised.
    """
    used, left_out = load_entries(entries)
    options = Options(top, base_url, max_file_bytes, deadline)
    summary = Summary()
    records = []
    for item in stream(source, used, jobs=jobs, ray=ray, job_pattern=job_pattern,
                       options=options):
        summary.add(item)
        if not isinstance(item, Skip):
            records.append(item)
    return TriageResult(tuple(records), summary.as_json(),
                        {"used": len(used), "skipped": [p.as_dict() for p in left_out]})
