"""The only writer of the site. Nothing reaches the site folder before the whole build succeeded,
and however a build ends (an invalid entry, a full disk, Ctrl-C, `kill -9` at any moment), the
site folder is the complete old site or the complete new one, never a mix.

Every build writes the new site into a folder beside the output (`.site.new-<pid>-…`): a file
kept from the last build is a hard link to it (a copy where links are not possible), the others
are written. `commit()` then exchanges the two folders in one `renameat2(RENAME_EXCHANGE)`. Where
the system or the file system has no such call, the old site is renamed aside and the new one
into place; should the build die between those two renames, the next build puts the old site back
(`recover`) before it looks at it. The old site goes to the cache's trash folder (on the same
file system, one rename), to be deleted in the background: nothing is left beside the site.

The scratch folders are named after the site and the pid that made them (`scratch_owner` reads
it back), so that a build holding the site's lock (`nanopedia/incremental/lock.py`) can tell the
folders of builds that died from its own.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from nanopedia.errors import NanopediaError, problem
from nanopedia.site.joined import EMPTY, SEPARATOR, Joined

MARKER = ".nanopedia-site"
"""Present in every site we write; a non-empty folder without it is never replaced."""
_HELD = {signal.SIGINT, signal.SIGTERM}

Span = tuple[str, int, int]
"""Where a record of a joined file was written: (site path, offset, length)."""


def write_error(out: Path, message: str, hint: str | None = None) -> NanopediaError:
    """A located problem with the site folder `out` (E041), for the writer and the lock."""
    return NanopediaError([problem(out.as_posix(), "E041", message, hint)])


def _scratch(out: Path, kind: str) -> Path:
    """A new folder beside `out` named after it, this process and `kind` (`new` or `old`), so
    that `sweep` can tell whose it is."""
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{kind}-{os.getpid()}-", dir=out.parent))


_SCRATCH = re.compile(r"(?:(\d+)-)?[a-z0-9_]{8}")
"""What follows the prefix in the name of a `_scratch` folder (or of one in the trash): the pid,
then `mkdtemp`'s eight characters (earlier versions wrote no pid)."""


def scratch_owner(name: str, prefixes: Iterable[str]) -> int | None:
    """The pid in the name of a folder `_scratch` made (0: one of a version without pids);
    None when the name is not one of ours."""
    for prefix in prefixes:
        found = _SCRATCH.fullmatch(name, len(prefix)) if name.startswith(prefix) else None
        if found:
            return int(found[1] or 0)
    return None


def to_trash(folder: Path, trash: Path | None) -> Path:
    """`folder` moved into `trash` (on the same file system: one rename), or left where it is."""
    if trash is None:
        return folder
    try:
        trash.mkdir(parents=True, exist_ok=True)
        target = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=trash))
        try:
            os.rename(folder, target)
        except OSError:
            target.rmdir()
            return folder
    except OSError:
        return folder
    return target


RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> Any:
    """libc's `renameat2`, or None (not Linux, or a C library without it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step; False, having changed nothing, where the system or the file
    system cannot."""
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), os.fsdecode(b))


