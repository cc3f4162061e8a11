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


FINDINGS = {
    "dumps": [{"file": "a", "rank": 0}, {"file": "b", "rank": 1}, {"file": "c", "rank": 3}],
    "findings": [
        {"kind": "behind", "ranks": [3, 1], "text": "pg 0: ranks 1,3 behind *x*", "entry": "hang"},
        {"kind": "mismatch", "ranks": [2], "text": "pg 0: rank 2 differs", "entry": "desync"},
        {"kind": "behind", "ranks": [1, 5], "text": "pg 1: ranks 1,5 behind", "entry": "hang"},
    ],
    "missing_ranks": [2, 4],
}


def _kept(*jobs: dict[str, Any]) -> triage_evidence.Kept:
    kept = triage_evidence.Kept()
    for job in jobs:
        kept.add(job)
    return kept


def test_a_jobs_files_and_findings_read_whole_in_text_and_markdown() -> None:
    """Up to four error files earliest first (ties by rank), the rest counted; each finding
    with the entry that explains it; in Markdown, log text inert and each entry linked."""
    files = [_error(r, 100 - r, f"RuntimeError: rank {r} @team") for r in (5, 4, 3, 2, 1, 0)]
    files.append(_error(7, 95, "E: tie"))
    kept = _kept(_job("runs/job-1", files, FINDINGS), _job("j|2", [], None))
    assert triage_evidence.as_text(kept) == [
        "",
        "torchelastic error files (earliest first) and Flight Recorder dumps, by job:",
        "  runs/job-1:",
        "    error file: rank 5 at t95: RuntimeError: rank 5 @team",
        "    error file: rank 7 at t95: E: tie",
        "    error file: rank 4 at t96: RuntimeError: rank 4 @team",
        "    error file: rank 3 at t97: RuntimeError: rank 3 @team",
        "    error file: … 3 more (--format json)",
        "    flight recorder: pg 0: ranks 1,3 behind *x* (hang)",
        "    flight recorder: pg 0: rank 2 differs (desync)",
        "    flight recorder: pg 1: ranks 1,5 behind (hang)",
        "    flight recorder: no dump from ranks 2,4",
    ]
    assert triage_evidence.as_markdown(kept, "https://np.example/") == [
        "",
        "### torchelastic error files and Flight Recorder dumps",
        "",
        "- runs/job-1",
        "  - error file: rank 5 at t95: RuntimeError: rank 5 @\u2060team",
        "  - error file: rank 7 at t95: E: tie",
        "  - error file: rank 4 at t96: RuntimeError: rank 4 @\u2060team",
        "  - error file: rank 3 at t97: RuntimeError: rank 3 @\u2060team",
        "  - error file: … 3 more (--format json)",
        "  - flight recorder: pg 0: ranks 1,3 behind \\*x\\* "
        "([hang](https://np.example/entries/hang.html))",
        "  - flight recorder: pg 0: rank 2 differs ([desync](https://np.example/entries/desync.html))",
        "  - flight recorder: pg 1: ranks 1,5 behind ([hang](https://np.example/entries/hang.html))",
        "  - flight recorder: no dump from ranks 2,4",
    ]
    assert triage_evidence.as_markdown(triage_evidence.Kept(), None) == []


def test_exactly_four_error_files_are_all_shown_and_dumps_counted_in_the_plural() -> None:
    files = [_error(r, r, "E: x") for r in range(4)]
    quiet = {**FINDINGS, "findings": [], "missing_ranks": []}
    texts = [r.text for r in triage_evidence.rows(_job("j", files, quiet))]
    assert texts == [
        "rank 0 at t0: E: x",
        "rank 1 at t1: E: x",
        "rank 2 at t2: E: x",
        "rank 3 at t3: E: x",
        "3 dumps: every rank entered the same collectives",
    ]
    rows = triage_evidence.rows(_job("j", [], quiet))
    assert [r.what for r in rows] == ["flight recorder"]


def test_long_job_names_and_texts_are_cut_and_escapes_shown_in_the_terminal() -> None:
    job = _job("j" * 130 + "\x1b[2J", [_error(0, 1, "E: " + "x" * 300)])
    text = triage_evidence.as_text(_kept(job))
    assert text[2] == "  " + "j" * 119 + "…:"
    assert text[3] == "    error file: " + ("rank 0 at t1: E: " + "x" * 300)[:199] + "…"
    md = triage_evidence.as_markdown(_kept(job), None)
    assert md[3] == "- " + "j" * 119 + "…"
    assert md[4] == "  - error file: " + ("rank 0 at t1: E: " + "x" * 300)[:199] + "…"
    escaped = triage_evidence.as_text(_kept(_job("a\x1bb", [_error(0, 1, "E: \x07")])))
    assert escaped[2:] == ["  a\\x1bb:", "    error file: rank 0 at t1: E: \\x07"]


def test_csv_cells_name_ranks_behind_and_out_of_step_and_the_earliest_exception() -> None:
    files = [_error(2, 5, "  ValueError: " + "v" * 400 + "\nnext"), _error(0, None, "E: late")]
    cells = triage_evidence.csv_cells(_job("j", files, FINDINGS))
    assert cells == [
        "2 0",
        ("ValueError: " + "v" * 400)[:300],
        "1 3 5",
        "2",
        "pg 0: ranks 1,3 behind *x*; pg 0: rank 2 differs; pg 1: ranks 1,5 behind",
    ]
    assert triage_evidence.csv_cells({"job": "j"}) == ["", "", "", "", ""]
    assert len(triage_evidence.CSV_COLUMNS) == len(cells)


def test_a_job_with_only_dumps_is_kept_and_the_count_of_more_is_grouped() -> None:
    kept = _kept(_job("d", [], FINDINGS))
    assert [j for j, _ in kept.jobs] == ["d"]
    kept.more = 1234
    assert triage_evidence.as_text(kept)[-1] == (
        "  … 1,234 more jobs with them (--format json lists all)"
    )
    assert triage_evidence.as_markdown(kept, None)[-1] == (
        "- … 1,234 more jobs with them (--format json lists all)"
    )


def test_an_error_files_exception_is_the_first_line_of_its_message() -> None:
    job = _job("j", [_error(0, 1, "\n  E: first\nsecond\nthird\n")])
    assert [r.text for r in triage_evidence.rows(job)] == ["rank 0 at t1: E: first"]
    assert triage_evidence.csv_cells(job)[1] == "E: first"


def test_error_files_of_one_time_come_in_rank_order() -> None:
    job = _job("j", [_error(1, 5, "E: one"), _error(None, 5, "E: none"), _error(0, 5, "E: zero")])
    assert [r.text.split(":")[0] for r in triage_evidence.rows(job)] == [
        "rank ? at t5",  # no rank sorts as rank 0; the order given breaks the tie
        "rank 0 at t5",
        "rank 1 at t5",
    ]
