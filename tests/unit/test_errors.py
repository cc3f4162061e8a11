"""`nanopedia/errors.py`: one problem type, formatted in one place, ordered by where it is."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nanopedia.content.corpus import misnamed_files
from nanopedia.content.files import display
from nanopedia.errors import (
    CODES,
    Location,
    NanopediaError,
    Problem,
    format_problems,
    problem,
    suggest,
)
from nanopedia.model import iso


def test_a_location_names_the_file_alone_or_its_line_and_column() -> None:
    assert str(Location("e.yaml")) == "e.yaml"
    assert str(Location("e.yaml", 3, 7)) == "e.yaml:3:7"
    assert str(Location("e.yaml", 3)) == "e.yaml:3:1"  # a line without a column: its start


def test_a_problem_reads_location_severity_code_message_then_hint() -> None:
    found = problem("e.yaml", "E023", "unknown tag 'bfl6'", "did you mean 'bf16'?", at=(2, 5))
    assert str(found) == (
        "e.yaml:2:5: error[E023]: unknown tag 'bfl6'\n    hint: did you mean 'bf16'?"
    )
    warning = Problem(Location("e.yaml"), "E061", "no checked_with", None, "warning")
    assert str(warning) == "e.yaml: warning[E061]: no checked_with"


def test_two_problems_on_one_line_come_in_column_order() -> None:
    later = problem("e.yaml", "E023", "unknown tag 'b'", at=(4, 10))
    earlier = problem("e.yaml", "E023", "unknown tag 'a'", at=(4, 9))  # 9 < 10, though "10" < "9"
    other_line = problem("e.yaml", "E021", "x", at=(3, 20))
    expected = [other_line, earlier, later]
    assert NanopediaError([later, earlier, other_line]).problems == expected
    assert format_problems([later, other_line, earlier], "text").splitlines() == [
        str(p) for p in expected
    ]
    assert [p["column"] for p in json.loads(format_problems([later, earlier], "json"))] == [9, 10]


def test_the_error_prints_every_problem_in_order() -> None:
    a, b = problem("b.yaml", "E014", "x", at=(1, 1)), problem("a.yaml", "E014", "y", at=(9, 1))
    assert str(NanopediaError([a, b])) == f"{b}\n{a}"


def test_a_github_annotation_escapes_what_would_end_the_command() -> None:
    found = problem("e.yaml", "E016", "100% bad\r\nlink", "fix it", at=(2, 0))
    assert found.github() == (
        "::error file=e.yaml,line=2,col=1,title=E016::100%25 bad%0D%0Alink (hint: fix it)"
    )
    assert problem("e.yaml", "E006", "empty").github() == "::error file=e.yaml,title=E006::empty"


def test_json_output_holds_every_field() -> None:
    found = problem("e.yaml", "E023", "unknown tag 'x'", "add it", at=(2, 3))
    assert json.loads(format_problems([found], "json")) == [
        {
            "path": "e.yaml",
            "line": 2,
            "column": 3,
            "code": "E023",
            "severity": "error",
            "message": "unknown tag 'x'",
            "hint": "add it",
        }
    ]


def test_a_suggestion_is_the_closest_spelling_or_none() -> None:
    assert suggest("bfl6", ["fsdp", "bf16", "nccl"]) == "did you mean 'bf16'?"
    assert suggest("zzzz", ["fsdp", "bf16"]) is None


def test_every_code_is_documented_once_in_order() -> None:
    assert list(CODES) == sorted(CODES)
    assert all(code[0] == "E" and code[1:].isdigit() and text for code, text in CODES.items())


def test_every_code_the_package_reports_is_listed_here_and_in_the_entries_readme() -> None:
    root = Path(__file__).resolve().parents[2]
    package = root / "generator" / "nanopedia"
    used = {
        code
        for path in package.rglob("*.py")
        for code in re.findall(r'"(E\d{3})"', path.read_text(encoding="utf-8"))
    }
    assert sorted(used - set(CODES)) == []
    readme = (root / "entries" / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| (E\d{3}) \|", readme, re.MULTILINE) == list(CODES)


def test_a_github_annotation_of_the_first_line_names_it() -> None:
    assert problem("e.yaml", "E002", "bad", at=(1, 4)).github() == (
        "::error file=e.yaml,line=1,col=4,title=E002::bad"
    )


def test_a_yml_file_is_a_warning_about_the_whole_file(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text("id: b\n")
    (tmp_path / "a.yml").write_text("id: a\n")
    (tmp_path / "c.yaml").write_text("id: c\n")
    found = misnamed_files(tmp_path)
    assert [json.loads(format_problems([p], "json"))[0] for p in found] == [
        {
            "path": display(tmp_path / name),
            "line": 0,
            "column": 0,
            "code": "E007",
            "severity": "warning",
            "message": "a '.yml' file in the entries folder is not read",
            "hint": f"rename it to '{name[:-4]}.yaml'",
        }
        for name in ("a.yml", "b.yml")
    ]
    assert misnamed_files(tmp_path / "missing") == []


def test_times_are_written_in_utc_as_atom_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """In UTC whatever the machine's own zone (set to New York here)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        later = timezone(timedelta(hours=5, minutes=30))
        assert iso(datetime(2026, 1, 2, 8, 34, 5, tzinfo=later)) == "2026-01-02T03:04:05Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_json_and_github_output_keep_text_as_written_one_problem_per_line() -> None:
    """Non-ASCII text stays itself in JSON (a reader's editor shows it), indented two spaces; the
    GitHub format is one workflow command per line."""
    found = [
        problem("b.yaml", "E012", "'title' is empty", at=(3, 8)),
        problem("a.yaml", "E016", "lien « javascript: »", at=(1, 2)),
    ]
    assert format_problems(found, "json") == (
        "[\n"
        "  {\n"
        '    "path": "a.yaml",\n    "line": 1,\n    "column": 2,\n    "code": "E016",\n'
        '    "severity": "error",\n    "message": "lien « javascript: »",\n    "hint": null\n'
        "  },\n"
        "  {\n"
        '    "path": "b.yaml",\n    "line": 3,\n    "column": 8,\n    "code": "E012",\n'
        '    "severity": "error",\n    "message": "\'title\' is empty",\n    "hint": null\n'
        "  }\n"
        "]"
    )
    assert format_problems(found, "github").split("\n") == [p.github() for p in found[::-1]]
