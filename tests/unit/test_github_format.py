"""`--format github`: workflow commands escaped as GitHub's toolkit escapes them, from the JSON
of a diagnosis or a triage job (through the CLI: tests/integration/test_github_cli.py)."""

from __future__ import annotations

import re

import pytest

from nanopedia.diagnosis.github import (
    command,
    escape_data,
    escape_property,
    for_diagnosis,
    for_jobs,
    for_json,
)
from nanopedia.diagnosis.rank import Diagnosis
from nanopedia.diagnosis.report import NO_FIX

from .conftest import Made

#: A raw control character anywhere in the output (GitHub would read a CR or LF as a new command).
RAW_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("50% done", "50%25 done", "50%25 done"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("file:1,2", "file:1,2", "file%3A1%2C2"),
        ("%3A", "%253A", "%253A"),  # an escape already in a log line stays literal text
    ],
)
def test_escaping_follows_githubs_rules(text: str, data: str, prop: str) -> None:
    assert (escape_data(text), escape_property(text)) == (data, prop)


def test_a_hostile_line_cannot_start_a_command_or_drive_a_terminal() -> None:
    line = command(
        "error", "boom\n::add-mask::secret\r\x1b]52;c;AAAA\x07", "t: a,b", "logs/a,b:c.log", 7
    )
    assert "\n" not in line and not RAW_CONTROL.search(line)
    assert line.startswith("::error file=logs/a%2Cb%3Ac.log,line=7,title=t%3A a%2Cb::boom%0A")
    assert "\\x1b" in line and "\\x07" in line


def test_a_file_that_is_not_a_path_is_left_out() -> None:
    assert command("notice", "m", "t", "<stdin>", 3) == "::notice title=t::m"


def _ev(file: str, line: int, text: str, collateral: bool = False) -> dict:
    return {"file": file, "line": line, "text": text, "collateral": collateral}


def _row(id: str, evidence: list[dict], **more: object) -> dict:
    return {
        "id": id,
        "title": id.title(),
        "score": 10.5,
        "benign": False,
        "confidence": "certain",
        "url": f"site/entries/{id}.html",
        "evidence": evidence,
        "cause": "The cause",
        "fix": "The fix",
        "domain": "workload",
        "action": "fix-code",
        **more,
    }


def _out(rows: list[dict], **more: object) -> dict:
    return {
        "matches": rows,
        "initiating": None,
        "initiating_rank": None,
        "initiating_reason": None,
        **more,
    }


def test_the_verdict_is_an_error_on_its_first_own_line_and_each_other_candidate_a_notice() -> None:
    rows = [
        _row("alpha", [_ev("a.log", 3, "collateral", True), _ev("a.log", 9, "own")]),
        _row("beta", [_ev("b.log", 2, "only collateral", True)], score=3.0, confidence="possible"),
        _row("gamma", [], fix=None),
    ]
    assert for_json(_out(rows)) == [
        "::error file=a.log,line=9,title=nanopedia%3A alpha (certain)::Alpha%0A  own%0A"
        "likely cause: The cause%0Awhat to do: fix-code (workload)%0Afirst fix: The fix%0A"
        "read: site/entries/alpha.html",
        "::notice file=b.log,line=2,title=nanopedia%3A also beta::Beta (score 3, possible)%0A"
        "  only collateral%0Aread: site/entries/beta.html",
        "::notice title=nanopedia%3A also gamma::Gamma (score 10.5, certain)%0A"
        "read: site/entries/gamma.html",
    ]
    assert len(for_json(_out(rows), 2)) == 2 and len(for_json(_out(rows), 0)) == 3
    assert for_json(_out([])) == []


def test_the_first_failure_and_a_triage_jobs_verdict_lead_the_error() -> None:
    first = _ev("r/3.log", 40, "first")
    rows = [
        _row("alpha", [_ev("a.log", 1, "x")]),
        _row("beta", [], cause=None, benign=True, confidence="benign"),
    ]
    out = _out(rows, initiating=first, initiating_rank=None, initiating_reason="order")
    (verdict, also) = for_json(out, job="runs/j1", verdict="beta")
    assert verdict == (
        "::notice file=r/3.log,line=40,title=nanopedia%3A beta (benign) (runs/j1)::Beta%0A"
        "first failure: rank unknown (order)%0A  first%0Aread: site/entries/beta.html"
    )
    assert also.startswith("::notice file=a.log,line=1,title=nanopedia%3A also alpha (runs/j1)::")
    ranked = for_json({**out, "initiating_rank": 0}, verdict="gone")
    assert "first failure: rank 0 (order)" in ranked[0] and ranked[0].startswith("::error")
    nofix = for_json(_out([_row("alpha", [], fix=None)]))[0]
    assert f"first fix: {NO_FIX}" in nofix


