"""Ranking: the entries that scans point to, best first, and the rank where the failure began.

Scoring and the rules here are mirrored by `theme/static/diagnose-worker.js`, which reads
`contract.export_data()`, so the browser page gives the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nanopedia.diagnosis import elastic, flight
from nanopedia.diagnosis.lines import ENQUEUED, file_rank
from nanopedia.diagnosis.scan import EVIDENCE_CAP, LATE_LINES, Evidence, FileScan

#: The fingerprint id that evidence from a Flight Recorder finding carries.
FLIGHT_FINGERPRINT = "flight-recorder"

#: Score of one fingerprint by what it indicates; extra lines of the same fingerprint add 10 % each,
#: up to five.
WEIGHTS: dict[str, float] = {"decisive": 10.0, "context": 4.0, "supporting": 3.0, "benign": 1.0}
#: Weight left to collateral evidence, so the cause ranks above its consequences.
COLLATERAL_FACTOR = 0.1
#: Each further distinct line of a fingerprint adds this share of its weight, for at most
#: `EXTRA_LINES` lines: repeated evidence counts, but never more than half again.
EXTRA_LINE_SHARE = 0.1
EXTRA_LINES = 5


@dataclass(frozen=True, slots=True)
class Candidate:
    """One entry that matched, with its score and the lines that prove it."""

    id: str
    """The entry id."""
    title: str
    """The entry title."""
    score: float
    """Sum of fingerprint weights; collateral evidence counts for `COLLATERAL_FACTOR`."""
    benign: bool
    """All its evidence is of the benign kind (normal in moderation, explained by the entry)."""
    evidence: tuple[Evidence, ...]
    """The lines, in file then line order."""
    strength: int = 2
    """`tier` of its evidence: 2, a decisive line of its own; 1, only evidence shared with other
    entries or of a weaker kind; 0, collateral evidence only."""

    placed: bool = False
    """`placed`: with no decisive line of its own, its context lines (the frames of its
    framework) place a line it shares with other entries; it ranks above those that share the
    line with nothing to place it (specific before generic)."""

    @property
    def possible(self) -> bool:
        """No decisive line of its own: a possible answer, never ranked above a certain one."""
        return self.strength < 2


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The answer: candidates best first, and where the first failure appeared."""

    matches: tuple[Candidate, ...]
    """Candidate entries, best first."""
    initiating_rank: int | None
    """The rank that failed first, when known."""
    initiating: Evidence | None
    """The evidence line of the first failure, when one stands out."""
    initiating_reason: str | None
    """How the first failure was decided (Root Cause block, timestamps, NCCL progress, order)."""
    files: tuple[FileScan, ...] = field(default=())
    """Per-file scan results, in the order given."""
    silent_ranks: tuple[int, ...] = ()
    """Ranks known from per-rank file names, or from the launcher's rank list in a combined log,
    that gave no evidence at all: a rank that hung, was killed before it could print, or ran
    fine."""
    error_files: tuple[elastic.ErrorFile, ...] = ()
    """The torchelastic error files read, in the order given."""
    flight_report: flight.Report | None = None
    """What the Flight Recorder dumps showed, when some were read."""
    root_cause_rank: int | None = None
    """The rank torchrun's Root Cause block names: the first failure its agent *observed*, often a
    collateral rank (its host is the one the block gives for that rank)."""


def entry_score(evidence: list[Evidence], shared: set[tuple[str, int]]) -> float:
    """Sum over distinct fingerprints of weight x (1 + 0.1 x extra lines, at most five).

    Extra lines count once per rank and text: a rank that prints the same line a thousand times
    (a warning in a loop) is one piece of evidence, not a thousand. A line that fingerprints of
    several entries match counts as supporting at most for each: it cannot decide between them,
    so the context lines (frames, warnings) do.
    """
    seen: dict[str, set[tuple[int | None, str]]] = {}
    weight: dict[str, float] = {}
    for ev in evidence:
        seen.setdefault(ev.fingerprint, set()).add((ev.rank, ev.text))
        w = WEIGHTS[ev.indicates] * (COLLATERAL_FACTOR if ev.collateral else 1.0)
        if (ev.file, ev.line) in shared:
            w = min(w, WEIGHTS["supporting"])
        weight[ev.fingerprint] = max(weight.get(ev.fingerprint, 0.0), w)
    score = sum(
        w * (1 + EXTRA_LINE_SHARE * min(len(seen[fp]) - 1, EXTRA_LINES)) for fp, w in weight.items()
    )
    return round(score, 2)


def tier(evidence: Iterable[Evidence], shared: set[tuple[str, int]]) -> int:
    """2: a decisive line that is neither collateral nor matched by another entry too; 1: other
    evidence that is not collateral; 0: collateral only. Candidates sort by tier first, so a
    wrapper never outranks what it wraps and a generic line never outranks an exact error."""
    own = [e for e in evidence if not e.collateral]
    if any(e.indicates == "decisive" and (e.file, e.line) not in shared for e in own):
        return 2
    return 1 if own else 0


