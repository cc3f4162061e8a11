"""`nanopedia.diagnosis.scan`: decisive lines past the evidence cap still decide the first
failure (tests/cases/first_failure.json, which tests/js/first_failure.test.js runs through the
browser worker), in bounded memory, one pass or in stretches alike; a line's text and timestamp
are read once however many fingerprints match it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import logs, rank, scan
from nanopedia.model import Entry, Fingerprint

CASES = json.loads((ROOT / "tests" / "cases" / "first_failure.json").read_text())["cases"]
ERROR = "RuntimeError: expected scalar type BFloat16 but found Float"


def case_log(case: dict[str, Any]) -> bytes:
    """The log a case describes (its `about` says how)."""
    times = {int(r): ms for r, ms in case.get("times", {}).items()}
    lines = []
    for r in range(case["ranks"]):
        ms = times.get(r, 1000 + r)
        lines.append(f"[rank{r}]: 2024-05-01 10:00:{ms // 1000:02d}.{ms % 1000:03d} {ERROR}")
    return ("\n".join(lines + case.get("after", [])) + "\n").encode()


@pytest.fixture(scope="module")
def alpha() -> Entry:
    source, problems = load_entry(FIXTURES / "corpus" / "alpha-failure.yaml")
    assert source is not None and not problems
    return source.entry


@pytest.fixture(scope="module")
def matcher(alpha: Entry) -> scan.Matcher:
    return scan.Matcher([alpha])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_first_failure_is_the_earliest_of_every_rank_that_printed_the_error(
    case: dict[str, Any], matcher: scan.Matcher
) -> None:
    found = scan.scan(io.BytesIO(case_log(case)), "combined.log", matcher)
    result = rank.diagnose([found])
    assert result.initiating is not None
    got = (result.initiating_rank, result.initiating.line, result.initiating_reason)
    assert got == (case["rank"], case["line"], case["reason"])
    assert len(found.evidence) == scan.EVIDENCE_CAP  # what is shown stays capped


@pytest.mark.parametrize(
    "case", [c for c in CASES if "not compared" not in c["reason"]], ids=lambda c: c["name"]
)
def test_stretches_keep_the_late_lines_one_pass_keeps(
    case: dict[str, Any], matcher: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain log cut into stretches (each with fewer than `EVIDENCE_CAP` lines) gives the
    scan of one pass: the lines past the cap of the whole log are those past it in the merge."""
    log = tmp_path / "combined.log"
    log.write_bytes(case_log(case))
    one = scan.scan(io.BytesIO(log.read_bytes()), "combined.log", matcher)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 2000)
    assert scan.scan_file(str(log), matcher, jobs=1, name="combined.log") == one


def test_lines_kept_past_the_cap_do_not_grow_with_the_ranks(matcher: scan.Matcher) -> None:
    """Of 4,096 ranks' lines past the cap, the earliest and the earliest naming a rank are
    kept: two lines, not one per rank."""
    found = scan.scan(io.BytesIO(case_log(CASES[1])), "combined.log", matcher)
    assert [(e.line, e.rank) for e in found.late] == [(778, 777)]
    assert not found.uncompared


def test_a_line_is_read_once_however_many_fingerprints_match_it(
    alpha: Entry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review case D03 (lines holding every fingerprint's example): each evidence line's text
    and timestamp were worked out again for each fingerprint, 619 times a line."""
    fingerprints = [
        Fingerprint(
            id=f"same-{i}",
            pattern="expected scalar type",
            indicates="decisive" if i % 2 else "supporting",
            must_match=["expected scalar type"],
            must_not_match=["y"],
        )
        for i in range(6)
    ]
    many = scan.Matcher([alpha.model_copy(update={"fingerprints": fingerprints})])
    calls: list[str] = []

    def counted(text: str) -> str | None:
        calls.append(text)
        return None

    monkeypatch.setattr(scan, "timestamp", counted)
    log = case_log({"ranks": 80})
    found = scan.scan(io.BytesIO(log), "combined.log", many)
    assert len(found.evidence) == 6 * scan.EVIDENCE_CAP and len(calls) == 80
