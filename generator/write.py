"""The only writer of the site. Nothing reaches the site folder before the whole build succeeded.

A full build writes a new site into a temporary folder beside the output, which replaces the
previous site in one step. A rebuild of an intact site (`in_place`) stages only the files that
changed, then renames each over its old version and removes the files no page wants any more.
Either way, on any failure before `commit()` (an invalid entry, a template error, a full disk,
Ctrl-C) the temporary folder is removed and the previous site is left exactly as it was; the
renames of `commit()` run with SIGINT and SIGTERM held back, so an interrupt cannot split them.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from .errors import NanopediaError, problem
from .joined import EMPTY, SEPARATOR, Joined

MARKER = ".nanopedia-site"
"""Present in every site we write; a non-empty folder without it is never replaced."""
_HELD = {signal.SIGINT, signal.SIGTERM}

Span = tuple[str, int, int]
"""Where a record of a joined file was written: (site path, offset, length)."""


def _fail(out: Path, message: str, hint: str | None = None) -> NanopediaError:
    return NanopediaError([problem(out.as_posix(), 0, 0, "E041", message, hint)])


class SiteWriter:
    """Collects the new site (or, `in_place`, its changed files) in a temporary folder;
    `commit()` puts it in place."""

    def __init__(self, out: Path, in_place: bool = False) -> None:
        self.out = out
        self.in_place = in_place
        if out.exists() and not (out / MARKER).exists() and any(out.iterdir()):
            raise _fail(out, "the output folder exists and is not a Nanopedia site",
                        "choose an empty folder with --out, or remove it first")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        except OSError as err:
            raise _fail(out, f"cannot create the output folder: {err.strerror}") from None
        self._dirs: set[Path] = {self.tmp}
        self.files: set[str] = set()
        """Every file of the new site, written or kept."""
        self.written: list[str] = []
        self.garbage: Path | None = None
        """After `commit()`: a folder of old files for the caller to delete, when convenient."""
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
            raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None

    def write_joined(self, path: str, joined: Joined,
                     previous: Mapping[str, Span]) -> dict[str, tuple[int, int]]:
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
                        if run and not first and run[0] == site_path and \
                                run[1] + run[2] + len(SEPARATOR) == start:
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
            raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None
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

    def keep(self, path: str) -> None:
        """Take one file of the site unchanged from the previous site (in a full build, a hard
        link, or a copy where links are not possible)."""
        if self.in_place:
            self._claim(path)
            return
        try:
            target = self._target(path)
            try:
                os.link(self.out / path, target)
            except OSError:
                shutil.copy2(self.out / path, target)
        except OSError as err:
            raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None

    def _open(self, path: str):  # noqa: ANN202 - a buffered binary file
        target = self._target(path)
        self.written.append(path)
        return target.open("xb")

    def _claim(self, path: str) -> None:
        if path in self.files:
            raise _fail(self.out, f"two pages want the same file: {path}")
        self.files.add(path)

    def _target(self, path: str) -> Path:
        """Where `path` goes in the temporary folder, its folder created."""
        rel = PurePosixPath(path)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise _fail(self.out, f"refusing to write outside the site: {path!r}")
        self._claim(path)
        target = self.tmp.joinpath(*rel.parts)
        if target.parent not in self._dirs:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None
            self._dirs.add(target.parent)
        return target

    def commit(self, previous: Iterable[str] = ()) -> None:
        """Put the new site in place. In place, `previous` lists the files of the site as it is,
        so that those no page wants any more are removed."""
        if self.in_place:
            self._commit_in_place(previous)
            return
        self.write(MARKER, b"")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.tmp, 0o777 & ~umask)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            # A new name each time: the last one may still be being deleted in the background.
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-", dir=self.out.parent))
            moved = self.out.exists()
            if moved:
                os.rename(self.out, old)
            try:
                os.rename(self.tmp, self.out)
            except OSError:
                if moved:
                    os.rename(old, self.out)
                else:
                    old.rmdir()
                raise
            self._done = True
        except OSError as err:
            raise _fail(self.out, f"cannot replace the site: {err.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self.garbage = old

    def _commit_in_place(self, previous: Iterable[str]) -> None:
        self.files.add(MARKER)
        stale = [p for p in previous if p not in self.files]
        # Replaced and stale files go to the temporary folder rather than being deleted: freeing
        # a 100 MB entries.json took a tenth of a second, which `garbage` defers.
        kept = self.tmp / ".replaced"
        kept.mkdir()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            for n, path in enumerate(self.written):
                target = self.out / path
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(target, kept / str(n))
                except OSError:
                    pass  # new, or links not possible: replaced below either way
                os.replace(self.tmp / path, target)
            for n, path in enumerate(stale, len(self.written)):
                try:
                    os.rename(self.out / path, kept / str(n))
                except FileNotFoundError:
                    pass
            self._done = True
            self.garbage = self.tmp
        except OSError as err:
            raise _fail(self.out, f"cannot update the site: {err.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def __enter__(self) -> SiteWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._done:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _reserve(fd: int, joined: Joined, previous: Mapping[str, Span]) -> None:
    """Allocate a large joined file's blocks before writing it. Renamed over its old version
    with its blocks still unallocated, ext4 writes it out first (the rename took 30-80 ms for
    a 112 MB entries.json, and made the next file operations wait on the journal)."""
    records = [n for n in joined.names if n != EMPTY]
    size = len(joined.head) + len(joined.tail) + len(SEPARATOR) * max(0, len(records) - 1) + \
        sum(len(joined.fresh[n]) if n in joined.fresh else previous[n][2] for n in records)
    if size >= RESERVE_MIN:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:
            pass  # not on this file system: written as it comes


RESERVE_MIN = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


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
