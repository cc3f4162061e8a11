"""What a diagnosis needs of one entry (`EntryView` and its parts), and how a view is kept as
compact JSON values in the compiled catalogue (`record`, `from_record`).

The views hold no model objects: a diagnosis from the catalogue imports neither pydantic nor the
YAML loader (`catalogue.py`); `view` makes one from a loaded entry when `check` or a build has
one in hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nanopedia.model import Entry, Indicates


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
