"""When each entry was first published and last updated, from the git history of its file.

Dates come from commits, never from the clock or file mtimes, so two builds of the same commit are
byte-identical wherever they run. One `git log` walks the history of the whole entries directory
(tens of milliseconds for thousands of files, where one call per file would take minutes).
`--first-parent` dates a change by when it landed on the branch being built, not by when it was
written on a side branch. Outside a git checkout, in a shallow clone (whose oldest commit would
look like the birth of every file) or for files not committed yet, the fallback is
`SOURCE_DATE_EPOCH` when set (the reproducible-builds convention) and otherwise no date at all.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from nanopedia.content.files import TAGS_FILE
from nanopedia.model import Dates

_COMMIT = "@"  # prefix of the per-commit line in our `git log` format; never starts a file name


Started = tuple[subprocess.Popen[bytes], IO[bytes]]
"""A git process and the temporary file it writes to."""


def _start(root: Path, *args: str) -> Started | None:
    """Start git in `root`, writing to a temporary file rather than a pipe, so that it runs to
    the end while nobody reads (a thread reading a pipe would be running when the build forks
    its workers); None when git is missing."""
    out = tempfile.TemporaryFile()
    try:
        return subprocess.Popen(
            ["git", "-C", str(root), *args], stdout=out, stderr=subprocess.DEVNULL
        ), out
    except OSError:
        out.close()
        return None


def _output(started: Started) -> str | None:
    """What a started git process wrote, once it has exited; None when it failed."""
    proc, out = started
    with out:
        if proc.wait() != 0:
            return None
        out.seek(0)
        return out.read().decode("utf-8", "replace")


def _git(root: Path, *args: str) -> str | None:
    """Run git in `root`; None when git is missing or `root` is not in a work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


@dataclass(frozen=True)
class Walk(Mapping[str, Dates]):
    """What a walk of the history found, kept so that the next build walks only what is new
    (one `git log` over 10,000 commits of a 10,000-entry directory took 5.5 s). As a mapping,
    file stem to dates, made when asked for: a build asks for those of the entries it loads."""

    head: str
    """The commit the walk started from."""
    first: dict[str, int]
    """File stem to the commit time of the oldest commit on the first-parent chain that
    touched it."""
    last: dict[str, int]
    """File stem to the commit time of the newest such commit."""

    def __getitem__(self, stem: str) -> Dates:
        return Dates(_utc(self.first[stem]), _utc(self.last[stem]))

    def __contains__(self, stem: object) -> bool:
        return stem in self.first

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.first))

    def __len__(self) -> int:
        return len(self.first)


def start(root: Path, since: Walk | None = None) -> Walking:
    """The walk of the history of `root` up to HEAD, with `git log` left running in a process of
    its own until a date is asked for (a cold build of a 10,000-commit checkout waited 5.5 s for
    it before loading any entry). No dates outside a checkout or in a shallow clone. Given the
    walk of an earlier HEAD on the first-parent chain of this one, only the commits after it are
    read; the result is the same as a full walk."""
    found = (_git(root, "rev-parse", "--is-shallow-repository", "HEAD") or "").split()
    if len(found) != 2 or found[0] != "false":
        return Walking("", None)
    head = found[1]
    if since is not None and since.head == head:
        return Walking(head, since)
    if since is not None and not _descends(root, since.head, head):
        since = None
    log = _start(
        root,
        "log",
        "--first-parent",
        "--diff-merges=first-parent",
        "--no-renames",
        "--relative",
        "--name-only",
        f"--format={_COMMIT}%ct",
        *([f"{since.head}..{head}"] if since else [head]),
        "--",
        ".",
    )
    return Walking(head, None, log, since)


class Walking(Mapping[str, Dates]):
    """A walk that may still be under way; as a mapping, the dates of the walk once done."""

    def __init__(
        self, head: str, done: Walk | None, log: Started | None = None, since: Walk | None = None
    ) -> None:
        self.head = head
        """The commit walked from; "" where there is no history."""
        self.read = log is not None
        """Whether this walk read commits: an earlier walk given back as it was did not."""
        self._done, self._log, self._since = done, log, since

    def walk(self) -> Walk | None:
        """The walk, waiting for `git log` if it still runs."""
        if self._log is not None:
            out = _output(self._log)
            self._log = None
            self._done = None if out is None else _walk(self.head, out, self._since)
        return self._done

    def close(self) -> None:
        """Stop a walk nobody will ask for (the build failed)."""
        if self._log is not None:
            self._log[0].kill()
            _output(self._log)
            self._log = None

    def __getitem__(self, stem: str) -> Dates:
        walk = self.walk()
        if walk is None:
            raise KeyError(stem)
        return walk[stem]

    def __contains__(self, stem: object) -> bool:
        walk = self.walk()
        return walk is not None and stem in walk

    def __iter__(self) -> Iterator[str]:
        return iter(self.walk() or {})

    def __len__(self) -> int:
        return len(self.walk() or {})


def _walk(head: str, out: str, since: Walk | None) -> Walk:
    """The walk from `git log`'s output, added to the walk of an earlier HEAD if given."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    when = 0
    for line in out.splitlines():  # newest commit first
        if line.startswith(_COMMIT):
            when = int(line[len(_COMMIT) :])
        elif line.endswith(".yaml") and "/" not in line and line != TAGS_FILE:
            stem = line[: -len(".yaml")]
            last.setdefault(stem, when)
            first[stem] = when
    if since is not None:  # older commits keep the first dates, newer ones the last
        first = {**first, **since.first}
        last = {**since.last, **last}
    return Walk(head, first, last)


def _descends(root: Path, old: str, head: str) -> bool:
    """Whether `old` is on the first-parent chain of `head` (not after a rebase or a reset, and
    not merely merged in from a side branch, whose commits the chain dates by their merge)."""
    out = _git(root, "rev-list", "--first-parent", "--parents", f"{old}..{head}")
    if not out:
        return False
    oldest = out.splitlines()[-1].split()
    return len(oldest) > 1 and oldest[1] == old


def _utc(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def fallback(environ: Mapping[str, str] = os.environ) -> Dates | None:
    """`SOURCE_DATE_EPOCH` as both dates when it is set and valid, else None (no date shown)."""
    raw = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw.isdigit():
        return None
    return Dates(_utc(int(raw)), _utc(int(raw)))


def entry_dates(
    known: Mapping[str, Dates],
    entry_id: str,
    aliases: Iterable[str] = (),
    default: Dates | None = None,
) -> Dates | None:
    """An entry's dates; a renamed entry was first published under its oldest former id."""
    if entry_id not in known:
        return default
    if not aliases:
        return known[entry_id]
    found = [known[name] for name in (entry_id, *aliases) if name in known]
    return Dates(min(d.first_published for d in found), known[entry_id].last_updated)
