"""One diagnosis with everything its reports need (`diagnosis/result.py`): the result of texts
and files against the fixture corpus, and every format of it says what the report modules
say, the verdict when something matched and the error line when nothing did."""

from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.content.corpus import gather
from nanopedia.diagnosis import (
    catalogue,
    elastic,
    github,
    readers,
    report,
    result,
    text_report,
    unmatched,
)
from nanopedia.diagnosis.catalogue import EntryView
from nanopedia.diagnosis.rank import Diagnosis
from nanopedia.errors import NanopediaError, problem

from .conftest import Made

ERROR = "RuntimeError: expected scalar type BFloat16 but found Float"
VERSION = "PyTorch version: 2.4.0"
ERROR_FILE = json.dumps(
    {
        "message": {
            "message": "ValueError: x",
            "extraInfo": {"py_callstack": "tb", "timestamp": "1800000000"},
        }
    }
).encode()
UNKNOWN = [
    "step 1",
    "Traceback (most recent call last):",
    '  File "/home/me/train.py", line 3, in <module>',
    "ValueError: no such shard",
]


@pytest.fixture(scope="module")
def entries() -> list[EntryView]:
    return catalogue.views(gather(FIXTURES / "corpus")[0].entries)


def _text(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_a_match_gives_the_verdict_confidence_first_failure_and_versions(
    entries: list[EntryView],
) -> None:
    skipped = (problem("bad.yaml", "E001", "not YAML"),)
    r = result.from_texts(
        [("rank1", _text(VERSION, "ok")), ("rank3", _text("step", ERROR))],
        entries,
        "https://np.example/",
        skipped,
    )
    assert (r.verdict, r.confidence, r.initiating_rank) == ("alpha-failure", "certain", 3)
    assert (r.initiating.file, r.initiating.line) == ("rank3", 2)
    assert r.initiating_reason and r.initiating_reason == r.diagnosis.initiating_reason
    assert r.silent_ranks == (1,) == r.diagnosis.silent_ranks
    assert [f.file for f in r.files] == ["rank1", "rank3"]
    assert r.matches == r.diagnosis.matches and r.missed is None
    assert r.seen == (("torch", "2.4.0", "rank1", 1),)
    by_id = {e.id: e for e in entries}
    assert r.as_json(1) == {
        **report.with_answers(r.diagnosis, by_id, "https://np.example/", 1, r.seen),
        "skipped_entries": [skipped[0].as_dict()],
    }
    assert r.as_text(1, 70) == text_report.as_text(
        r.diagnosis, by_id, "https://np.example/", 1, r.seen, 70
    )
    assert r.as_text() == text_report.as_text(r.diagnosis, by_id, "https://np.example/", 5, r.seen)
    assert r.as_markdown(1) == report.as_markdown(
        r.diagnosis, by_id, "https://np.example/", 1, r.seen
    )
    assert r.as_markdown() == report.as_markdown(
        r.diagnosis, by_id, "https://np.example/", 5, r.seen
    )
    assert "torch 2.4.0 (rank1:1) is in the affected range" in r.as_markdown()
    assert r.as_github(1) == github.for_diagnosis(r.diagnosis, by_id, "https://np.example/", 1)
    assert r.as_github() == github.for_diagnosis(r.diagnosis, by_id, "https://np.example/", 5)
    assert r.as_github().startswith("::error file=rank3,line=2")


def test_nothing_matched_gives_the_first_error_line_in_every_format(
    entries: list[EntryView],
) -> None:
    r = result.from_texts(
        [("empty.log", b""), ("a.log", _text(VERSION, *UNKNOWN))], entries, "https://np.example"
    )
    assert (r.verdict, r.confidence, r.matches, r.seen) == (None, None, (), ())
    assert r.missed == unmatched.Missed(
        unmatched.Found(
            "ValueError: no such shard", "a.log", 5, "ValueError", "user code (train.py)"
        ),
        (("empty.log", "empty"),),
    )
    assert r.as_json()["unmatched"] == unmatched.as_json(r.missed, "https://np.example")
    assert r.as_json()["matches"] == [] and r.as_json()["skipped_entries"] == []
    assert r.as_text() == unmatched.as_text(r.missed, "https://np.example")
    assert r.as_text(width=100) == unmatched.as_text(r.missed, "https://np.example", 100)
    assert r.as_text(width=100) != r.as_text()
    assert r.as_markdown() == unmatched.as_markdown(r.missed, "https://np.example")
    assert r.as_github() == ""


def test_the_first_error_line_is_that_of_the_first_log_that_has_one(
    entries: list[EntryView],
) -> None:
    other = _text("Traceback (most recent call last):", "KeyError: 'x'")
    r = result.from_texts(
        [("a.log", _text("fine")), ("b.log", _text(*UNKNOWN)), ("c.log", other)], entries
    )
    assert r.missed and r.missed.error and r.missed.error.file == "b.log"
    assert r.missed.inputs == ()
    r = result.from_texts([("a.log", b"\0\1binary"), ("b.log", b"one line")], entries)
    assert r.missed == unmatched.Missed(None, (("a.log", "binary"), ("b.log", "single-line")))


def test_an_error_file_that_speaks_replaces_the_unmatched_answer(
    entries: list[EntryView],
) -> None:
    found = readers.Found()
    found.add(
        elastic.ErrorFile("e/0/error.json", 0, 0, "ValueError: x", "ValueError: x", 1_800_000_000)
    )
    r = result.from_texts([("a.log", _text(*UNKNOWN))], entries, found=found)
    assert r.missed is None and r.diagnosis.error_files == tuple(found.errors)
    assert r.as_text().startswith("no known failure matched\n  first failure: rank 0")


def test_an_error_files_traceback_is_scanned_as_its_ranks_evidence(
    entries: list[EntryView],
) -> None:
    found = readers.Found()
    found.add(
        elastic.ErrorFile("e/2/error.json", 2, 0, ERROR, f"Traceback:\n{ERROR}", 1_800_000_000)
    )
    r = result.from_texts([("a.log", _text("fine"))], entries, found=found)
    assert r.verdict == "alpha-failure" and r.initiating_rank == 2


def test_files_on_disk_are_read_as_the_cli_reads_them(
    entries: list[EntryView], tmp_path: Path
) -> None:
    log = tmp_path / "job.log.gz"
    log.write_bytes(gzip.compress(_text(VERSION, f"[rank2]: {ERROR}")))
    r = result.from_paths([str(log)], entries, "https://np.example/", deadline=60)
    assert (r.verdict, r.initiating_rank, r.seen[0].version) == ("alpha-failure", 2, "2.4.0")
    assert r.as_json()["matches"][0]["url"] == "https://np.example/entries/alpha-failure.html"
    plain = tmp_path / "other.log"
    plain.write_bytes(_text(*UNKNOWN))
    r = result.from_paths([str(plain)], entries)
    assert r.missed and r.missed.error and r.missed.error.file == str(plain)


def test_an_error_file_that_cannot_be_read_fails_located(
    entries: list[EntryView], tmp_path: Path
) -> None:
    bad = tmp_path / "error.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(NanopediaError) as err:
        result.from_paths([str(bad)], entries)
    assert [p.location.path for p in err.value.problems] == [str(bad)]
    assert err.value.problems[0].code == "E050"


def test_a_log_that_cannot_be_read_again_is_left_out_of_the_unmatched_answer(
    entries: list[EntryView], tmp_path: Path
) -> None:
    from nanopedia.diagnosis import scan

    matcher = scan.Matcher(entries)
    gone = tmp_path / "gone.log"
    scans = [scan.scan(io.BytesIO(_text(*UNKNOWN)), "gone.log", matcher)]
    r = result.from_scans([str(gone), "-"][:1], scans, entries, matcher=matcher)
    assert r.missed == unmatched.Missed(None, ())
    stdin = result.from_scans(["-"], scans, entries, matcher=matcher)
    assert stdin.missed == unmatched.Missed(None, ())


def test_an_exceptions_text_is_the_traceback_python_prints_with_its_cause_and_notes() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            err = ValueError("outer")
            err.add_note("a note")
            raise err from inner
    except ValueError as caught:
        text = result.exception_text(caught)
    assert "KeyError: 'inner'" in text
    assert "The above exception was the direct cause" in text
    assert text.rstrip().endswith("ValueError: outer\na note")
    assert json.dumps(text)


def test_every_format_shows_five_candidates_unless_told_and_json_all(made: Made) -> None:
    many = tuple(replace(made.diagnosis.matches[0], id=f"e{i}") for i in range(7))
    r = result.Result(Diagnosis(many, None, None, None), made.entries)

    def shown(top: int | None) -> list[int]:
        md = r.as_markdown() if top is None else r.as_markdown(top)
        text = r.as_text() if top is None else r.as_text(top)
        gh = r.as_github() if top is None else r.as_github(top)
        return [md.count("| `e"), len(re.findall(r"(?m)^\d\. e", text)), len(gh.splitlines())]

    assert shown(None) == [5, 5, 5]
    assert shown(6) == [6, 6, 6]
    assert len(r.as_json()["matches"]) == 7 and len(r.as_json(2)["matches"]) == 2


def test_a_log_that_cannot_be_read_again_does_not_hide_the_next_logs_error(
    entries: list[EntryView], tmp_path: Path
) -> None:
    from nanopedia.diagnosis import scan

    matcher = scan.Matcher(entries)
    texts = [("gone.log", _text("fine")), ("b.log", _text(*UNKNOWN))]
    scans = [scan.scan(io.BytesIO(data), name, matcher) for name, data in texts]
    logs: list[result.Log] = [str(tmp_path / "gone.log"), texts[1]]
    r = result.from_scans(logs, scans, entries, matcher=matcher)
    assert r.missed and r.missed.error and r.missed.error.file == "b.log"
    with pytest.raises(ValueError):  # a log without its scan is the caller's mistake
        result.from_scans([*logs, "c.log"], scans, entries, matcher=matcher)


def test_files_are_scanned_to_the_deadline_and_read_with_the_error_files_beside_them(
    entries: list[EntryView], tmp_path: Path
) -> None:
    from nanopedia.diagnosis.scan import DiagnoseTimeout

    run = tmp_path / "run" / "attempt_0" / "2"
    run.mkdir(parents=True)
    (run / "stderr.log").write_bytes(_text(*UNKNOWN))
    (run / "error.json").write_bytes(ERROR_FILE)
    r = result.from_paths([str(tmp_path / "run")], entries)
    assert [e.rank for e in r.diagnosis.error_files] == [2] and r.missed is None
    with pytest.raises(DiagnoseTimeout):
        result.from_paths([str(run / "stderr.log")], entries, deadline=-1)


def test_a_flight_recorder_finding_names_its_entry_by_the_catalogues_title(
    entries: list[EntryView], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nanopedia.diagnosis import flight

    monkeypatch.setattr(flight, "BEHIND_ENTRY", "alpha-failure")
    found = readers.Found()
    for rank, seqs in ((0, 3), (1, 2)):
        entries_json = [
            {
                "process_group": ["0", ""],
                "collective_seq_id": n,
                "profiling_name": "nccl:all_reduce",
            }
            for n in range(1, seqs + 1)
        ]
        doc = json.dumps({"version": "2.10", "pg_config": {}, "entries": entries_json})
        found.add(flight.parse(doc.encode(), f"rank{rank}.json"))
    r = result.from_texts([("a.log", _text("fine"))], entries, found=found)
    assert (r.verdict, r.matches[0].title, r.initiating_rank) == (
        "alpha-failure",
        "Alpha failure under FSDP",
        1,
    )
    assert r.diagnosis.flight_report and r.diagnosis.flight_report.findings[0].ranks == (1,)


def test_every_scan_stops_at_the_deadline_logs_and_error_files_alike(
    entries: list[EntryView], tmp_path: Path
) -> None:
    from nanopedia.diagnosis.scan import DiagnoseTimeout

    found = readers.Found()
    found.add(elastic.ErrorFile("e/0/error.json", 0, 0, ERROR, ERROR, 1_800_000_000))
    with pytest.raises(DiagnoseTimeout):
        result.from_texts([("a.log", _text(ERROR))], entries, deadline=-1)
    with pytest.raises(DiagnoseTimeout):
        result.from_texts([], entries, deadline=-1, found=found)
    error = tmp_path / "run" / "attempt_0" / "0" / "error.json"
    error.parent.mkdir(parents=True)
    error.write_bytes(ERROR_FILE)
    with pytest.raises(DiagnoseTimeout):
        result.from_paths([str(error)], entries, deadline=-1)
    skipped = (problem("bad.yaml", "E001", "not YAML"),)
    r = result.from_paths([str(error)], entries, skipped=skipped)
    assert r.as_json()["skipped_entries"] == [skipped[0].as_dict()]
