"""The compiled catalogue: what diagnosis needs of every entry, compiled once, read in one go.

`check` and `build` load and validate every entry in full (YAML, Markdown, the slowness test of
every fingerprint); a diagnosis needs only each entry's title, fingerprints, causes (with domain
and action), fix steps and affected ranges. `compile_entries` turns an entries folder into those
views (`EntryView`) with the files left out and their first problem, as `scan.usable_entries`
decided; `dumps` and `loads` give one JSON artifact of them. Every record is keyed by the
content hash of its file and of the code that compiles it (`code_key`), so a changed entry is
compiled again and the others are reused.

The wheel ships the artifact of its own entries (`setup.py` writes `SHIPPED` at build time);
`load` takes it when it matches the folder, else the artifact a `Store` hands in (the CLI's is
the user's cache folder, `incremental/catalogue.py`), else compiles what changed and hands the
result back to the store. Nothing here imports pydantic or the YAML loader unless an entry must
be compiled.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nanopedia.errors import Location, Problem

if TYPE_CHECKING:
    from nanopedia.model import Entry, Indicates

#: Version of the artifact's layout; bump it when a record changes shape.
FORMAT = 1
#: The artifact of the entries the package ships, written by `setup.py` into a wheel.
SHIPPED = Path(__file__).resolve().parent / "catalogue.json"
#: Problem codes that make an entry's fingerprints unusable: a pattern outside the portable
#: subset. (A pattern `check` finds slow, E033, still matches in linear time; that verdict is
#: timed, and the load of the machine must never take an entry out of a diagnosis.)
UNUSABLE_PATTERN = frozenset({"E030"})
#: The package's modules whose code decides a record: the loader, validation, the model, this.
_CODE = ("content", "model.py", "errors.py", "diagnosis/catalogue.py")
_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class CauseView:
    """One root cause of an entry, as a verdict names it."""

    id: str
    """The cause's slug, which fingerprints and fix steps point to."""
    title: str
    """The cause in one line."""
    domain: str
    """Where the fault lives (`workload`, `environment`, ...)."""
    action: str
    """What a job-failure hook should do (`fix-code`, `retry`, ...)."""


@dataclass(frozen=True, slots=True)
class FixView:
    """One step of an entry's fix."""

    title: str
    """The step in one line."""
    causes: tuple[str, ...]
    """Ids of the causes it fixes; empty: every cause."""


@dataclass(frozen=True, slots=True)
class RangeView:
    """Releases of a package that have the failure: from `introduced` up to, not including,
    `fixed`."""

    introduced: str
    """The first release with the failure (`0`: every release before `fixed`)."""
    fixed: str | None
    """The first release without it, when there is one."""
    words: str
    """The range as a reader says it (`model.Range.words`): `2.6.0 to before 2.8.0`."""


@dataclass(frozen=True, slots=True)
class SystemView:
    """An affected system that names a package and its affected ranges (the others cannot be
    set against a version a log shows, so the view leaves them out)."""

    name: str
    """The system's name, as the entry gives it."""
    package: str
    """The package whose versions a log may show."""
    affected: tuple[RangeView, ...]
    """Its affected ranges (at least one)."""


@dataclass(frozen=True, slots=True)
class FingerprintView:
    """One fingerprint, with what the matcher compiles and what the ranker weighs."""

    id: str
    """Slug unique within the entry."""
    pattern: str
    """The pattern as the entry writes it."""
    program: str
    """The pattern both engines compile (`content.fingerprints.program`: ASCII case folded)."""
    ignore_case: bool
    """Whether `program` folds ASCII case."""
    indicates: Indicates
    """`decisive`, `supporting`, `context` or `benign`."""
    collateral: bool
    """The line is a consequence of a failure elsewhere."""
    specificity: int
    """Fixed characters of the pattern (`content.portable.literal_length`): breaks ties."""
    cause: str | None
    """Id of the root cause the line points to, when it points to one."""


@dataclass(frozen=True, slots=True)
class EntryView:
    """What a diagnosis needs of one entry."""

    id: str
    """The entry id."""
    title: str
    """The entry title."""
    fingerprints: tuple[FingerprintView, ...]
    """Its fingerprints, in the entry's order."""
    causes: tuple[CauseView, ...]
    """Its root causes, in the entry's order (at least one)."""
    fixes: tuple[FixView, ...]
    """Its fix steps, in the entry's order (at least one)."""
    systems: tuple[SystemView, ...] = ()
    """Its affected systems with a package and affected ranges, in the entry's order."""


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


def view(entry: Entry | EntryView) -> EntryView:
    """The view of a loaded entry (a view is returned as it is)."""
    if isinstance(entry, EntryView):
        return entry
    from nanopedia.content.fingerprints import program
    from nanopedia.content.portable import literal_length

    return EntryView(
        entry.id,
        entry.title,
        tuple(
            FingerprintView(
                fp.id,
                fp.pattern,
                program(fp),
                fp.ignore_case,
                fp.indicates,
                fp.collateral,
                literal_length(fp.pattern),
                fp.cause,
            )
            for fp in entry.fingerprints
        ),
        tuple(CauseView(rc.id, rc.title, rc.domain, rc.action) for rc in entry.root_causes),
        tuple(FixView(f.title, tuple(f.causes)) for f in entry.fix),
        tuple(
            SystemView(
                s.name,
                s.package,
                tuple(RangeView(r.introduced, r.fixed, r.words()) for r in s.affected),
            )
            for s in entry.affected_systems
            if s.package is not None and s.affected
        ),
    )


