"""What a build compares with the last one: the entry files' stat stamps and hashes (only a
file whose stamp is new is read), the tag registry's and the theme's hashes, the site folder's
identity and the manifest of its files."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path

from nanopedia.content.files import TAGS_FILE
from nanopedia.content.load import read_file
from nanopedia.errors import NanopediaError
from nanopedia.incremental.cache import key
from nanopedia.incremental.inputs import Listing

STAT_TRUST_NS = 2_000_000_000
"""A file modified this recently may change again within its timestamp's tick: hash it anew."""


def file_hashes(
    root: Path,
    names: list[str],
    known: Mapping[str, tuple[int, int, int, bytes]],
    trust: Collection[str] = (),
    listed: Listing | None = None,
) -> tuple[dict[str, tuple[int, int, int, bytes]], dict[str, bytes]]:
    """The sha256 of every file's bytes, by name; a file whose size, modification time and inode
    are those of the last build is not read again (measured at 10,000 entries: reading and
    hashing 80 MB was most of an unchanged rebuild); stamps already `listed` are not taken
    again. Also the stamps to trust next time."""
    seen: dict[str, tuple[int, int, int, bytes]] = {}
    hashes: dict[str, bytes] = {}
    recent = (listed.taken_ns if listed else time.time_ns()) - STAT_TRUST_NS
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return seen, dict.fromkeys(names, b"")
    try:
        for name in names:
            if name in trust and name in known:  # unchanged, says the caller's file watcher
                seen[name] = known[name]
                hashes[name] = known[name][3]
                continue
            try:
                if listed is None:
                    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                    stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
                elif name in listed.stamps:
                    stamp = listed.stamps[name]
                else:
                    raise FileNotFoundError(name)
                hit = known.get(name)
                if hit is not None and hit[:3] == stamp:
                    content = hit[3]
                else:
                    content = hashlib.sha256(read_file(name, name, folder)).digest()
            except (OSError, NanopediaError):  # unreadable: loading it reports where and why
                hashes[name] = b""
                continue
            if stamp[1] < recent:
                seen[name] = (*stamp, content)
            hashes[name] = content
    finally:
        os.close(folder)
    return seen, hashes


def folder_id(out: Path) -> tuple[int, int]:
    """The site folder's identity: (device, inode); (-1, -1) when there is none."""
    try:
        info = os.stat(out)
    except OSError:
        return (-1, -1)
    return (info.st_dev, info.st_ino)


def updated_manifest(
    out: Path, manifest: dict[str, tuple[int, int]], written: list[str], files: set[str]
) -> dict[str, tuple[int, int]]:
    """The manifest of the new site: the files written are stat'ed; those kept are links to (or
    copies of) the old site's, with its sizes and modification times."""
    new = {p: v for p, v in manifest.items() if p in files}
    for path in written:
        info = (out / path).stat()
        new[path] = (info.st_size, info.st_mtime_ns)
    return new


def tags_hash(entries: Path) -> bytes:
    """The tag registry's hash: read every build (it is small), so an edit to a tag's title or
    description alone is never taken for "up to date"."""
    try:
        return hashlib.sha256((entries / TAGS_FILE).read_bytes()).digest()
    except OSError:
        return b""


def site_key(out: Path) -> str:
    return key(str(out.resolve()).encode())


def theme_version(theme: Path) -> bytes:
    """A hash of a theme's files (the repository's own theme is in `CODE_VERSION` already)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in theme.rglob("*") if p.is_file()):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.digest()