def placed(evidence: Iterable[Evidence], shared: set[tuple[str, int]]) -> bool:
    """Whether context lines of its own (frames of FSDP, DeepSpeed, a compiler) stand beside a
    line it shares with other entries (a generic error line). Frames are context: they do not
    make a generic line an exact error, but they say whose setting it failed in, so an entry
    placed by them ranks above a generic entry that shares the line, whatever the repeats of
    that line add to its score."""
    own = [e for e in evidence if not e.collateral]
    return any(e.indicates == "context" for e in own) and any(
        e.indicates != "context" and (e.file, e.line) in shared for e in own
    )


def rank_key(c: Candidate) -> tuple[int, int, float, float, int, str]:
    """Best first: tier, placed by its context (within tier 1), score, the strongest kind of
    line it has (an entry that calls the line decisive beats one that calls it supporting), the
    most specific pattern among those lines, then the id (deterministic, never decisive in
    practice)."""
    strongest = max(WEIGHTS[e.indicates] for e in c.evidence)
    specific = max(e.specificity for e in c.evidence if WEIGHTS[e.indicates] == strongest)
    return (-c.strength, -c.placed, -c.score, -strongest, -specific, c.id)


def first_failure(evidence: list[Evidence], order: dict[str, int]) -> Evidence | None:
    """The earliest line: by timestamp when every candidate has one, else by file then line."""
    if not evidence:
        return None
    if all(e.timestamp for e in evidence):
        return min(evidence, key=lambda e: (e.timestamp or "", order[e.file], e.line))
    return min(evidence, key=lambda e: (order[e.file], e.line))


def flight_evidence(report: flight.Report | None, titles: Mapping[str, str]) -> list[Evidence]:
    """Each Flight Recorder finding as a decisive line of the entry that explains it, when that
    entry is among `titles` (entry id to title): in the dump of the first rank it names, at
    line 0 (the whole file)."""
    if report is None:
        return []
    files = dict((r, f) for f, r in report.files)
    return [
        Evidence(
            f.entry,
            titles[f.entry],
            files.get(f.ranks[0], report.files[0][0]),
            0,
            f.ranks[0],
            f.text,
            FLIGHT_FINGERPRINT,
            "decisive",
            None,
        )
        for f in report.findings
        if f.entry in titles
    ]


def diagnose(
    scans: list[FileScan],
    errors: Sequence[elastic.ErrorFile] = (),
    report: flight.Report | None = None,
    titles: Mapping[str, str] | None = None,
) -> Diagnosis:
    """Rank the entries the scans point to and find the rank where the failure began.

    `errors` are the torchelastic error files read (their scans, `scan.scan_error_file`, are
    among `scans`); `report` what Flight Recorder dumps showed, whose findings count as decisive
    evidence of the entries they name when `titles` (entry id to title) holds them.

    Rules (mirrored in `diagnose-worker.js`): when there is decisive or supporting evidence from a
    fingerprint that is not `collateral` (a rank that really failed), the lines of `collateral`
    fingerprints are marked collateral and weigh little. An entry whose only evidence is `context`
    lines is no candidate. The first failure is the earliest decisive line that is not collateral
    (by timestamps when every such line has one; those past the evidence cap count too,
    `FileScan.late`), or the rank of the torchelastic error file with
    the earliest timestamp (torchrun's own rule; among files of the same second, the one with a
    decisive line): evidence wins over torchrun's Root Cause block, which names the first failure
    its agent observed, and the reason says so when the two disagree. The block decides when no
    such evidence names a rank; else, for a pure collective timeout, the rank whose last enqueued
    NCCL work is lowest (it is the one behind); else the earliest line of the best candidate.
    """
    order = {s.file: i for i, s in enumerate(scans)}
    for f, _ in report.files if report else ():
        order.setdefault(f, len(order))
    evidence = [ev for s in scans for ev in s.evidence] + flight_evidence(report, titles or {})
    primary = [e for e in evidence if e.indicates == "decisive" and not e.consequence]
    primary += [e for s in scans for e in s.late]
    if any(e.indicates in ("decisive", "supporting") and not e.consequence for e in evidence):
        evidence = [replace(e, collateral=True) if e.consequence else e for e in evidence]
    by_entry: dict[str, list[Evidence]] = {}
    owners: dict[tuple[str, int], set[str]] = {}
    for ev in evidence:
        by_entry.setdefault(ev.entry, []).append(ev)
        owners.setdefault((ev.file, ev.line), set()).add(ev.entry)
    shared = {where for where, ids in owners.items() if len(ids) > 1}
    matches = []
    for entry_id, found in by_entry.items():
        if all(e.indicates == "context" for e in found):
            continue
        found.sort(key=lambda e: (order[e.file], e.line))
        benign = all(e.indicates == "benign" for e in found)
        score = entry_score(found, shared)
        strength = tier(found, shared)
        matches.append(
            Candidate(
                entry_id,
                found[0].title,
                score,
                benign,
                tuple(found),
                strength,
                strength == 1 and placed(found, shared),
            )
        )
    matches.sort(key=rank_key)
    first, rank, reason = _initiating(scans, matches, primary, order)
    if (earliest := _first_error_file(errors, primary, order)) is not None:
        first, rank, reason = earliest
    roots = [r for s in scans for _, r in s.root_ranks]
    root = roots[0] if roots else None
    if root is not None and (primary or earliest is not None) and rank is not None:
        reason = f"{reason}; {_root_says(root, rank)}"
    elif root is not None:
        rank, reason = root, "torchrun Root Cause (first observed failure) block"
        in_rank = [e for e in primary or (matches[0].evidence if matches else ()) if e.rank == rank]
        first = first_failure(in_rank, order)
    known = {r for s in scans if (r := file_rank(s.file)) is not None}
    spoke = {e.rank for e in evidence}
    if any(r is not None for r in spoke):  # a launcher's ranks, once some line names its rank
        known |= {r for s in scans for r in s.ranks}
    silent = tuple(sorted(known - spoke))
    return Diagnosis(
        tuple(matches), rank, first, reason, tuple(scans), silent, tuple(errors), report, root
    )


