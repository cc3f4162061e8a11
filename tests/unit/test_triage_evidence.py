"""What triage's text, Markdown and CSV say of a job's error files and dumps, from its record."""

from __future__ import annotations

from typing import Any

from nanopedia.diagnosis import triage_evidence


def _error(rank: int | None, stamp: int | None, message: str) -> dict[str, Any]:
    time = None if stamp is None else f"t{stamp}"
    return {
        "file": "x",
        "rank": rank,
        "attempt": 0,
        "message": message,
        "timestamp": stamp,
        "time": time,
    }


def _job(
    name: str, files: list[dict[str, Any]], flight: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"job": name, "error_files": files, "flight_recorder": flight}


def test_error_files_come_earliest_first_those_without_a_time_last() -> None:
    job = _job(
        "j",
        [_error(None, None, "E: none"), _error(0, 20, "E: zero\nmore"), _error(3, 10, "E: three")],
    )
    assert [r.text for r in triage_evidence.rows(job)] == [
        "rank 3 at t10: E: three",
        "rank 0 at t20: E: zero",
        "rank ? at an unknown time: E: none",
    ]
    assert triage_evidence.csv_cells(job)[:2] == ["3 0 ?", "E: three"]


def test_dumps_without_findings_say_so_and_name_the_ranks_without_a_dump() -> None:
    flight = {"dumps": [{"file": "a", "rank": 0}], "findings": [], "missing_ranks": [1, 2]}
    assert [r.text for r in triage_evidence.rows(_job("j", [], flight))] == [
        "no dump from ranks 1,2",
        "1 dump: every rank entered the same collectives",
    ]
    assert triage_evidence.csv_cells(_job("j", [], flight)) == ["", "", "", "", ""]


def test_the_jobs_shown_are_bounded_and_the_rest_counted() -> None:
    kept = triage_evidence.Kept()
    kept.add(_job("clean", []))
    for n in range(triage_evidence.JOBS_SHOWN + 5):
        kept.add(_job(f"j{n}", [_error(n, 1, "E: x")]))
    assert len(kept.jobs) == triage_evidence.JOBS_SHOWN and kept.more == 5
    assert kept.jobs[0][0] == "j0"
    assert (
        triage_evidence.as_text(kept)[-1] == "  … 5 more jobs with them (--format json lists all)"
    )
    assert triage_evidence.as_text(triage_evidence.Kept()) == []
