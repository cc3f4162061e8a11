"""Where `nanopedia diagnose` keeps the compiled catalogue of an entries folder between runs.

The user's cache folder (`$NANOPEDIA_CACHE`, else `$XDG_CACHE_HOME/nanopedia`, else
`~/.cache/nanopedia`) holds one file per entries folder, named after a hash of its resolved path,
and the Hyperscan databases of `diagnosis/presence.py` (`get` and `put` by name);
`diagnosis/catalogue.py` and `presence.py` decide what the bytes mean and when they are stale
(content hashes), so this store only reads and writes them: a new file replaces the old in one
rename, and a folder that cannot be written leaves the diagnosis to compile again next time,
never fails it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The most bytes read back: far above any real catalogue, so a runaway file is not read whole.
MAX_BYTES = 256 << 20


def default_folder() -> Path:
    """The user's cache folder for Nanopedia."""
    if os.environ.get("NANOPEDIA_CACHE"):
        return Path(os.environ["NANOPEDIA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nanopedia"


@dataclass(frozen=True, slots=True)
class FolderStore:
    """Compiled catalogues as files of one folder (`diagnosis.catalogue.Store`)."""

    folder: Path
    """Where the files are."""

    def path(self, root: Path) -> Path:
        """The file of the entries folder `root`."""
        name = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:24]
        return self.folder / f"catalogue-{name}.json"

    def read(self, root: Path) -> bytes | None:
        return self.get(self.path(root).name)

    def write(self, root: Path, data: bytes) -> None:
        self.put(self.path(root).name, data)

    def get(self, name: str) -> bytes | None:
        """The bytes of file `name`, or None (no such file, or unreadable)."""
        try:
            with open(self.folder / name, "rb") as file:
                return file.read(MAX_BYTES)
        except OSError:
            return None

    def put(self, name: str, data: bytes) -> None:
        """File `name` replaced by `data` in one rename (a folder that cannot be written is
        left as it is)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, scratch = tempfile.mkstemp(prefix=f".{name}-", dir=self.folder)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(scratch, self.folder / name)
        except OSError:
            try:
                os.unlink(scratch)
            except OSError:
                pass


def user_store() -> FolderStore:
    """The store in the user's cache folder."""
    return FolderStore(default_folder())
