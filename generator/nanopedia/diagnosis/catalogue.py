"""The compiled catalogue: what diagnosis needs of every entry, compiled once, read in parts.

`check` and `build` load and validate every entry in full (YAML, Markdown, the slowness test of
every fingerprint); a diagnosis needs only each entry's title, fingerprints, causes (with domain
and action), fix steps and affected ranges (`views.EntryView`). `compile_entries` turns an
entries folder into an `Artifact`: each usable entry's view as a JSON record, the files left out
with their first problem, as `scan.usable_entries` decided, and the literal prefilter of every
fingerprint (`prefilter.Index`). `dumps` writes its index as one JSON line and the records after
it, so a run parses the index and then only the records it wants (`catalogue` with `names`).
Every record is keyed by the content hash of its file and of the code that compiles it
(`code_key`), so a changed entry is compiled again and the others are reused.

Whether an artifact is current is decided as git decides its index is: by each file's stats
(size, mtime, ctime, inode) kept with the artifact, a file hashed again only when its stats
changed or are too recent to vouch for it (`verified`). The wheel ships the artifact of its own
entries (`setup.py` writes `SHIPPED` at build time); `compiled` takes the store's (the CLI's is
the user's cache folder, `incremental/catalogue.py`) when the stats or hashes match, else the
shipped one when the hashes match, else compiles what changed, and hands the result back to the
store. Nothing here imports pydantic or the YAML loader unless an entry must be compiled.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from nanopedia.diagnosis import prefilter
from nanopedia.diagnosis.prefilter import Index

# The views are named from here too: they are what a catalogue holds.
from nanopedia.diagnosis.views import CauseView as CauseView
from nanopedia.diagnosis.views import EntryView as EntryView
from nanopedia.diagnosis.views import FingerprintView as FingerprintView
from nanopedia.diagnosis.views import FixView as FixView
from nanopedia.diagnosis.views import RangeView as RangeView
from nanopedia.diagnosis.views import SystemView as SystemView
from nanopedia.diagnosis.views import from_record as from_record
from nanopedia.diagnosis.views import record as record
from nanopedia.diagnosis.views import view as view
from nanopedia.diagnosis.views import views as views
from nanopedia.errors import Location, Problem

#: Version of the artifact's layout; bump it when a record changes shape.
FORMAT = 2
#: The artifact of the entries the package ships, written by `setup.py` into a wheel.
SHIPPED = Path(__file__).resolve().parent / "catalogue.json"
#: Problem codes that make an entry's fingerprints unusable: a pattern outside the portable
#: subset. (A pattern `check` finds slow, E033, still matches in linear time; that verdict is
#: timed, and the load of the machine must never take an entry out of a diagnosis.)
UNUSABLE_PATTERN = frozenset({"E030"})
#: The package's modules whose code decides an artifact: the loader, validation, the model,
#: this, the prefilter and the views.
_CODE = (
    "content",
    "model.py",
    "errors.py",
    "diagnosis/catalogue.py",
    "diagnosis/prefilter.py",
    "diagnosis/views.py",
)
_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Catalogue:
    """The entries of a folder a diagnosis can use, and the first problem of each file left out."""

    entries: tuple[EntryView, ...]
    """Usable entries, by id."""
    skipped: tuple[Problem, ...]
    """The first problem of each entry file left out, by path."""


class Store(Protocol):
    """Where compiled artifacts are kept between runs, one per entries folder."""

    def read(self, root: Path) -> bytes | None:
        """The artifact last written for `root`, or None."""

    def write(self, root: Path, data: bytes) -> None:
        """Keep `data` as the artifact of `root` (a failure to write is not an error)."""


def code_key(package: Path = _PACKAGE) -> str:
    """A hash of the code that decides a record (`_CODE`): another version never reuses one."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    for part in _CODE:
        path = package / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.relative_to(package).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def file_hashes(root: Path) -> dict[str, str]:
    """The entry files of `root` (every `*.yaml` but the tag registry), each with the hash of
    its bytes; a file that cannot be read gets the empty hash and is compiled (and refused)."""
    from nanopedia.content.files import entry_names

    return {name: _hash(root / name) for name in entry_names(root)}


def _hash(path: Path) -> str:
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return ""


