"""What a build looks at on disk first: the entry files with their stat stamps, and every file of
the site with its size and modification time.

At 10,000 entries that is 20,000 stat calls, a tenth of a one-entry rebuild. The console script
lists them in a process forked before it imports the rest of the generator (`prefetch`), so the
second core does it while the first spends 0.17 s on imports. Hence nothing here imports the rest
of the generator (`content/files.py` imports only `os`).
"""

from __future__ import annotations

import gc
import marshal
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nanopedia.content.files import entry_names

Stamp = tuple[int, int, int]
"""A file's (size, mtime_ns, inode): the same, and its bytes are taken to be the same."""


@dataclass(frozen=True)
class Listing:
    names: list[str]
    """The entry files' names, sorted."""
    stamps: dict[str, Stamp]
    """Entry file name to its stamp; a file that could not be stat'ed, or is not a regular file
    (its own stamp, never a symlink's target's), is missing."""
    site: dict[str, tuple[int, int]]
    """Site path to the size and mtime_ns of every file in the site folder."""
    taken_ns: int
    """The clock before the first stat: a file modified shortly before may change again within
    its timestamp's tick."""


def stamps(root: Path, names: list[str]) -> dict[str, Stamp]:
    """The stamp of each named file of `root` (stat'ed relative to the folder: cheaper)."""
    found: dict[str, Stamp] = {}
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return found
    try:
        for name in names:
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):  # a symlink, FIFO, device: loading refuses it
                continue
            found[name] = (info.st_size, info.st_mtime_ns, info.st_ino)
    finally:
        os.close(folder)
    return found


def site_files(out: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file of the site, by site path."""
    found: dict[str, tuple[int, int]] = {}
    stack = [(out, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            items = list(os.scandir(folder))
        except OSError:
            continue
        for item in items:
            if item.is_dir(follow_symlinks=False):
                stack.append((Path(item.path), f"{prefix}{item.name}/"))
            else:
                info = item.stat(follow_symlinks=False)
                found[prefix + item.name] = (info.st_size, info.st_mtime_ns)
    return found


def listing(entries: Path, out: Path) -> Listing:
    taken = time.time_ns()
    names = entry_names(entries)
    return Listing(names, stamps(entries, names), site_files(out), taken)


def prefetch(entries: Path, out: Path) -> Callable[[], Listing]:
    """Start `listing` in a forked process; the function returned waits for it. Should the
    process fail, or other threads run here (a process is forked only while it has none: a
    caller in a test or a server), the listing is made in this one instead."""
    if threading.active_count() > 1:
        return lambda: listing(entries, out)
    try:
        read, write = os.pipe()
        pid = os.fork()
    except OSError:
        return lambda: listing(entries, out)
    if pid == 0:  # the child: list, send, and leave without running any of the parent's exits
        try:
            os.close(read)
            found = listing(entries, out)
            data = marshal.dumps((found.names, found.stamps, found.site, found.taken_ns))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write)

    def result() -> Listing:
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        # 40,000 tuples at once: the collector would walk every object of the process several
        # times meanwhile (41 ms instead of 13 at 10,000 entries), and none is in a cycle.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return Listing(*marshal.loads(data))
        except (EOFError, ValueError, TypeError):
            return listing(entries, out)
        finally:
            if collecting:
                gc.enable()

    return result
