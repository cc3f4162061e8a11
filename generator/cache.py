"""The build cache in `.nanopedia-cache/`: values keyed by a hash of everything they depend on.

Keys include a fingerprint of the generator's own code and of the libraries that shape the output,
so a cached value can never differ from what a cold build would compute. Files are written to a
temporary name and renamed, so a crash or a second process never leaves a half-written value;
an unreadable value is simply a miss.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from .pins import repro_pins
from .theme_dir import THEME

CACHE_DIR = ".nanopedia-cache"
_LIBRARIES = ("markdown-it-py", "pygments", "jinja2", "pydantic", "pyyaml")


@cache
def code_version() -> bytes:
    """A fingerprint of the generator's source, the theme and the versions of its libraries."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted([*here.glob("*.py"), *THEME.rglob("*")]):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for name in _LIBRARIES:
        digest.update(f"{name}={metadata.version(name)}".encode())
    digest.update(repr(sorted(repro_pins().items())).encode())  # pages say what repros ran with
    return digest.digest()


def key(*parts: bytes) -> str:
    """The cache key of a value computed from `parts` by this version of the code."""
    digest = hashlib.sha256(code_version())
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


KEEP_VERSIONS = 3
"""Versions of the code whose values are kept; the others' are deleted."""
_LEGACY = frozenset({"entries", "kept", "state", "templates"})
"""What the cache held directly before it had a folder per version."""


def open_cache(base: Path) -> Cache:
    """The cache of this version of the code in `base`, in a folder of its own: a value of
    another version can never be read again, and after upgrades (or edits of the generator or
    theme) they were most of the cache: 9 GB in a 10,000-entry benchmark folder."""
    folder = base / code_version().hex()[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)  # last used now: `stale` keeps the most recently used
    except OSError:
        pass  # unwritable: every value is a miss, as with an empty cache
    return Cache(folder)


def stale(base: Path) -> list[Path]:
    """The folders of `base` to delete: versions beyond the `KEEP_VERSIONS` most recently used,
    and what the cache held before it had version folders. Nothing else is touched."""
    try:
        found = {p: p.stat().st_mtime_ns for p in base.iterdir() if p.is_dir()}
    except OSError:  # gone, or being changed by another build: collect next time
        return []
    versions = sorted((p for p in found if len(p.name) == 16 and
                       all(c in "0123456789abcdef" for c in p.name)),
                      key=lambda p: (found[p], p.name), reverse=True)
    return sorted([p for p in found if p.name in _LEGACY] + versions[KEEP_VERSIONS:])


class Cache:
    """Pickled values on disk, in one folder per kind of value."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, kind: str, k: str) -> Path:
        """The file a value is kept in."""
        return self.root / kind / k[:2] / k

    def get(self, kind: str, k: str) -> Any | None:
        try:  # from bytes: unpickling from a file object reads it in many small calls
            return pickle.loads(self.path(kind, k).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None

    def put(self, kind: str, k: str, value: Any) -> None:
        path = self.path(kind, k)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
