"""`nanopedia/errors.py`: one problem type, formatted in one place, ordered by where it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nanopedia.errors import (
    CODES,
    Location,
    NanopediaError,
    Problem,
    format_problems,
    problem,
    suggest,
)


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
