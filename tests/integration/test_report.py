"""The report `diagnose` prints: the verdict first, evidence by rank, safe in a terminal and in
Markdown."""

from __future__ import annotations

import io
import json

from conftest import FIXTURES

from nanopedia.content.corpus import gather
from nanopedia.diagnosis import report, scan, text_report, versions
from nanopedia.diagnosis.rank import Diagnosis, diagnose

ERROR = "RuntimeError: expected scalar type BFloat16 but found Float"


def _diagnosis(lines: list[str]) -> tuple[Diagnosis, dict]:
    entries = {e.id: e for e in gather(FIXTURES / "corpus")[0].entries}
    matcher = scan.Matcher(entries.values())
    data = ("\n".join(lines) + "\n").encode()
    return diagnose([scan.scan(io.BytesIO(data), "job.log", matcher)]), entries


def test_text_leads_with_the_verdict_cause_fix_and_link() -> None:
    result, entries = _diagnosis([f"[rank{r}]: {ERROR}" for r in (0, 1, 3, 4, 5, 6, 7)])
    text = text_report.as_text(result, entries, None, 5).splitlines()
    assert text[:3] == [
        "verdict: alpha-failure: Alpha failure under FSDP",
        "  confidence: certain",
        "  first failure: rank 0 at job.log:1",
    ]
    assert "  likely cause: Model code casts to self.dtype" in text
    assert "  what to do: fix-code (workload)" in text
    assert "  first fix: Cast from the activation dtype" in text
    assert "  read: nanopedia show alpha-failure" in text  # no base URL: a command that works
    linked = text_report.as_text(result, entries, "https://np.example/", 5).splitlines()
    assert "  read: https://np.example/entries/alpha-failure.html" in linked
    grouped = [line for line in text if line.startswith("   ranks")]
    assert grouped == ["   ranks 0,1,3-7: scalar-type (decisive, 7 lines) line 1, shown above"]


def test_long_lines_are_cut_visibly_and_escapes_never_reach_the_terminal() -> None:
    hostile = f"[rank0]: \x1b]0;pwned\x07\x1b[2J {ERROR}"
    result, entries = _diagnosis([hostile])
    text = text_report.as_text(result, entries, None, 5)
    assert "\x1b" not in text and "\x07" not in text and "0;pwned\\x07 RuntimeError" in text
    result, entries = _diagnosis([hostile + " " + "x" * 400])
    text = text_report.as_text(result, entries, None, 5)
    assert "\x1b" not in text and "\x07" not in text
    shown = [line for line in text.splitlines() if "expected scalar type" in line]
    assert shown and all(len(line) <= text_report.WIDTH for line in shown)
    assert all(line.endswith("…") for line in shown)
    whole = report.with_answers(result, entries, None, None)["matches"][0]["evidence"][0]["text"]
    assert whole.endswith("x" * 400)  # JSON keeps the line whole (json.dumps escapes controls)
    assert "\\u001b" in json.dumps(whole)


def test_markdown_is_a_paste_that_log_text_cannot_format() -> None:
    result, entries = _diagnosis([f"[rank2]: {ERROR} | *bold* [link](https://evil.example)"])
    md = report.as_markdown(result, entries, "https://nanopedia.example/", 5)
    assert md.startswith(
        "**Verdict: [Alpha failure under FSDP]"
        "(https://nanopedia.example/entries/alpha-failure.html)**"
    )
    bare = report.as_markdown(result, entries, None, 5)
    assert bare.startswith(
        "**Verdict: Alpha failure under FSDP** (`alpha-failure`; read it "
        "with `nanopedia show alpha-failure`)"
    )
    row = next(line for line in md.splitlines() if line.startswith("| `alpha-failure`"))
    assert row.count("|") == 4  # the log's pipe cannot open a new cell
    assert "(collateral)" not in row


def test_json_carries_cause_fix_domain_action_and_confidence() -> None:
    result, entries = _diagnosis([ERROR])
    top = report.with_answers(result, entries, None, None)["matches"][0]
    assert (
        top["cause"],
        top["fix"],
        top["domain"],
        top["action"],
        top["confidence"],
        top["possible"],
    ) == (
        "Model code casts to self.dtype",
        "Cast from the activation dtype",
        "workload",
        "fix-code",
        "certain",
        False,
    )


def test_markdown_says_what_to_do() -> None:
    result, entries = _diagnosis([ERROR])
    md = report.as_markdown(result, entries, None, 5)
    assert "- **What to do:** `fix-code` (failure domain: `workload`)" in md.splitlines()


