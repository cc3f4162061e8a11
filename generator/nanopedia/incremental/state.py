"""The build state: what a build leaves for the next one so that it loads only the entries that
changed and writes only the files that show them (`pipeline.py` decides what that is).

One pickle per site folder in the cache, plus the kept entries in bucket files so that saving
after an edit rewrites one bucket; a lock file keeps a build from reading a state another
process is writing. A build saves it as a background job (`background.later`), after taking that
lock itself (`hold`) while it still holds the site's: the next build of the site, which reads the
state once it holds the site, reads this one, never the one before. A damaged state file, or
bucket, is no state at all: the next build is a full one.
"""

from __future__ import annotations

import dataclasses
import fcntl
import gc
import os
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from nanopedia.content.catalog import Links, Node
from nanopedia.incremental.cache import Cache, key
from nanopedia.model import Dates, Tag
from nanopedia.site import views

VERSION = 4


class Kept(NamedTuple):
    """What the build state remembers of one entry, so an unchanged one is not loaded again
    (a named tuple, as are its parts: reading 10,000 of them is most of reading the state, and
    named tuples unpickle in two thirds of the time plain dataclasses take)."""

    key: str
    node: Node
    card: views.Card
    dates: Dates | None
    names: tuple[str, ...]
    """The name of the entry's record in each joined file, in `per_entry.KINDS` order."""


@dataclass
class State:
    """What a build leaves for the next one, in the cache under the site folder's path."""

    version: int
    inputs: str
    """Fingerprint of every input and setting: equal, and the site intact, means nothing to do."""
    stamps: dict[str, tuple[int, int, int, bytes]]
    """Entry file to (size, mtime_ns, inode, sha256 of its bytes)."""
    entries: dict[str, Kept]
    """Entry file to what is kept of it (entries with warnings are loaded again each time)."""
    pages: dict[str, str]
    """Site file to the key it was written with."""
    spans: dict[str, dict[str, tuple[int, int]]]
    """Joined file to the (offset, length) of each record in it, by record name."""
    manifest: dict[str, tuple[int, int]]
    """Site file to its (size, mtime_ns) after the build, to notice a hand-edited site."""
    folder: tuple[int, int]
    """The site folder's (st_dev, st_ino) after the build. Each build that writes puts a new
    folder in place, so another one, or a copy, is noticed without a stat of every file."""
    setting: str
    tags: dict[str, Tag]
    also: dict[str, tuple[str, ...]]
    """Entry id to its 'also tagged' suggestions, the one costly part of what a page shows of
    others: only entries near a changed one get theirs computed again."""
    links: Links | None = None
    """The last build's links, with the nodes taken out (`entries` has them)."""
    dated_by: str = ""
    """What decided the entries' dates (the commit the history was walked from, and
    `SOURCE_DATE_EPOCH`): the same, and an entry of the same bytes has the same dates."""
    buckets: list[str] = field(default_factory=list)
    """Cache keys of the files that hold `entries` (which the state file itself does not)."""


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        info = path.stat()
    except OSError:
        return (0, 0, 0)
    return (info.st_size, info.st_mtime_ns, info.st_ino)


BUCKETS = 64
"""The state keeps the entries of a large corpus in this many files, so that saving it after an
edit rewrites a sixty-fourth of them (pickling all 10,000 took 0.2 s, and `serve` waited for
it); a small corpus gets one file per `BUCKET_MIN` entries."""
BUCKET_MIN = 128


def _bucket(name: str, count: int) -> int:
    return zlib.crc32(name.encode()) % count


Remembered = dict[Path, tuple[tuple[int, int, int], State]]
"""The state file each build of a context saved, with its stamp (`Context.states`): `serve` does
not read back what it wrote (unpickling it took a third of a second at 10,000 entries)."""


