"""The files of a built site, served safely: a request path is decoded strictly (malformed
percent-encoding, NUL and control characters, `.` and `..` segments: 400; over `MAX_TARGET`
bytes: 414) and opened one segment at a time without following any symlink (a link, a FIFO or a
device is not there: 404); a folder gives its `index.html`, never a listing. `serve` answers
with these; nothing here knows HTTP beyond the status to answer with."""

from __future__ import annotations

import mimetypes
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_to_bytes

MAX_TARGET = 4096
"""Longest request target (path and query, in bytes) answered; longer ones get 414."""
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TYPES = {
    ".js": "text/javascript",
    ".json": "application/json",
    ".xml": "application/xml",
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".css": "text/css",
    ".html": "text/html",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
"""Content types of what a site holds; other names go through `mimetypes`."""


class BadTarget(ValueError):
    """A request target that names no file: the status to answer with, and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def segments(path: str) -> list[str]:
    """The decoded segments of a URL path, or `BadTarget`: strict UTF-8 percent-decoding, no
    NUL or other control character, no `.` or `..` segment (a browser never sends one)."""
    if not path.startswith("/"):
        raise BadTarget(400, "the path must start with /")
    if _BAD_ESCAPE.search(path):
        raise BadTarget(400, "malformed percent-encoding")
    try:
        text = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise BadTarget(400, "the path is not UTF-8") from None
    if _CONTROL.search(text):
        raise BadTarget(400, "a control character in the path")
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise BadTarget(400, "a '.' or '..' segment in the path")
    return parts


@dataclass(frozen=True, slots=True)
class Found:
    """A file of the site, read."""

    name: str
    """Its file name, which decides its content type (`index.html` for a folder)."""
    body: bytes
    folder: bool
    """Whether the path named a folder (served as its `index.html`)."""


_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block


def read_inside(root: Path, parts: list[str]) -> Found | None:
    """The regular file at `root/parts...` (a folder: its `index.html`), opened one segment at a
    time relative to the one before and never through a symlink, so nothing outside `root` can
    be reached, not even by a link swapped in meanwhile. None when there is no such file, or the
    way passes a symlink, a FIFO, a device or anything but folders and one regular file."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for part in parts:
            fd = _step(fd, part)  # inside a file: ENOTDIR
        folder = stat.S_ISDIR(os.fstat(fd).st_mode)
        if folder:
            fd = _step(fd, "index.html")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            body = file.read()
        return Found("index.html" if folder else parts[-1], body, folder)
    except OSError:  # ENOENT, ELOOP (a symlink), ENOTDIR, ENAMETOOLONG, EACCES...
        return None
    finally:
        os.close(fd)


def _step(fd: int, part: str) -> int:
    """Open `part` inside the folder `fd` without following a symlink; `fd` is closed once the
    new one is open (and left open, for the caller to close, when that fails)."""
    opened = os.open(part, _OPEN, dir_fd=fd)
    os.close(fd)
    return opened


def content_type(name: str) -> str:
    suffix = Path(name).suffix.lower()
    kind = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    text = kind.startswith("text/") or kind in (
        "application/json",
        "application/xml",
        "image/svg+xml",
    )
    return f"{kind}; charset=utf-8" if text else kind
