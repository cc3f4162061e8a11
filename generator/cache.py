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
    return digest.digest()


def key(*parts: bytes) -> str:
    """The cache key of a value computed from `parts` by this version of the code."""
    digest = hashlib.sha256(code_version())
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


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
