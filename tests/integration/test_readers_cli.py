"""`diagnose` and `triage` on the structured evidence torch writes: the real torchelastic error
files and Flight Recorder dumps of tests/logs/elastic and tests/logs/flight, and hostile ones
(a pickle, a damaged or huge file) that fail with a located E050 in bounded time."""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from nanopedia.diagnosis import triage
from nanopedia.incremental.catalogue import user_store

ELASTIC = ROOT / "tests" / "logs" / "elastic"
FLIGHT = ROOT / "tests" / "logs" / "flight"


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def test_a_run_folder_with_only_an_error_file_is_diagnosed(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(ELASTIC / "one-error", tmp_path / "run")
    monkeypatch.setenv("COLUMNS", "400")  # long temporary paths on one line
    got = cli("diagnose", str(run))
    assert got.code == 0, got.err
    lines = got.out.splitlines()
    assert lines[0].startswith("verdict: shape-mismatch: ")
    assert f"  first failure: rank 1 at {run}/attempt_0/1/error.json:8" in lines
    why = "  first failure: earliest torchelastic error file: "
    assert any(line.startswith(why) for line in lines)
    assert "torchelastic error files (earliest first):" in lines
    assert "    RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)" in lines


def test_the_error_files_timestamps_decide_the_first_failure(cli: Any) -> None:
    files = sorted(str(p) for p in (ELASTIC / "two-errors").rglob("error.json"))
    assert files[0].endswith("/0/error.json")  # rank 0 given first
    got = cli("diagnose", "--format", "json", *files)
    out = json.loads(got.out)
    assert out["initiating_rank"] == 1
    assert out["initiating"]["file"].endswith("/1/error.json")
    assert out["initiating_reason"].startswith("earliest torchelastic error file: ")
    assert "; next: rank 0 at " in out["initiating_reason"]
    assert [(e["rank"], e["attempt"]) for e in out["error_files"]] == [(0, 0), (1, 0)]
    assert out["error_files"][0]["timestamp"] > out["error_files"][1]["timestamp"]
    assert out["flight_recorder"] is None


def test_triage_of_the_issues_run_is_no_longer_clean(tmp_path: Path) -> None:
    run = _copy(ELASTIC / "one-error", tmp_path / "run")
    (job,) = triage.triage([run]).jobs  # as a user calls it; the others read the run's cache
    assert (job["status"], job["verdict"], job["initiating_rank"]) == (
        "matched",
        "shape-mismatch",
        1,
    )
    assert [e["rank"] for e in job["error_files"]] == [1]


def test_an_unknown_error_in_an_error_file_is_a_gap_not_a_clean_job(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "attempt_0" / "2"
    folder.mkdir(parents=True)
    (folder / "error.json").write_text(
        json.dumps(
            {
                "message": {
                    "message": "FrobnicatorError: the frobnicator stalled",
                    "extraInfo": {
                        "py_callstack": "Traceback (most recent call last):\n"
                        "FrobnicatorError: the frobnicator stalled\n",
                        "timestamp": "1796483106",
                    },
                }
            }
        )
    )
    (job,) = triage.triage([tmp_path / "run"], store=user_store()).jobs
    assert (job["status"], job["verdict"]) == ("unmatched", None)
    assert any("FrobnicatorError" in row["text"] for row in job["error_lines"])


def test_an_error_file_with_no_python_exception_makes_its_job_unmatched(
    cli: Any, tmp_path: Path
) -> None:
    """A C++ or hand-written error file ({"message": text}) still says its rank failed."""
    folder = tmp_path / "run" / "attempt_0" / "5"
    folder.mkdir(parents=True)
    (folder / "error.json").write_text('{"message": "worker crashed", "timestamp": 1796483106}')
    (job,) = triage.triage([tmp_path / "run"], store=user_store()).jobs
    assert (job["status"], job["verdict"], job["error_files"][0]["rank"]) == (
        "unmatched",
        None,
        5,
    )
    text = cli("triage", "--jobs", "1", str(tmp_path / "run")).out
    assert (
        f"    {tmp_path}/run: no error line in its logs; its error files or dumps below\n" in text
    )
    assert "    error file: rank 5 at 2026-12-05 15:05:06 UTC: worker crashed" in text


def test_flight_recorder_findings_in_text_markdown_and_json(cli: Any) -> None:
    dumps = [str(FLIGHT / "skip" / f"rank{r}.json") for r in (0, 1)]
    text = cli("diagnose", *dumps)
    assert text.code == 0  # a finding that names an entry is a diagnosis
    assert "flight recorder (2 dumps, ranks 0,1):" in text.out
    assert (
        "process group 0 (default_pg): rank 1 behind: never entered collective #3 "
        "(all_reduce [[4]]) that rank 0 entered (read: nanopedia show training-hang-no-error)"
    ) in " ".join(text.out.split())
    md = cli("diagnose", "--format", "markdown", *dumps).out
    assert "[`training-hang-no-error`](" in md
    out = json.loads(
        cli(
            "diagnose",
            "--json",
            str(FLIGHT / "mismatch" / "rank0.json"),
            str(FLIGHT / "mismatch" / "rank1.json"),
        ).out
    )
    (f,) = out["flight_recorder"]["findings"]
    assert (f["kind"], f["seq"], f["ranks"], f["found"], f["entry"]) == (
        "mismatch",
        3,
        [1],
        ["broadcast [[4]]"],
        "collective-mismatch-desync",
    )
    assert f["url"].endswith("entries/collective-mismatch-desync.html")


def test_triage_records_validate_with_the_readers_fields(tmp_path: Path) -> None:
    from integration.test_triage import _validate

    _copy(ELASTIC / "two-errors", tmp_path / "a")
    _copy(FLIGHT / "size", tmp_path / "b")
    out = triage.triage([tmp_path], store=user_store()).as_json()
    schema = json.loads(triage.SCHEMA.read_text())
    assert _validate(out, schema, schema["$defs"], "$") == []
    by_job = {Path(j["job"]).name: j for j in out["jobs"]}
    (f,) = by_job["b"]["flight_recorder"]["findings"]
    assert (f["kind"], f["found"]) == ("mismatch", ["all_reduce [[8]]"])
    assert by_job["a"]["initiating_rank"] == 1


def test_triage_text_markdown_and_csv_show_what_the_readers_found(cli: Any, tmp_path: Path) -> None:
    """What the JSON records hold of each job's error files and dumps, in the other formats:
    the error files earliest first with their exceptions, the rank behind, the rank out of
    step."""
    _copy(ELASTIC / "two-errors", tmp_path / "a")
    _copy(FLIGHT / "skip", tmp_path / "b")
    _copy(FLIGHT / "mismatch", tmp_path / "c")
    text = cli("triage", "--jobs", "1", str(tmp_path)).out
    section = text[text.index("torchelastic error files (earliest first) and Flight Recorder") :]
    lines = section.splitlines()
    assert lines[1:5] == [
        f"  {tmp_path}/a:",
        "    error file: rank 1 at 2026-12-05 15:07:02 UTC: RuntimeError: mat1 and mat2 "
        "shapes cannot be multiplied (2x3 and 2x3)",
        lines[3],
        f"  {tmp_path}/b:",
    ]
    assert lines[3].startswith("    error file: rank 0 at 2026-12-05 15:07:04 UTC: RuntimeError:")
    assert lines[5] == (
        "    flight recorder: process group 0 (default_pg): rank 1 behind: never entered "
        "collective #3 (all_reduce [[4]]) that rank 0 entered (training-hang-no-error)"
    )
    assert lines[7] == (
        "    flight recorder: process group 0 (default_pg): collective #3 differs: rank 1: "
        "broadcast [[4]]; rank 0: all_reduce [[4]] (collective-mismatch-desync)"
    )
    md = cli("triage", "--format", "markdown", "--jobs", "1", str(tmp_path)).out
    assert "\n### torchelastic error files and Flight Recorder dumps\n" in md
    assert (
        "  - error file: rank 1 at 2026-12-05 15:07:02 UTC: RuntimeError: mat1 and mat2 shapes "
        "cannot be multiplied (2x3 and 2x3)\n"
    ) in md
    assert "rank 1 behind: never entered collective \\#3 (all\\_reduce \\[\\[4\\]\\]) that " in md
    assert "([training-hang-no-error](site/entries/training-hang-no-error.html))" in md
    rows = {
        Path(r["job"]).name: r
        for r in csv.DictReader(
            io.StringIO(cli("triage", "--format", "csv", "--jobs", "1", str(tmp_path)).out)
        )
    }
    a, b, c = rows["a"], rows["b"], rows["c"]
    assert (a["error_file_ranks"], a["flight_behind_ranks"]) == ("1 0", "")
    assert a["error_file_exception"].startswith("RuntimeError: mat1 and mat2 shapes")
    assert (b["flight_behind_ranks"], b["flight_mismatch_ranks"]) == ("1", "")
    assert (c["flight_behind_ranks"], c["flight_mismatch_ranks"]) == ("", "1")
    assert c["flight_findings"].startswith("process group 0 (default_pg): collective #3 differs")


def test_an_error_files_hostile_exception_stays_text_in_every_format(
    cli: Any, tmp_path: Path
) -> None:
    """The exception an error file holds is the log's: no formula in a spreadsheet, no link,
    mention or HTML in Markdown, no escape sequence reaching the terminal."""
    from unit.test_inert_text import _active

    hostile = (
        "=cmd|' /C calc'!A0 \x1b]0;pwned\x07 [click](https://evil.example) @org/oncall <img src=x>"
    )
    folder = tmp_path / "run" / "attempt_0" / "2"
    folder.mkdir(parents=True)
    (folder / "error.json").write_text(
        json.dumps({"message": hostile, "timestamp": 1796483106}), encoding="utf-8"
    )
    text = cli("triage", "--jobs", "1", str(tmp_path)).out
    assert "\x1b" not in text and "\x07" not in text
    assert "    error file: rank 2 at 2026-12-05 15:05:06 UTC: =cmd|' /C calc'!A0 \\x1b]0;" in text
    md = cli("triage", "--format", "markdown", "--jobs", "1", str(tmp_path)).out
    (line,) = [x for x in md.splitlines() if x.startswith("  - error file: ")]
    assert _active(line) == [], line
    row, end = csv.DictReader(
        io.StringIO(cli("triage", "--format", "csv", "--jobs", "1", str(tmp_path)).out)
    )
    assert end["job"] == "#end"
    assert row["error_file_exception"] == "'" + hostile
    assert row["error_file_ranks"] == "2"


# --- hostile inputs ------------------------------------------------------------------------------


def test_a_pickle_given_as_a_dump_is_refused_unread(cli: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    dump = tmp_path / "nccl_trace_rank_0"
    # A pickle that would create `marker` if anything loaded it.
    dump.write_bytes(pickle.dumps(_Boom(str(marker))))
    got = cli("diagnose", str(dump))
    assert got.code == 2
    assert f"{dump}: error[E050]: a Python pickle, not a JSON Flight Recorder dump" in got.err
    assert "hint: write each rank's dump as JSON" in got.err
    assert not marker.exists()


class _Boom:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (open, (self.path, "w"))


def test_damaged_and_huge_files_fail_together_located(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "run" / "attempt_0" / "1" / "error.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"message": {"message": "x", ')
    huge = tmp_path / "rank3.json"
    with open(huge, "wb") as f:
        f.write(b'{"pg_config": {}, "entries": [')
        f.truncate(65 << 20)  # sparse: larger than any dump is read to
    start = time.monotonic()
    got = cli("diagnose", str(bad), str(huge))
    assert time.monotonic() - start < 10
    assert got.code == 2
    assert f"{bad}: error[E050]: not valid JSON at line 1, column 30" in got.err
    assert f"{huge}: error[E050]: more than 67,108,864 bytes" in got.err


def test_triage_skips_a_damaged_error_file_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "run" / "attempt_0" / "1" / "error.json"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x00" * 100)
    (tmp_path / "run" / "attempt_0" / "1" / "stderr.log").write_text("step 1\n")
    (job,) = triage.triage([tmp_path / "run"], store=user_store()).jobs
    (skip,) = job["skipped"]
    assert (skip["path"], skip["reason"]) == (str(bad), "unreadable")
    assert "not valid JSON" in skip["detail"]


def test_a_folder_without_anything_to_read_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    got = cli("diagnose", str(tmp_path / "empty"))
    assert got.code == 2 and "no logs, torchelastic error files or Flight Recorder" in got.err
    assert os.listdir(tmp_path / "empty") == []


def test_on_a_terminal_triage_ends_with_its_progress_line(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_bytes(b"step 1\n" * 10)
    quiet = cli("triage", "--jobs", "1", str(tmp_path))
    assert "triage: " not in quiet.err  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    run = cli("triage", "--jobs", "1", str(tmp_path))
    assert run.out == quiet.out  # the report itself is the same
    last = run.err.split("\r")[-1]
    assert re.fullmatch(r"triage: 2 jobs, 2 files, 140 B \(\d+ jobs/s, \d+\.\d MB/s\)\n", last), (
        run.err
    )