def test_triage_annotates_matched_jobs_and_warns_on_an_unmatched_jobs_error_line() -> None:
    jobs = [
        {**_out([_row("alpha", [_ev("a.log", 1, "x")])]), "job": "j1", "verdict": "alpha"},
        {
            **_out([]),
            "job": "j2",
            "verdict": None,
            "error_lines": [
                {"example": "E: 50%", "count": 3, "file": "b.log", "line": 7},
                {"example": "E: other", "count": 1, "file": "b.log", "line": 9},
            ],
        },
        {**_out([]), "job": "j3", "verdict": None, "error_lines": []},
    ]
    assert list(for_jobs(jobs, 1)) == [
        "::error file=a.log,line=1,title=nanopedia%3A alpha (certain) (j1)::Alpha%0A  x%0A"
        "likely cause: The cause%0Awhat to do: fix-code (workload)%0Afirst fix: The fix%0A"
        "read: site/entries/alpha.html",
        "::warning file=b.log,line=7,title=nanopedia%3A no entry matched (j2)::E: 50%25%0A"
        "(3 lines like it; no entry matched: an entry to write?)",
    ]


@pytest.mark.parametrize(
    ("file", "line", "props"),
    [
        ("a.log", 7, "file=a.log,line=7,title=t"),
        ("a.log", 0, "file=a.log,title=t"),
        ("a.log", None, "file=a.log,title=t"),
        (None, 7, "title=t"),
        ("", 7, "title=t"),
        ("<text>", 7, "title=t"),
        ("x" * 1200, 1, f"file={'x' * 999}…,line=1,title=t"),
    ],
)
def test_a_command_names_a_file_and_line_only_when_they_are_real(
    file: str | None, line: int | None, props: str
) -> None:
    assert command("notice", "m", "t", file, line) == f"::notice {props}::m"


def test_a_commands_title_and_each_message_line_are_cut() -> None:
    line = command("error", "a" * 400 + "\n" + "b" * 10, "t" * 300)
    assert line == f"::error title={'t' * 199}…::{'a' * 299}…%0A{'b' * 10}"


def test_diagnose_github_is_one_command_per_candidate_shown(made: Made) -> None:
    shown = for_diagnosis(made.diagnosis, made.entries, "https://np.example/", 2).split("\n")
    assert [ln.split("::")[1].split(" ")[0] for ln in shown] == ["error", "notice"]
    assert shown[0].startswith(
        "::error file=run/job.log,line=10,title=nanopedia%3A alpha (certain)"
    )
    assert shown[0].endswith(
        "%0Alikely cause: A bad GPU%0Awhat to do: drain-node (infrastructure)"
        "%0Afirst fix: Drain the node%0Aread: https://np.example/entries/alpha.html"
    )
    assert len(for_diagnosis(made.diagnosis, made.entries, None, None).split("\n")) == 3
    assert for_diagnosis(Diagnosis((), None, None, None), {}, None, 5) == ""


def test_triage_github_leads_with_the_jobs_verdict_even_under_a_benign_first_candidate() -> None:
    """A triage job's verdict is its first candidate that is not benign: with `--top 1` the one
    command names it, not the benign line above it (#39: it named the benign one)."""
    rows = [
        _row("noisy", [_ev("a.log", 1, "x")], benign=True, confidence="benign"),
        _row("alpha", [_ev("b.log", 2, "y")]),
        _row("beta", [_ev("c.log", 3, "z")]),
    ]
    job = {**_out(rows), "job": "j", "verdict": "alpha"}
    (shown,) = for_jobs([job], 1)
    assert shown.startswith("::error file=b.log,line=2,title=nanopedia%3A alpha (certain) (j)::")
    assert [ln.split("title=")[1].split("::")[0] for ln in for_jobs([job], 2)] == [
        "nanopedia%3A alpha (certain) (j)",
        "nanopedia%3A also noisy (j)",
    ]
    assert len(list(for_jobs([job]))) == 3
