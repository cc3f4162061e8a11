"""Builds of one site exclude each other, and the one holding the lock mends what builds that
died left behind.

A build takes `SiteLock` before it looks at the site; one that finds the lock taken says for
whom it waits, and gives up with a located error after `lock_timeout()` seconds. Holding the
lock, a build knows that no other build of the site is running, so it may put back an old site
that a build without `renameat2` left renamed aside (`recover`) and move the folders other
processes left beside the site to the trash (`sweep`).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from nanopedia.errors import fail
from nanopedia.incremental.write import MARKER, scratch_owner, to_trash, write_error

LOCK_TIMEOUT = 600.0
"""Seconds a build waits for another build of the same site (`NANOPEDIA_LOCK_TIMEOUT`)."""
TIMEOUT_VARIABLE = "NANOPEDIA_LOCK_TIMEOUT"


def lock_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """How long a build waits for another build of its site: `NANOPEDIA_LOCK_TIMEOUT` seconds,
    or `LOCK_TIMEOUT`."""
    raw = environ.get(TIMEOUT_VARIABLE, "").strip()
    if not raw:
        return LOCK_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        fail(
            TIMEOUT_VARIABLE,
            "E050",
            f"{TIMEOUT_VARIABLE} must be seconds, not {raw!r}",
            "for example 600, or 0 not to wait",
        )
    return seconds


class SiteLock:
    """Exclusive use of one site folder by one build, through `flock` on `.site.lock` beside it
    (released by the kernel, however the build ends). The file is removed on release, so a build
    that locked a file someone removed meanwhile locks the new one instead."""

    def __init__(self, out: Path, timeout: float, waiting: Callable[[str], None]) -> None:
        self.out = out
        self.path = out.parent / f".{out.name}.lock"
        self.timeout = timeout
        self.waiting = waiting
        self.waited = False
        """Whether another build held the site first (what was seen of it before is stale)."""
        self._fd: int | None = None

    def __enter__(self) -> SiteLock:
        deadline = time.monotonic() + self.timeout
        pause = 0.01
        while True:
            try:
                self.out.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:
                raise write_error(
                    self.out, f"cannot create the output folder: {err.strerror}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                if not self.waited:
                    self.waited = True
                    self.waiting(
                        f"waiting for another build of {self.out.as_posix()}/ (pid {holder})"
                    )
                if time.monotonic() >= deadline:
                    raise write_error(
                        self.out,
                        f"another build of this site (pid {holder}) was still running "
                        f"after {self.timeout:g} s",
                        f"let it finish, or stop it; "
                        f"{TIMEOUT_VARIABLE} sets how many seconds a build waits",
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
                continue
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, self.path):
                break
            os.close(fd)  # removed by the build that just released it: lock the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)  # still ours: nobody removes the file of a held lock
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote into it, as text ('unknown' before it wrote it)."""
    try:
        pid = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        pid = ""
    return pid if pid.isdigit() else "unknown"


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def recover(out: Path) -> bool:
    """Put the old site back where a build died between the two renames of a commit without
    `renameat2` (the site folder missing, the old site renamed aside). True if it did."""
    if os.path.lexists(out):
        return False
    try:
        found = sorted(out.parent.iterdir(), key=lambda p: p.name)
    except OSError:
        return False
    for folder in found:
        if (
            scratch_owner(folder.name, [f".{out.name}.old-"]) is not None
            and (folder / MARKER).is_file()
            and not folder.is_symlink()
        ):
            try:
                os.rename(folder, out)
            except OSError:
                continue
            return True
    return False


def sweep(out: Path, trash: Path | None) -> list[Path]:
    """The folders to delete that builds of `out` left beside it, and those in `trash`: a new
    site a killed build did not finish, an old site whose deletion was cut short. Call it while
    holding the site's lock: no other build of the site is running then, so none of them is in
    use, but those of this process (`serve`, whose last old site may still be being deleted in
    the background). They are moved to `trash` first, where they can be: at once out of sight."""
    found: list[Path] = []
    prefixes = [f".{out.name}.new-", f".{out.name}.old-"]
    me = os.getpid()
    for folder, names in ((out.parent, prefixes), (trash, [""])):
        if folder is None:
            continue
        try:
            items = list(os.scandir(folder))
        except OSError:
            continue
        for item in items:
            owner = scratch_owner(item.name, names)
            if owner is None or owner == me or not item.is_dir(follow_symlinks=False):
                continue
            path = Path(item.path)
            found.append(to_trash(path, trash) if folder != trash else path)
    return found