def file_stats(root: Path) -> dict[str, list[int] | None]:
    """The entry files of `root` (`file_hashes`' names), each with what `os.stat` says of it
    that changes when it is written or replaced (size, mtime, ctime, inode), as git's index
    keeps; None when it cannot be read."""
    from nanopedia.content.files import entry_names

    stats: dict[str, list[int] | None] = {}
    for name in entry_names(root):
        try:
            st = os.stat(root / name)
            stats[name] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        except OSError:
            stats[name] = None
    return stats


def corpus_key(code: str, hashes: Mapping[str, str]) -> str:
    """The key of a whole folder: the code's and every file's name and hash."""
    digest = hashlib.sha256(code.encode())
    for name, value in sorted(hashes.items()):
        digest.update(f"\0{name}\0{value}".encode())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Artifact:
    """A compiled folder as stored: each entry file's record or its first problem, the
    prefilter of their fingerprints, and the files' stats when they were hashed."""

    key: str
    """`corpus_key` of the folder it was compiled from."""
    code: str
    """`code_key` of the code that compiled it."""
    files: dict[str, tuple[str, list[int] | None, list[Any] | None]]
    """File name -> (content hash, where in `records` its `record` is when usable, else the
    first problem that leaves it out, if any)."""
    records: bytes
    """The records, each compact JSON, one after the other: decoded only when wanted."""
    prefilter: Index
    """The literals of every usable entry's fingerprints (`prefilter.build`)."""
    stats: dict[str, list[int] | None] = field(default_factory=dict)
    """`file_stats` of the files when they were hashed (none in the shipped artifact)."""
    stamp: int = 0
    """`time.time_ns()` before those stats were taken: a file changed since then may have
    kept its stats (a timestamp is coarser than a write), so one as recent is hashed again."""

    def record(self, name: str) -> EntryView | None:
        """The view of file `name`'s entry, when it is usable."""
        span = self.files[name][1]
        if span is None:
            return None
        return from_record(json.loads(self.records[span[0] : span[0] + span[1]]))


#: How much older than an artifact's stamp a file must be for its stats to vouch for it (the
#: coarsest file timestamps, FAT's, are 2 s).
RACY_NS = 2_000_000_000


def verified(artifact: Artifact, stats: Mapping[str, list[int] | None]) -> set[str]:
    """The files whose stats are the artifact's and old enough to be trusted: their hash is
    the artifact's without reading them."""
    edge = artifact.stamp - RACY_NS
    return {
        name
        for name, st in stats.items()
        if st is not None and artifact.stats.get(name) == st and max(st[1], st[2]) < edge
    }


