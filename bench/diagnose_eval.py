"""Accuracy of `nanopedia diagnose` on the labelled corpus in tests/logs.

Prints top-1 and top-3 accuracy, false positives on healthy logs, and how often the initiating rank
and the benign flag are right. Cases whose expected entry is not in entries/ yet are listed and
left out of the figures. Run: `.venv/bin/python bench/diagnose_eval.py`.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import ROOT, Case, cases, materialise  # noqa: E402

from nanopedia.content.corpus import gather  # noqa: E402
from nanopedia.diagnosis import scan  # noqa: E402
from nanopedia.diagnosis.rank import Diagnosis, diagnose  # noqa: E402


@dataclass
class Outcome:
    """One case's answer next to its label."""

    case: Case
    ids: list[str]
    rank: int | None
    benign: bool
    result: Diagnosis


def run_case(case: Case, matcher: scan.Matcher, tmp: Path) -> Outcome:
    """Diagnose one case exactly as the CLI does (same scan, same ranking)."""
    scans = []
    for path in materialise(case, tmp):
        scans.append(scan.scan_file(str(path), matcher, name=path.relative_to(tmp).as_posix()))
    result = diagnose(scans)
    top = result.matches[0] if result.matches else None
    return Outcome(
        case,
        [c.id for c in result.matches],
        result.initiating_rank,
        bool(top and top.benign),
        result,
    )


def evaluate(entries_dir: Path = ROOT / "entries") -> tuple[list[Outcome], list[Case]]:
    """Run every case whose expected entry exists; return outcomes and the cases left out."""
    catalog, _ = gather(entries_dir)
    known = {e.id for e in catalog.entries}
    matcher = scan.Matcher(catalog.entries)
    outcomes, missing = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases():
            if case.top is not None and case.top not in known:
                missing.append(case)
                continue
            outcomes.append(run_case(case, matcher, Path(tmp)))
    return outcomes, missing


def figures(outcomes: list[Outcome]) -> dict[str, float]:
    """top1/top3 over failing logs, false positives over healthy ones, rank and benign accuracy."""
    failing = [o for o in outcomes if o.case.top is not None]
    healthy = [o for o in outcomes if o.case.top is None]
    n = max(len(failing), 1)
    return {
        "failing": len(failing),
        "healthy": len(healthy),
        "top1": sum(o.ids[:1] == [o.case.top] for o in failing) / n,
        "top3": sum(o.case.top in o.ids[:3] for o in failing) / n,
        "false_positives": sum(bool(o.ids) for o in healthy),
        "rank": sum(o.rank == o.case.rank for o in failing) / n,
        "benign": sum(o.benign == o.case.benign for o in failing) / n,
    }


def per_entry(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    """The figures of `figures` for the failing cases of each expected entry."""
    by_entry: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.case.top is not None:
            by_entry.setdefault(o.case.top, []).append(o)
    return {
        entry: {"cases": len(rows), **{k: figures(rows)[k] for k in ("top1", "top3", "rank")}}
        for entry, rows in by_entry.items()
    }


def main() -> int:
    outcomes, missing = evaluate()
    for o in outcomes:
        ok = (o.ids[:1] == [o.case.top]) if o.case.top else not o.ids
        flags = "" if o.rank == o.case.rank else f"  rank {o.rank} != {o.case.rank}"
        flags += "" if o.benign == o.case.benign or not o.case.top else "  benign flag wrong"
        print(f"{'ok ' if ok else 'BAD'} {o.case.name:45} -> {', '.join(o.ids[:3]) or '-'}{flags}")
    for case in missing:
        print(f"--- {case.name:45} (entry {case.top} not written yet)")
    print(f"\n{'entry':38} cases  top-1  top-3  rank")
    for entry, rows in sorted(per_entry(outcomes).items()):
        print(
            f"{entry:38} {rows['cases']:5.0f} {rows['top1']:6.0%} {rows['top3']:6.0%} "
            f"{rows['rank']:5.0%}"
        )
    f = figures(outcomes)
    print(
        f"\ntop-1 {f['top1']:.1%}  top-3 {f['top3']:.1%} on {f['failing']:.0f} failing logs; "
        f"false positives {f['false_positives']:.0f} of {f['healthy']:.0f} healthy logs; "
        f"initiating rank {f['rank']:.1%}; benign flag {f['benign']:.1%}; "
        f"{len(missing)} case(s) left out"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