def _root_says(root: int, rank: int) -> str:
    """What torchrun's Root Cause block adds to a first failure found from the evidence."""
    if root == rank:
        return "torchrun's Root Cause block names the same rank"
    return (
        f"torchrun's Root Cause block names rank {root}, the first failure its agent "
        f"observed, but rank {rank}'s error came earlier"
    )


def _first_error_file(
    errors: Sequence[elastic.ErrorFile], primary: list[Evidence], order: dict[str, int]
) -> tuple[Evidence | None, int | None, str] | None:
    """The first failure by the error files' timestamps: the earliest file's rank, and its
    earliest decisive line (else none: its error may be one no entry knows)."""
    earliest = elastic.first(list(errors))
    if not earliest:
        return None
    decisive = [f for f in earliest if any(e.file == f.file for e in primary)]
    chosen = min(decisive or earliest, key=lambda f: (f.rank is None, f.rank or 0, f.file))
    later = sorted(
        (f for f in errors if f.timestamp is not None and f is not chosen),
        key=lambda f: (f.timestamp or 0, f.rank or 0),
    )
    how = f"earliest torchelastic error file: {chosen.file} at {chosen.when}"
    if later:
        how += (
            f"; next: rank {later[0].rank if later[0].rank is not None else '?'} at {later[0].when}"
        )
    if len(earliest) > 1:
        how += (
            f" ({len(earliest)} files of the same second; the one with a decisive line)"
            if decisive
            else f" ({len(earliest)} files of the same second; the lowest rank)"
        )
    return first_failure([e for e in primary if e.file == chosen.file], order), chosen.rank, how


def _initiating(
    scans: list[FileScan], matches: list[Candidate], primary: list[Evidence], order: dict[str, int]
) -> tuple[Evidence | None, int | None, str | None]:
    """The first failure's evidence line, its rank and how they were chosen (before any Root
    Cause block).

    The earliest decisive line often names no rank (a C++ `what():`, a bare traceback) while the
    same error comes again on a line that does: a rank's NCCL watchdog reporting its own CUDA
    error, `[rank1]:` on the re-raise. Then that line gives the rank.
    """
    if primary:
        first = first_failure(primary, order)
        assert first is not None
        how = "timestamps" if all(e.timestamp for e in primary) else "line order"
        if how == "timestamps" and any(s.uncompared for s in scans):
            how += (
                f", among each error's first {EVIDENCE_CAP} lines and {LATE_LINES:,} more: "
                "later decisive lines were not compared"
            )
        reason = f"earliest decisive error ({how})"
        if first.rank is not None:
            return first, first.rank, reason
        named = first_failure(
            [
                e
                for e in primary
                if e.rank is not None
                and (e.entry, e.fingerprint) == (first.entry, first.fingerprint)
            ],
            order,
        )
        if named is None:
            return first, None, reason
        where = f"line {named.line}" if named.file == first.file else f"{named.file}:{named.line}"
        return (
            first,
            named.rank,
            (f"{reason}; its rank from {where}, the same error on a line that names the rank"),
        )
    if not matches:
        return None, None, None
    top = list(matches[0].evidence)
    behind = [
        (int(m.group(1)), e)
        for e in top
        if e.rank is not None
        for m in [ENQUEUED.search(e.text)]
        if m
    ]
    if len({n for n, _ in behind}) > 1:
        lowest = min(n for n, _ in behind)
        first = min((e for n, e in behind if n == lowest), key=lambda e: (order[e.file], e.line))
        return first, first.rank, "lowest last enqueued NCCL work (the rank that fell behind)"
    first = first_failure(top, order)
    return first, first.rank if first else None, "earliest line of the best candidate"
