"""Finding a fleet's jobs: which log files are diagnosed together, and what is left out.

A folder holding torchrun `attempt_<n>/` folders (or rank-numbered folders
with `stdout.log`/`stderr.log`) is one job with every log below it; in any other folder, the log
files whose names carry a rank (`rank3.log`, `worker-2.err`, the rule `diagnose` uses) are one job,
the folder; every other log file is a job of its own (`slurm-<id>.out`, `train.log.gz`). Log files
are named `*.log`, `*.out`, `*.err`, `*.txt`, each optionally `.gz`; a file given on the command
line is a job whatever its name. `--job-pattern` replaces these rules by a glob (`*` and `?`
within one path segment, `**` across segments, `[...]`) matched against paths relative to each
PATH: a matching folder is one job with every log file below it, a matching file is a job.
The structured evidence beside the logs counts as a log file here: torchrun's
`attempt_<n>/<rank>/error.json`, and JSON files named with a rank (`rank3.json`), read as
Flight Recorder dumps when their contents are one (`readers.is_evidence_name`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nanopedia.diagnosis import logs
from nanopedia.diagnosis.lines import file_rank
from nanopedia.diagnosis.readers import is_evidence_name

#: Bytes of each file read first: checked for NUL bytes, and searched for host names.
HEAD_BYTES = 256 << 10
#: A file with no line break in this many bytes is one line, not a log.
MAX_LINE_BYTES = logs.MAX_LINE_BYTES


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
    """A folder's subfolders, log files and odd entries, in natural order. Symbolic links are
    not followed, to folders (no loops) nor to files (one could point outside the tree, at a
    secret of the host, whose lines would be quoted in the report)."""
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
            elif e.is_file(follow_symlinks=False):
                out.files.append(e.name)
                if is_log_name(e.name) or is_evidence_name(e.name):
                    out.logs.append(e.name)
            elif is_log_name(e.name):
                link = e.is_symlink()
                broken = link and not os.path.exists(path)
                out.skips.append(
                    Skip(
                        path,
                        "unreadable" if broken else "not-regular",
                        "a broken symbolic link"
                        if broken
                        else "a symbolic link (not followed: it may point outside the folder)"
                        if link
                        else SKIP_REASONS["not-regular"],
                    )
                )
        except OSError as err:
            out.skips.append(Skip(path, "unreadable", err.strerror or str(err)))
    return out


def logs_below(folder: str, every_file: bool = False) -> tuple[list[str], list[Skip]]:
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
        any(os.path.isfile(os.path.join(folder, d, s)) for s in _STD) for d in ranks
    )


def _walk(top: str) -> Iterator[Job | Skip]:
    """The jobs of a folder and of every folder below it, depth first in natural order (a
    stack, not recursion: a tree may be thousands of folders deep)."""
    todo = [top]
    while todo:
        folder = todo.pop()
        listing = _list(folder)
        if listing.empty:
            yield Skip(folder, "empty-folder", SKIP_REASONS["empty-folder"])
            continue
        yield from listing.skips
        if _is_run_folder(folder, listing):
            files, skips = logs_below(folder)
            yield from (Skip(s.path, s.reason, s.detail, folder) for s in skips)
            yield (
                Job(folder, "torchrun", tuple(files))
                if files
                else Skip(folder, "no-logs", SKIP_REASONS["no-logs"])
            )
            continue
        paths = [_join(folder, f) for f in listing.logs]
        if any(file_rank(f) is not None for f in listing.logs):
            yield Job(folder, "ranks", tuple(paths))
        else:
            yield from (Job(p, "file", (p,)) for p in paths)
        todo += [_join(folder, d) for d in reversed(listing.dirs)]


def _walk_pattern(root: str, regex: re.Pattern[str]) -> Iterator[Job | Skip]:
    """The files and folders below `root` whose relative path matches `regex`, each a job, in
    the order of a depth-first walk; a stack of levels, not recursion (as `_walk`)."""
    stack = [_pattern_level(root, "", regex)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, str):  # a folder to walk into, there and then
            stack.append(_pattern_level(root, item, regex))
        else:
            yield item


def _pattern_level(root: str, rel: str, regex: re.Pattern[str]) -> Iterator[Job | Skip | str]:
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
            yield sub
            continue
        files, skips = logs_below(path)
        yield from (Skip(s.path, s.reason, s.detail, path) for s in skips)
        yield (
            Job(path, "pattern", tuple(files))
            if files
            else Skip(path, "no-logs", SKIP_REASONS["no-logs"])
        )


def find_jobs(
    paths: Iterable[str | os.PathLike[str]], pattern: str | None = None
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


def _find(
    given: list[str], pattern: str | None, regex: re.Pattern[str] | None
) -> Iterator[Job | Skip]:
    for path in given:
        if not os.path.isdir(path):
            yield (
                Job(path, "file", (path,))
                if os.path.isfile(path)
                else Skip(path, "not-regular", SKIP_REASONS["not-regular"])
            )
            continue
        found = False
        for item in _walk_pattern(path, regex) if regex else _walk(path):
            # A folder below said to be empty or without logs already explains the path.
            found = found or isinstance(item, Job) or item.reason in ("empty-folder", "no-logs")
            yield item
        if not found:
            detail = (
                f"nothing below it matches --job-pattern {pattern!r}"
                if regex
                else SKIP_REASONS["no-logs"] + " (*.log, *.out, *.err, *.txt, optionally "
                ".gz; --job-pattern names other files)"
            )
            yield Skip(path, "no-logs", detail)
