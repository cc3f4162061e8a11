"""The build cache in `.nanopedia-cache/`: values keyed by a hash of everything they depend on.

Keys include a fingerprint of the generator's own code and of the libraries that shape the output,
so a cached value can never differ from what a cold build would compute. Files are written to a
temporary name and renamed, so a crash or a second process never leaves a half-written value.
Each file starts with a checksum of its pickle: a damaged file (a bad disk, a copy cut short, a
stray write) is a miss, deleted so that it is computed and written again, never unpickled.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import zlib
from importlib import metadata
from pathlib import Path
from typing import Any

from nanopedia.pins import repro_pins
from nanopedia.theme_dir import THEME

CACHE_DIR = ".nanopedia-cache"
_LIBRARIES = ("markdown-it-py", "pygments", "jinja2", "pydantic", "pyyaml")


def _code_version() -> bytes:
    """A fingerprint of the generator's source, the theme and the versions of its libraries."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent  # the package, every subpackage included
    for folder, pattern in ((here, "*.py"), (THEME, "*")):
        for path in sorted(folder.rglob(pattern)):
            if path.is_file():
                where = path.relative_to(folder).as_posix().encode()
                digest.update(where + b"\0" + path.read_bytes())
    for name in _LIBRARIES:
        digest.update(f"{name}={metadata.version(name)}".encode())
    digest.update(repr(sorted(repro_pins().items())).encode())  # pages say what repros ran with
    return digest.digest()


CODE_VERSION = _code_version()
"""What every cache key holds: a value computed by other code is never taken for this code's."""


def key(*parts: bytes) -> str:
    """The cache key of a value computed from `parts` by this version of the code."""
    digest = hashlib.sha256(CODE_VERSION)
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
    folder = base / CODE_VERSION.hex()[:16]
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
    versions = sorted(
        (p for p in found if len(p.name) == 16 and all(c in "0123456789abcdef" for c in p.name)),
        key=lambda p: (found[p], p.name),
        reverse=True,
    )
    return sorted([p for p in found if p.name in _LEGACY] + versions[KEEP_VERSIONS:])


MAGIC = b"NPC1"
"""The first bytes of every cache file, then the CRC-32 of the pickle that follows (big-endian)."""
_HEAD = len(MAGIC) + 4


def encode(value: Any) -> bytes:
    """A value as the bytes of its cache file."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + zlib.crc32(data).to_bytes(4, "big") + data


class Damaged(Exception):
    """A cache file that is not what `encode` wrote (never raised out of `Cache`)."""


def decode(raw: bytes) -> Any:
    """The value of a cache file's bytes; `Damaged` when the checksum or the pickle is wrong.
    The checksum (3 GB/s) catches random damage before the unpickler ever sees it; an error of
    the unpickler itself (a file that passes it by chance) is damage too, whatever its type."""
    view = memoryview(raw)
    if (
        len(raw) < _HEAD
        or view[: len(MAGIC)] != MAGIC
        or int.from_bytes(view[len(MAGIC) : _HEAD], "big") != zlib.crc32(view[_HEAD:])
    ):
        raise Damaged
    try:
        return pickle.loads(view[_HEAD:])
    except Exception as err:  # noqa: BLE001 - any unpickling error means a damaged file
        raise Damaged from err


class Cache:
    """Pickled values on disk, in one folder per kind of value. Nothing read from it is trusted
    blindly: a damaged file is a miss, and so is a value of the wrong type (`get`'s `kind_of`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, kind: str, k: str) -> Path:
        """The file a value is kept in."""
        return self.root / kind / k[:2] / k

    def get(self, kind: str, k: str, kind_of: type | tuple[type, ...] = object) -> Any | None:
        """The value kept under `k`, or None: missing, damaged (the file is deleted, so that the
        value is computed and written again) or not an instance of `kind_of`."""
        path = self.path(kind, k)
        try:  # from bytes: unpickling from a file object reads it in many small calls
            raw = path.read_bytes()
        except OSError:
            return None
        try:
            value = decode(raw)
            fits = isinstance(value, kind_of)
        except Damaged:
            fits = False
        if not fits:
            try:
                path.unlink()
            except OSError:
                pass  # a read-only cache: a miss every time, as with an empty one
            return None
        return value

    def put(self, kind: str, k: str, value: Any) -> bool:
        """Keep `value` under `k`; False when the disk refused (the cache only saves time, so a
        full or read-only disk is never an error of the build)."""
        path = self.path(kind, k)
        data = encode(value)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return False
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True
