"""The ranking rules as data (tests/cases/ranking.json), run through `nanopedia.diagnosis.rank`.

`tests/js/ranking.test.js` runs the same cases through the browser worker under `node --test`,
so the two engines are proven to rank alike without a browser.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from conftest import ROOT

from nanopedia.diagnosis import rank, scan

CASES = json.loads((ROOT / "tests" / "cases" / "ranking.json").read_text())["cases"]


def scans(evidence: list[dict[str, object]]) -> list[scan.FileScan]:
    files: dict[str, list[scan.Evidence]] = {}
    for e in evidence:
        files.setdefault(str(e["file"]), []).append(
            scan.Evidence(
                entry=str(e["entry"]),
                title=str(e["entry"]),
                file=str(e["file"]),
                line=int(e["line"]),
                rank=e["rank"],
                text=str(e["text"]),
                fingerprint=str(e["fingerprint"]),
                indicates=e["indicates"],
                timestamp=e.get("timestamp"),
                consequence=bool(e.get("consequence", False)),
                specificity=int(e.get("specificity", 0)),
            )
        )
    return [scan.FileScan(name, tuple(found), {}, (), 0, 0) for name, found in files.items()]


def with_roots(found: list[scan.FileScan], roots: list[dict[str, Any]]) -> list[scan.FileScan]:
    """The scans with the Root Cause blocks a case names ({file, line, rank})."""
    return [
        replace(
            s,
            root_ranks=tuple(
                (int(r["line"]), int(r["rank"])) for r in roots if r["file"] == s.file
            ),
        )
        for s in found
    ]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, object]) -> None:
    result = rank.diagnose(
        with_roots(
            scans(case["evidence"]),  # type: ignore[arg-type]
            case.get("root_ranks", []),
        )
    )  # type: ignore[arg-type]
    got = [[c.id, c.score, c.possible] for c in result.matches]
    assert got == case["ranking"]
    if "initiating" in case:
        first = result.initiating
        got_first = {
            "rank": result.initiating_rank,
            "line": first.line if first else None,
            "reason": result.initiating_reason,
        }
        if "root_cause_rank" in case["initiating"]:  # type: ignore[operator]
            got_first["root_cause_rank"] = result.root_cause_rank
        assert got_first == case["initiating"]