def _two_causes(entry):
    """`entry` with a second root cause (infrastructure, drain-node) and a fix step for each,
    the first step naming only the second cause."""
    cast = entry.root_causes[0]
    bad = cast.model_copy(
        update={
            "id": "bad-gpu",
            "title": "A bad GPU",
            "domain": "infrastructure",
            "action": "drain-node",
        }
    )
    steps = [
        entry.fix[0].model_copy(update={"title": "Drain the node", "causes": ["bad-gpu"]}),
        entry.fix[0].model_copy(update={"title": "Fix the cast", "causes": ["cast"]}),
    ]
    return entry.model_copy(update={"root_causes": [cast, bad], "fix": steps})


def test_the_fix_given_is_the_first_step_for_the_likely_cause() -> None:
    result, entries = _diagnosis([ERROR])
    entry = _two_causes(entries["alpha-failure"])
    found = report.likely(result.matches[0], entry)
    assert found == report.Answer(
        "Model code casts to self.dtype", "Fix the cast", "workload", "fix-code"
    )
    assert report.answer(entry.root_causes[1], entry) == report.Answer(
        "A bad GPU", "Drain the node", "infrastructure", "drain-node"
    )


def test_a_cause_no_step_is_for_gets_no_fix_rather_than_another_causes_step() -> None:
    """The verdict never offers the fix of a cause it did not find (#32): with no step for the
    likely cause, every format says so and the JSON's fix is null."""
    result, entries = _diagnosis([ERROR])
    entry = _two_causes(entries["alpha-failure"])
    entry = entry.model_copy(update={"fix": entry.fix[:1]})  # a step for bad-gpu only
    entries = {**entries, "alpha-failure": entry}
    assert report.likely(result.matches[0], entry) == report.Answer(
        "Model code casts to self.dtype", None, "workload", "fix-code"
    )
    assert f"  first fix: {report.NO_FIX}" in text_report.as_text(result, entries, None, 5)
    assert report.with_answers(result, entries, None, None)["matches"][0]["fix"] is None
    assert f"- **First fix:** {report.NO_FIX}" in report.as_markdown(result, entries, None, 5)


def test_a_step_that_names_no_cause_serves_every_cause() -> None:
    result, entries = _diagnosis([ERROR])
    entry = _two_causes(entries["alpha-failure"])
    general = entry.fix[0].model_copy(update={"title": "General step", "causes": []})
    entry = entry.model_copy(update={"fix": [entry.fix[0], general]})
    assert report.answer(entry.root_causes[0], entry).fix == "General step"


def test_ranks_collapse_into_runs() -> None:
    assert report.ranks_text([7, 0, 1, 3, 4, 5, 6, 9]) == "0,1,3-7,9"
    assert report.ranks_text([2]) == "2"


def test_ranks_whose_logs_show_nothing_are_named(tmp_path) -> None:
    entries = {e.id: e for e in gather(FIXTURES / "corpus")[0].entries}
    matcher = scan.Matcher(entries.values())
    scans = []
    for rank in range(4):
        text = "step 1 ok\n" + (f"[rank{rank}]: {ERROR}\n" if rank == 2 else "")
        scans.append(scan.scan(io.BytesIO(text.encode()), f"attempt_0/{rank}/stderr.log", matcher))
    result = diagnose(scans)
    assert result.silent_ranks == (0, 1, 3)
    assert "  silent: ranks 0,1,3 (their logs show no error: hung, killed before printing," in (
        text_report.as_text(result, entries, None, 5).splitlines()
    )


def test_the_verdict_says_whether_the_version_the_log_shows_is_affected() -> None:
    result, entries = _diagnosis(["PyTorch version: 1.11.0", ERROR])
    old = versions.find(["PyTorch version: 1.11.0"], "job.log")
    text = text_report.as_text(result, entries, None, 5, old)
    assert (
        "  version: torch 1.11.0 (job.log:1) is outside the affected range of PyTorch\n"
        "    FSDP1: from 1.12"
    ) in text
    new = versions.find(["[pip3] torch==2.4.0"], "job.log")
    out = report.with_answers(result, entries, None, None, new)
    assert out["versions"] == [
        {"package": "torch", "version": "2.4.0", "file": "job.log", "line": 1}
    ]
    assert out["matches"][0]["versions"][0]["affected"] is True
    assert "- **Version:** torch 2.4.0 (job.log:1) is in the affected range" in report.as_markdown(
        result, entries, None, 5, new
    )