def dumps(artifact: Artifact) -> bytes:
    """Deterministic JSON of an artifact's index, a newline, then its records."""
    head = {
        "format": FORMAT,
        "key": artifact.key,
        "code": artifact.code,
        "files": artifact.files,
        "prefilter": artifact.prefilter.data(),
        "records": len(artifact.records),
        "stats": artifact.stats,
        "stamp": artifact.stamp,
    }
    text = json.dumps(head, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode() + b"\n" + artifact.records


def loads(data: bytes | None) -> Artifact | None:
    """The artifact in `data`, or None for anything else (empty, truncated, corrupt, another
    format): a cache that cannot be read is compiled again, never trusted."""
    if not data:
        return None
    cut = data.find(b"\n")
    try:
        doc = json.loads(data[:cut])
        if doc.get("format") != FORMAT or len(data) - cut - 1 != doc["records"]:
            return None
        files = {name: (h, span, prob) for name, (h, span, prob) in doc["files"].items()}
        for value, span, prob in files.values():
            if not isinstance(value, str) or (span is not None and prob is not None):
                return None
        return Artifact(
            str(doc["key"]),
            str(doc["code"]),
            files,
            data[cut + 1 :],
            prefilter.from_data(doc["prefilter"]),
            dict(doc["stats"]),
            int(doc["stamp"]),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def catalogue(artifact: Artifact, root: Path, names: Iterable[str] | None = None) -> Catalogue:
    """The catalogue an artifact holds (with `names`, of those files' entries alone), each
    problem located as the current directory shows it (`content.files.display`)."""
    from nanopedia.content.files import display_prefix

    chosen = artifact.files if names is None else [n for n in names if n in artifact.files]
    found = (artifact.record(name) for name in chosen)
    entries = sorted((e for e in found if e is not None), key=lambda e: e.id)
    prefix = display_prefix(root)
    skipped = [
        Problem(Location(prefix + name, line, col), code, message, hint, severity)
        for name, (_, _, prob) in sorted(artifact.files.items())
        if prob
        for line, col, code, message, hint, severity in [prob]
    ]
    return Catalogue(tuple(entries), tuple(skipped))


def compile_entries(
    root: Path, hashes: Mapping[str, str], code: str, previous: Iterable[Artifact | None] = ()
) -> Artifact:
    """The artifact of folder `root`: the records of `previous` artifacts whose file hash and
    code match are reused, every other file is loaded and validated (`content.corpus`)."""
    reuse: dict[tuple[str, str], tuple[Artifact, str]] = {}
    for old in previous:
        if old is not None and old.code == code:
            reuse.update({(name, row[0]): (old, name) for name, row in old.files.items()})
    files: dict[str, tuple[str, list[int] | None, list[Any] | None]] = {}
    records = bytearray()
    patterns: list[tuple[str, str]] = []
    for name, value in hashes.items():
        kept = reuse.get((name, value)) if value else None
        if kept is not None:
            old, old_name = kept
            entry, problem = old.record(old_name), old.files[old_name][2]
        else:
            value, row, problem = compile_file(root / name, value)
            entry = from_record(row) if row else None
        span = None
        if entry is not None:
            data = json.dumps(record(entry), separators=(",", ":"), ensure_ascii=False).encode()
            span = [len(records), len(data)]
            records += data
            patterns += [(name, f.pattern) for f in entry.fingerprints]
        files[name] = (value, span, problem)
    return Artifact(
        corpus_key(code, hashes), code, files, bytes(records), prefilter.build(patterns)
    )


def compile_file(path: Path, value: str) -> tuple[str, list[Any] | None, list[Any] | None]:
    """One entry file loaded and validated in full: its record, or the first problem that
    leaves it out (it did not load, or a pattern is outside the portable subset)."""
    from nanopedia.content.corpus import display, load_entry

    source, problems = load_entry(path)
    shown = display(path)
    errors = sorted(
        (
            p
            for p in problems
            if p.severity == "error"
            and p.location.path == shown
            and (source is None or p.code in UNUSABLE_PATTERN)
        ),
        key=Problem.sort_key,
    )
    if source is not None and not errors:
        return value, record(view(source.entry)), None
    if not errors:
        return value, None, None
    first, loc = errors[0], errors[0].location
    return value, None, [loc.line, loc.col, first.code, first.message, first.hint, first.severity]


def load(root: Path, store: Store | None = None, shipped: Path = SHIPPED) -> Catalogue:
    """The catalogue of folder `root` (`compiled`)."""
    return catalogue(compiled(root, store, shipped), root)


def compiled(root: Path, store: Store | None = None, shipped: Path = SHIPPED) -> Artifact:
    """The artifact of folder `root`: the store's when the stats of every file are those it
    was compiled from (no file read), else the store's or the shipped one when the files'
    hashes are those it was compiled from by this code, else compiled (what changed). Handed
    back to `store` with the files' stats whenever a file was read, unless it is the shipped
    one (an installed package's own entries are hashed each run: a few milliseconds that do
    not grow, and no copy in the user's cache)."""
    stamp = time.time_ns()
    stats = file_stats(root)
    code = code_key()
    kept = loads(store.read(root)) if store is not None else None
    trusted = verified(kept, stats) if kept is not None and kept.code == code else set()
    if kept is not None and len(trusted) == len(stats) and kept.files.keys() == stats.keys():
        return kept
    hashes = {
        name: kept.files[name][0] if kept is not None and name in trusted else _hash(root / name)
        for name in stats
    }
    key = corpus_key(code, hashes)
    if kept is not None and kept.key == key:
        fresh = kept
    else:
        try:
            packaged = loads(shipped.read_bytes())
        except OSError:
            packaged = None
        if packaged is not None and packaged.key == key:
            return packaged  # the wheel's own entries: used as they are, nothing written
        fresh = compile_entries(root, hashes, code, (kept, packaged))
    fresh = replace(fresh, stats=stats, stamp=stamp)
    if store is not None:
        store.write(root, dumps(fresh))
    return fresh


def usable(root: Path) -> tuple[list[EntryView], list[Problem]]:
    """The usable entries and the skipped files' problems of `root`, compiled now (no store)."""
    found = load(root, None, Path(os.devnull))
    return list(found.entries), list(found.skipped)
