"""The only writer of the site: everything goes to a temporary folder beside the output, which
replaces the previous site in one step only after the whole build succeeded.

On any failure (an invalid entry, a template error, a full disk, Ctrl-C) the temporary folder is
removed and the previous site is left exactly as it was. The swap itself runs with SIGINT and
SIGTERM held back, so an interrupt cannot land between its two renames.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from types import TracebackType

from .errors import NanopediaError, problem

MARKER = ".nanopedia-site"
"""Present in every site we write; a non-empty folder without it is never replaced."""
_HELD = {signal.SIGINT, signal.SIGTERM}


def _fail(out: Path, message: str, hint: str | None = None) -> NanopediaError:
    return NanopediaError([problem(out.as_posix(), 0, 0, "E041", message, hint)])


class SiteWriter:
    """Collects the new site in a temporary folder; `commit()` swaps it in."""

    def __init__(self, out: Path) -> None:
        self.out = out
        if out.exists() and not (out / MARKER).exists() and any(out.iterdir()):
            raise _fail(out, "the output folder exists and is not a Nanopedia site",
                        "choose an empty folder with --out, or remove it first")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        except OSError as err:
            raise _fail(out, f"cannot create the output folder: {err.strerror}") from None
        self._dirs: set[Path] = {self.tmp}
        self._done = False

    def write(self, path: str, data: bytes | Iterable[bytes]) -> None:
        """Write one file of the site; `path` is relative and uses `/`. A large file can come
        in parts, so it is never whole in memory."""
        target = self._target(path)
        try:
            with target.open("xb") as handle:
                if isinstance(data, bytes):
                    handle.write(data)
                else:
                    handle.writelines(data)
        except FileExistsError:
            raise _fail(self.out, f"two pages want the same file: {path}") from None
        except OSError as err:
            raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None

    def reuse(self, path: str, previous: Path) -> None:
        """Take one file of the site unchanged from the previous site (a hard link, or a copy
        where links are not possible)."""
        target = self._target(path)
        try:
            try:
                os.link(previous, target)
            except FileExistsError:
                raise
            except OSError:
                shutil.copy2(previous, target)
        except FileExistsError:
            raise _fail(self.out, f"two pages want the same file: {path}") from None
        except OSError as err:
            raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None

    def _target(self, path: str) -> Path:
        """Where `path` goes in the temporary folder, its folder created."""
        rel = PurePosixPath(path)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise _fail(self.out, f"refusing to write outside the site: {path!r}")
        target = self.tmp.joinpath(*rel.parts)
        if target.parent not in self._dirs:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise _fail(self.out, f"cannot write {path}: {err.strerror}") from None
            self._dirs.add(target.parent)
        return target

    def commit(self) -> None:
        """Replace the previous site with the new one."""
        self.write(MARKER, b"")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.tmp, 0o777 & ~umask)
        old = self.out.parent / f".{self.out.name}.old-{os.getpid()}"
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            if self.out.exists():
                os.rename(self.out, old)
            try:
                os.rename(self.tmp, self.out)
            except OSError:
                if old.exists():
                    os.rename(old, self.out)
                raise
            self._done = True
        except OSError as err:
            raise _fail(self.out, f"cannot replace the site: {err.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        shutil.rmtree(old, ignore_errors=True)

    def __enter__(self) -> SiteWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._done:
            shutil.rmtree(self.tmp, ignore_errors=True)