def views(entries: Iterable[Entry | EntryView]) -> list[EntryView]:
    """`view` of each entry, in the order given."""
    return [view(e) for e in entries]


def record(entry: EntryView) -> list[Any]:
    """An entry view as compact JSON values (`from_record` reads them back)."""
    return [
        entry.id,
        entry.title,
        [
            [
                f.id,
                f.pattern,
                f.program,
                f.ignore_case,
                f.indicates,
                f.collateral,
                f.specificity,
                f.cause,
            ]
            for f in entry.fingerprints
        ],
        [[c.id, c.title, c.domain, c.action] for c in entry.causes],
        [[f.title, list(f.causes)] for f in entry.fixes],
        [
            [s.name, s.package, [[r.introduced, r.fixed, r.words] for r in s.affected]]
            for s in entry.systems
        ],
    ]


def from_record(row: list[Any]) -> EntryView:
    """The entry view a `record` holds."""
    ident, title, prints, causes, fixes, systems = row
    return EntryView(
        ident,
        title,
        tuple(FingerprintView(*f) for f in prints),
        tuple(CauseView(*c) for c in causes),
        tuple(FixView(t, tuple(c)) for t, c in fixes),
        tuple(SystemView(n, p, tuple(RangeView(*r) for r in ranges)) for n, p, ranges in systems),
    )


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

    hashes = {}
    for name in entry_names(root):
        try:
            with open(root / name, "rb") as file:
                hashes[name] = hashlib.sha256(file.read()).hexdigest()
        except OSError:
            hashes[name] = ""
    return hashes


def corpus_key(code: str, hashes: Mapping[str, str]) -> str:
    """The key of a whole folder: the code's and every file's name and hash."""
    digest = hashlib.sha256(code.encode())
    for name, value in sorted(hashes.items()):
        digest.update(f"\0{name}\0{value}".encode())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Artifact:
    """A compiled folder as stored: each entry file's record or its first problem."""

    key: str
    """`corpus_key` of the folder it was compiled from."""
    code: str
    """`code_key` of the code that compiled it."""
    files: dict[str, tuple[str, list[Any] | None, list[Any] | None]]
    """File name -> (content hash, `record` when usable, else the first problem that leaves it
    out, if any)."""


def dumps(artifact: Artifact) -> bytes:
    """Deterministic JSON of an artifact."""
    return json.dumps(
        {"format": FORMAT, "key": artifact.key, "code": artifact.code, "files": artifact.files},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def loads(data: bytes | None) -> Artifact | None:
    """The artifact in `data`, or None for anything else (empty, truncated, corrupt, another
    format): a cache that cannot be read is compiled again, never trusted."""
    if not data:
        return None
    try:
        doc = json.loads(data)
        if doc.get("format") != FORMAT:
            return None
        files = {name: (h, rec, prob) for name, (h, rec, prob) in doc["files"].items()}
        for value, rec, prob in files.values():
            if not isinstance(value, str) or (rec is not None and prob is not None):
                return None
        return Artifact(str(doc["key"]), str(doc["code"]), files)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def catalogue(artifact: Artifact, root: Path) -> Catalogue:
    """The catalogue an artifact holds, each problem located as the current directory shows it
    (`content.files.display`)."""
    from nanopedia.content.files import display_prefix

    entries = sorted(
        (from_record(rec) for _, rec, _ in artifact.files.values() if rec), key=lambda e: e.id
    )
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
    reuse: dict[tuple[str, str], tuple[str, list[Any] | None, list[Any] | None]] = {}
    for old in previous:
        if old is not None and old.code == code:
            reuse.update({(name, row[0]): row for name, row in old.files.items()})
    files = {}
    for name, value in hashes.items():
        kept = reuse.get((name, value)) if value else None
        files[name] = kept if kept is not None else compile_file(root / name, value)
    return Artifact(corpus_key(code, hashes), code, files)


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
    """The catalogue of folder `root`: the shipped artifact when it was compiled from these
    files by this code, else the store's, else compiled (what changed) and handed to `store`."""
    hashes = file_hashes(root)
    code = code_key()
    key = corpus_key(code, hashes)
    try:
        packaged = loads(shipped.read_bytes())
    except OSError:
        packaged = None
    if packaged is not None and packaged.key == key:
        return catalogue(packaged, root)
    kept = loads(store.read(root)) if store is not None else None
    if kept is not None and kept.key == key:
        return catalogue(kept, root)
    fresh = compile_entries(root, hashes, code, (kept, packaged))
    if store is not None:
        store.write(root, dumps(fresh))
    return catalogue(fresh, root)


def usable(root: Path) -> tuple[list[EntryView], list[Problem]]:
    """The usable entries and the skipped files' problems of `root`, compiled now (no store)."""
    found = load(root, None, Path(os.devnull))
    return list(found.entries), list(found.skipped)
