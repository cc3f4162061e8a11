"""When no entry matches: the error line `diagnose` finds (tests/cases/unmatched.json), the
inputs that are no logs, and the next steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nanopedia.diagnosis import unmatched

ROOT = Path(__file__).resolve().parents[2]
CASES = json.loads((ROOT / "tests" / "cases" / "unmatched.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    found = unmatched.find(case["log"], "job.log")
    got = (
        None
        if found is None
        else {
            "text": found.text,
            "line": found.line,
            "kind": found.kind,
            "raised_in": found.raised_in,
        }
    )
    assert got == case["found"]


@pytest.mark.parametrize(
    ("head", "ended", "reason"),
    [
        (b"", True, "empty"),
        (b"ELF\0\1\2", True, "binary"),
        (b"RuntimeError: no newline", True, "single-line"),
        (b"x" * 100, False, "single-line"),
        (b"step 1\n", True, None),
    ],
)
def test_inputs_that_are_no_logs_are_named_as_triage_names_them(
    head: bytes, ended: bool, reason: str | None
) -> None:
    from nanopedia.diagnosis.jobs import SKIP_REASONS

    assert unmatched.input_problem(head, ended) == reason
    if reason and reason != "empty":
        assert reason in SKIP_REASONS


def test_next_steps_link_the_search_under_the_base_url_and_name_nanopedia_new() -> None:
    found = unmatched.Found("RuntimeError: x & y", "a.log", 3, "RuntimeError", "user code (a.py)")
    steps = unmatched.next_steps(found, "https://wiki.example/np/")
    assert steps[0] == "search: https://wiki.example/np/search.html?q=RuntimeError%3A%20x%20%26%20y"
    assert "nanopedia new" in steps[-1]
    assert unmatched.next_steps(None, None) == steps[-1:]