class SiteWriter:
    """Collects the new site in a folder beside the output; `commit()` puts it in place."""

    def __init__(self, out: Path) -> None:
        self.out = out
        if os.path.lexists(out):
            if not out.is_dir():
                raise write_error(
                    out,
                    "the output path exists and is not a folder",
                    "choose another path with --out, or remove it first",
                )
            if not (out / MARKER).exists() and any(out.iterdir()):
                raise write_error(
                    out,
                    "the output folder exists and is not a Nanopedia site",
                    "choose an empty folder with --out, or remove it first",
                )
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = _scratch(out, "new")
        except OSError as err:
            raise write_error(out, f"cannot create the output folder: {err.strerror}") from None
        # As strings: a build keeps thousands of files, and pathlib cost more than the links.
        self._out, self._tmp = os.fspath(out), os.fspath(self.tmp)
        self._dirs: set[str] = {self._tmp}
        self.files: set[str] = set()
        """Every file of the new site, written or kept."""
        self.written: list[str] = []
        self.garbage: Path | None = None
        """After `commit()`: the old site, for the caller to delete when convenient."""
        self._done = False

    def write(self, path: str, data: bytes | Iterable[bytes]) -> None:
        """Write one file of the site; `path` is relative and uses `/`. A large file can come
        in parts, so it is never whole in memory."""
        try:
            with self._open(path) as handle:
                if isinstance(data, bytes):
                    handle.write(data)
                else:
                    handle.writelines(data)
        except OSError as err:
            raise write_error(self.out, f"cannot write {path}: {err.strerror}") from None

    def write_joined(
        self, path: str, joined: Joined, previous: Mapping[str, Span]
    ) -> dict[str, tuple[int, int]]:
        """Write a joined file; a record not made in this build is copied from its span in
        `previous` (the previous site is still in place while a build writes). Runs of records
        that were adjacent before are copied in one call. Return the span of every record."""
        spans: dict[str, tuple[int, int]] = {}
        sources: dict[str, int] = {}
        buffer: list[bytes] = []
        run: list[Any] = []  # [site path, start, length] of old bytes still to copy
        try:
            fd = os.open(self._target(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            self.written.append(path)
            try:
                _reserve(fd, joined, previous)

                def flush() -> None:
                    _write_all(fd, b"".join(buffer))
                    buffer.clear()
                    if run:
                        site_path, start, length = run
                        if site_path not in sources:
                            sources[site_path] = os.open(self.out / site_path, os.O_RDONLY)
                        _copy(sources[site_path], fd, start, length)
                        run.clear()

                buffer.append(joined.head)
                at, first = len(joined.head), True
                for name in joined.names:
                    if name == EMPTY:
                        continue
                    if not first:
                        at += len(SEPARATOR)
                    data = joined.fresh.get(name)
                    if data is None:
                        site_path, start, length = previous[name]
                        if (
                            run
                            and not first
                            and run[0] == site_path
                            and run[1] + run[2] + len(SEPARATOR) == start
                        ):
                            run[2] += len(SEPARATOR) + length
                        else:
                            flush()
                            if not first:
                                buffer.append(SEPARATOR)
                            run[:] = [site_path, start, length]
                    else:
                        if run:
                            flush()
                        buffer.append(data if first else SEPARATOR + data)
                        length = len(data)
                        if len(buffer) > 1024:
                            flush()
                    spans[name] = (at, length)
                    at += length
                    first = False
                flush()
                _write_all(fd, joined.tail)
                os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR))  # in case more was reserved
            finally:
                os.close(fd)
        except OSError as err:
            raise write_error(self.out, f"cannot write {path}: {err.strerror}") from None
        finally:
            for source in sources.values():
                os.close(source)
        return spans

    def adopt(self, paths: Iterable[str]) -> None:
        """Files written through copies of this writer in worker processes (or through this
        one: those are known already)."""
        for path in paths:
            if path not in self.files:
                self.files.add(path)
                self.written.append(path)

    def keep(self, path: str) -> bool:
        """Take one file of the site unchanged from the previous site: a hard link, or a copy
        where links are not possible (both keep its size and modification time, which the
        state's manifest records). False when the previous site has no such file any more: the
        caller makes it instead, as when the file is not a regular file (a symlink left there by
        hand must never become a way out of the site)."""
        source = f"{self._out}/{path}"
        try:
            if not stat.S_ISREG(os.lstat(source).st_mode):
                raise FileNotFoundError(path)
            target = self._target(path)
            try:
                os.link(source, target, follow_symlinks=False)
            except FileNotFoundError:
                raise
            except OSError:
                shutil.copy2(source, target, follow_symlinks=False)
        except FileNotFoundError:
            self.files.discard(path)
            return False
        except OSError as err:
            raise write_error(self.out, f"cannot write {path}: {err.strerror}") from None
        return True

    def _open(self, path: str):  # noqa: ANN202 - a buffered binary file
        target = self._target(path)
        self.written.append(path)
        return open(target, "xb")

    def _claim(self, path: str) -> None:
        if path in self.files:
            raise write_error(self.out, f"two pages want the same file: {path}")
        self.files.add(path)

    def _target(self, path: str) -> str:
        """Where `path` goes in the new site's folder, its folder created."""
        parts = path.split("/")
        if (
            not path
            or path.startswith("/")
            or "" in parts
            or "." in parts
            or ".." in parts
            or "\0" in path
        ):
            raise write_error(self.out, f"refusing to write outside the site: {path!r}")
        self._claim(path)
        target = f"{self._tmp}/{path}"
        folder = target.rpartition("/")[0]
        if folder not in self._dirs:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as err:
                raise write_error(self.out, f"cannot write {path}: {err.strerror}") from None
            self._dirs.add(folder)
        return target

    def commit(self, trash: Path | None = None) -> None:
        """Put the new site in place: exchange it with the old one in one step (or, where that
        is not possible, rename the old one aside and the new one in). The old site goes to
        `trash`, where it can (`garbage` says where it is)."""
        self.write(MARKER, b"")
        umask = os.umask(0)
        os.umask(umask)
        old: Path | None = None
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            os.chmod(self.tmp, 0o777 & ~umask)
            if not os.path.lexists(self.out):
                os.rename(self.tmp, self.out)
            elif _exchange(self.tmp, self.out):
                old = self.tmp
            else:
                old = self._rename_aside()
            self._done = True
        except OSError as err:
            raise write_error(self.out, f"cannot replace the site: {err.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        if old is not None:
            self.garbage = to_trash(old, trash)

    def _rename_aside(self) -> Path:
        """The commit in two renames, for systems without an exchange; the old site's folder."""
        old = _scratch(self.out, "old")
        os.rename(self.out, old)
        try:
            os.rename(self.tmp, self.out)
        except OSError:
            os.rename(old, self.out)
            raise
        return old

    def __enter__(self) -> SiteWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._done:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _reserve(fd: int, joined: Joined, previous: Mapping[str, Span]) -> None:
    """Allocate a large joined file's blocks before writing it. Renamed over its old version
    with its blocks still unallocated, ext4 writes it out first (the rename took 30-80 ms for
    a 112 MB entries.json, and made the next file operations wait on the journal)."""
    records = [n for n in joined.names if n != EMPTY]
    size = (
        len(joined.head)
        + len(joined.tail)
        + len(SEPARATOR) * max(0, len(records) - 1)
        + sum(len(joined.fresh[n]) if n in joined.fresh else previous[n][2] for n in records)
    )
    if size >= RESERVE_MIN:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:
            pass  # not on this file system: written as it comes


RESERVE_MIN = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy(src: int, dst: int, start: int, length: int) -> None:
    """Copy `length` bytes at `start` of `src` to the end of `dst`, in the kernel when it can."""
    while length:
        try:
            done = os.copy_file_range(src, dst, length, start)
        except OSError:  # not on this file system: through this process
            data = os.pread(src, min(length, 1 << 24), start)
            _write_all(dst, data)
            done = len(data)
        if done == 0:
            raise OSError(5, "the previous site file is shorter than recorded")
        start += done
        length -= done