def load(cache: Cache, k: str, remembered: Remembered | None = None) -> tuple[State | None, bool]:
    """The last build's state of a site, when it is this version's and complete; and whether
    it is one `remembered` holds (a build of the same context saved it)."""
    path = cache.path("state", k)
    hit = remembered.get(path) if remembered is not None else None
    if hit is not None and hit[0] == _stamp(path):
        return hit[1], True
    # Hundreds of thousands of objects that live as long as the build: the collector would walk
    # them at every full collection while they are read and after (a sixth of an edit rebuild
    # at 10,000 entries), and none of them is part of a cycle.
    gc.disable()
    try:
        with _locked(cache, k, fcntl.LOCK_SH):  # not while a detached build is saving it
            found = _read(cache, k)
    finally:
        gc.enable()
    gc.freeze()
    return found, False


def _read(cache: Cache, k: str) -> State | None:
    """The state, or None when it is missing, of another version or damaged (a bucket too)."""
    found = cache.get("state", k, State)
    if found is None or found.version != VERSION:
        return None
    for bucket_key in found.buckets:
        part = cache.get("kept", bucket_key, dict)
        if part is None:
            return None
        found.entries.update(part)
    return found


@contextmanager
def _locked(cache: Cache, k: str, how: int, held: int | None = None) -> Iterator[None]:
    """Hold a lock on a site's state: a build reads it while no other process writes it.
    `held` is a descriptor that `hold` locked already, closed here."""
    fd = held if held is not None else _lock(cache, k, how)
    if fd is None:
        yield  # a read-only cache: nobody writes it either
        return
    try:
        yield
    finally:
        os.close(fd)


def _lock(cache: Cache, k: str, how: int) -> int | None:
    path = cache.path("state", k).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    try:
        fcntl.flock(fd, how)
    except BaseException:
        os.close(fd)
        raise
    return fd


def hold(cache: Cache, k: str) -> int | None:
    """Lock a site's state for writing now, for a `save` that runs later (the descriptor goes
    with it, to a thread or to a detached process): the lock is taken while the build still
    holds the site, so no build that follows can read the state before it is saved."""
    return _lock(cache, k, fcntl.LOCK_EX)


def save(
    cache: Cache,
    k: str,
    state: State,
    before: State | None,
    held: int | None = None,
    remembered: Remembered | None = None,
) -> None:
    """Save the state; a bucket of entries all unchanged since `before` is not written again,
    and a bucket replaced is deleted. `held`: the lock `hold` took. The state is kept in
    `remembered` for the next build of the same context."""
    with _locked(cache, k, fcntl.LOCK_EX, held):
        if not _write(cache, k, state, before):
            return
    path = cache.path("state", k)
    if remembered is not None:
        remembered[path] = (_stamp(path), state)


def _write(cache: Cache, k: str, state: State, before: State | None) -> bool:
    count = max(1, min(BUCKETS, len(state.entries) // BUCKET_MIN))
    parts: list[dict[str, Kept]] = [{} for _ in range(count)]
    for name, kept_entry in state.entries.items():
        parts[_bucket(name, count)][name] = kept_entry
    old = before.buckets if before is not None and len(before.buckets) == count else None
    sizes = Counter(_bucket(m, count) for m in before.entries) if old and before else Counter()
    for n, part in enumerate(parts):
        if (
            old is not None
            and before is not None
            and sizes[n] == len(part)
            and all(before.entries.get(m) is v for m, v in part.items())
        ):
            state.buckets.append(old[n])
            continue
        content = repr(sorted((m, v.key, v.dates) for m, v in part.items())).encode()
        state.buckets.append(key(k.encode(), str(n).encode(), content))
        if not cache.put("kept", state.buckets[-1], part):
            return False  # without a state, the next build only takes longer
    if not cache.put("state", k, dataclasses.replace(state, entries={})):
        return False
    for gone in set(old or ()) - set(state.buckets):
        cache.path("kept", gone).unlink(missing_ok=True)
    return True
