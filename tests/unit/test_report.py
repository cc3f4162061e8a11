"""The verdict `diagnose` gives in Markdown and JSON (`diagnosis/report.py`), on a diagnosis made
by hand (`conftest.made`: three candidates, silent ranks, error files, a Flight Recorder finding):
what a reader of the paste sees, whole, and the rules behind each line as tables."""

from __future__ import annotations

import json

import pytest

from nanopedia.diagnosis import report, text_report
from nanopedia.diagnosis.catalogue import CauseView, EntryView, FixView
from nanopedia.diagnosis.flight import Report
from nanopedia.diagnosis.rank import Candidate, Diagnosis
from nanopedia.diagnosis.versions import Fit, Seen

from .conftest import ALPHA, Made, line

SEEN = (Seen("torch", "2.4.0", "run/job.log", 2), Seen("numpy", "1.0", "run/job.log", 3))

MARKDOWN = """\
**Verdict: [Alpha \\`bf16\\` failure](https://np.example/entries/alpha.html)** (`alpha`), \
certain (an exact error line of this failure)

- **First failure:** rank 0 at run/job.log:10 (the earliest timestamp)
- **Silent:** ranks 2,7 (no error in their logs)
- **Likely cause:** A bad GPU
- **What to do:** `drain-node` (failure domain: `infrastructure`)
- **First fix:** Drain the node
- **Version:** torch 2.4.0 (run/job.log:2) is in the affected range of PyTorch FSDP: 2.1 to \
before 2.5

| candidate | score | evidence |
|---|---|---|
| `alpha` | 5.5 | rank 1: `UserWarning: casting to self.dtype`<br>ranks 0,1,3-5: `[rank0]: \
RuntimeError: CUDA error: uncorrectable ECC error encountered`<br>rank 6: `NCCL watchdog aborted \
the communicator` (collateral) |
| `beta` (possible) | 0.5 | rank 4: `Error ¦ 'x' *y* @oncall https://a.example` |

**torchelastic error files** (earliest first):

- rank 0 at 2027-01-15 08:00:00 UTC: `RuntimeError: early`
- rank 3 at 2027-01-15 08:01:40 UTC: `RuntimeError: late`
- rank ? at an unknown time: `ValueError: 'odd'`

**Flight Recorder** (3 dumps):

- process group 0 (default\\_pg): rank 6 behind: never entered collective \\#7 (all\\_reduce) \
that ranks 0,1 entered: [`nccl-hang`](https://np.example/entries/nccl-hang.html)
- no dump from ranks 2,7"""


def test_the_markdown_paste_of_a_full_diagnosis_reads_as_written(made: Made) -> None:
    """Verdict with link, first failure, silent ranks, cause, action, fix, version, the
    candidates' table (top 2: gamma left out), error files earliest first and the Flight
    Recorder's finding with its entry's link."""
    md = report.as_markdown(made.diagnosis, made.entries, "https://np.example/", 2, SEEN)
    assert md == MARKDOWN


def test_markdown_without_a_base_url_names_the_show_command_and_labels_benign(
    made: Made,
) -> None:
    md = report.as_markdown(made.diagnosis, made.entries, None, 5).splitlines()
    assert md[0] == (
        "**Verdict: Alpha \\`bf16\\` failure** (`alpha`; read it with `nanopedia show alpha`), "
        "certain (an exact error line of this failure)"
    )
    assert "| `gamma` (benign) | 0.1 | rank ?: `warning: noisy` |" in md
    assert md[-2] == (
        "- process group 0 (default\\_pg): rank 6 behind: never entered collective "
        "\\#7 (all\\_reduce) that ranks 0,1 entered: [`nccl-hang`](site/entries/nccl-hang.html)"
    )
    assert not any(ln.startswith("- **Version:**") for ln in md)  # no versions given


def _bare(made: Made, **changes: object) -> Diagnosis:
    fields = {
        "matches": made.diagnosis.matches,
        "initiating_rank": None,
        "initiating": None,
        "initiating_reason": None,
    }
    return Diagnosis(**{**fields, **changes})  # type: ignore[arg-type]


def test_markdown_leaves_out_what_the_diagnosis_does_not_know(made: Made) -> None:
    md = report.as_markdown(_bare(made), made.entries, None, 1)
    assert md.splitlines() == [
        "**Verdict: Alpha \\`bf16\\` failure** (`alpha`; read it with `nanopedia show alpha`), "
        "certain (an exact error line of this failure)",
        "",
        "- **Likely cause:** A bad GPU",
        "- **What to do:** `drain-node` (failure domain: `infrastructure`)",
        "- **First fix:** Drain the node",
        "",
        "| candidate | score | evidence |",
        "|---|---|---|",
        "| `alpha` | 5.5 | rank 1: `UserWarning: casting to self.dtype`<br>ranks 0,1,3-5: "
        "`[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered`<br>rank 6: "
        "`NCCL watchdog aborted the communicator` (collateral) |",
    ]


def test_markdown_of_an_entry_not_in_the_catalogue_gives_no_cause_or_version(made: Made) -> None:
    md = report.as_markdown(made.diagnosis, {}, None, 1, SEEN)
    assert "Likely cause" not in md and "What to do" not in md and "Version" not in md


def test_markdown_shows_three_evidence_groups_a_candidate_at_most_each_cut_to_100(
    made: Made,
) -> None:
    long = "y" * 150
    evidence = tuple(line(f"fp{i}", i, i, long if i == 0 else f"text {i}") for i in range(5))
    c = Candidate("alpha", "Alpha", 1.0, False, evidence)
    md = report.as_markdown(_bare(made, matches=(c,)), made.entries, None, 5)
    row = md.splitlines()[-1]
    assert row == (
        f"| `alpha` | 1 | rank 0: `{'y' * 99}…`<br>rank 1: `text 1`<br>rank 2: `text 2` |"
    )


def test_markdown_when_nothing_matched_gives_the_first_failure_and_the_files_read(
    made: Made,
) -> None:
    d = made.diagnosis
    nothing = Diagnosis(
        (), 3, None, "the earliest error file", error_files=d.error_files[:1], flight_report=None
    )
    assert report.as_markdown(nothing, made.entries, None, 5).splitlines() == [
        "**nanopedia:** no known failure matched",
        "- **First failure:** rank 3 (the earliest error file)",
        "",
        "**torchelastic error files** (earliest first):",
        "",
        "- rank 3 at 2027-01-15 08:01:40 UTC: `RuntimeError: late`",
    ]
    quiet = Diagnosis((), None, None, None, flight_report=Report((("d0", 0),), (), ()))
    assert report.as_markdown(quiet, {}, None, 5).splitlines() == [
        "**nanopedia:** no known failure matched",
        "",
        "**Flight Recorder** (1 dumps):",
        "",
        "- every rank entered the same collectives",
    ]


def test_an_error_file_message_is_cut_to_200_characters_in_markdown(made: Made) -> None:
    from nanopedia.diagnosis.elastic import ErrorFile

    long = ErrorFile("e.json", 2, 0, "E" * 250, "tb", None)
    md = report.as_markdown(Diagnosis((), None, None, None, error_files=(long,)), {}, None, 5)
    assert md.splitlines()[-1] == f"- rank 2 at an unknown time: `{'E' * 199}…`"


def test_json_answers_carry_cause_fix_action_confidence_and_versions_per_candidate(
    made: Made,
) -> None:
    out = report.with_answers(made.diagnosis, made.entries, None, None, SEEN)
    assert out["versions"] == [
        {"package": "torch", "version": "2.4.0", "file": "run/job.log", "line": 2},
        {"package": "numpy", "version": "1.0", "file": "run/job.log", "line": 3},
    ]
    rows = [
        (m["id"], m["cause"], m["fix"], m["domain"], m["action"], m["confidence"], m["versions"])
        for m in out["matches"]
    ]
    fit = {
        "package": "torch",
        "version": "2.4.0",
        "system": "PyTorch FSDP",
        "affected": True,
        "ranges": "2.1 to before 2.5",
        "file": "run/job.log",
        "line": 2,
    }
    assert rows == [
        ("alpha", "A bad GPU", "Drain the node", "infrastructure", "drain-node", "certain", [fit]),
        ("beta", "Casts to `self.dtype`", "Cast from `x.dtype`", "workload", "fix-code",
         "possible", []),
        ("gamma", None, None, None, None, "benign", []),
    ]  # fmt: skip
    top = report.with_answers(made.diagnosis, made.entries, None, 1)
    assert [m["id"] for m in top["matches"]] == ["alpha"] and top["versions"] == []
    json.dumps(out)  # every value is JSON


@pytest.mark.parametrize(
    ("ranks", "text"),
    [
        ([], ""),
        ([2], "2"),
        ([1, 2], "1,2"),
        ([1, 2, 3], "1-3"),
        ([7, 0, 1, 3, 4, 5, 6, 9], "0,1,3-7,9"),
        ([5, 3], "3,5"),
        ([0, 2, 3, 4, 8, 9], "0,2-4,8,9"),
    ],
)
def test_ranks_collapse_into_runs_of_three_or_more(ranks: list[int], text: str) -> None:
    assert report.ranks_text(ranks) == text


@pytest.mark.parametrize(
    ("ranks", "text"),
    [((), "rank ?"), ((3,), "rank 3"), ((1, 2), "ranks 1,2"), ((0, 1, 2), "ranks 0-2")],
)
def test_a_groups_ranks_are_named_singular_plural_or_unknown(
    ranks: tuple[int, ...], text: str
) -> None:
    g = report.Group("fp", "decisive", False, ranks, 1, line("fp", None, 1, "x"))
    assert report.group_ranks(g) == text


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("abc", 3, "abc"),
        ("abcd", 3, "ab…"),
        ("x" * 160, 160, "x" * 160),
        ("x" * 161, 160, "x" * 159 + "…"),
        ("a\x1b[2Jb", 20, "a\\x1b[2Jb"),
        ("a\x1b[2Jb", 8, "a\\x1b[2…"),  # cut after escaping: what is shown fits
        ("\x00\x1f\x7f\x80\x9f\xa0", 40, "\\x00\\x1f\\x7f\\x80\\x9f\xa0"),
        ("\u061c\u200e\u200f\u202a\u202e\u202f", 60, "\\u061c\\u200e\\u200f\\u202a\\u202e\u202f"),
        ("\u2066\u2069\u206a\u2065", 60, "\\u2066\\u2069\u206a\u2065"),
        ("tab\there", 20, "tab\\x09here"),
    ],
)
def test_shown_lines_escape_controls_and_bidi_and_are_cut_with_an_ellipsis(
    text: str, limit: int, shown: str
) -> None:
    assert report.shorten(text, limit) == shown


def test_shown_lines_are_cut_at_160_characters_by_default() -> None:
    assert report.shorten("z" * 200) == "z" * 159 + "…"


@pytest.mark.parametrize(
    ("text", "inert"),
    [
        ("@team", "@\u2060team"),
        ("a@b.example", "a@\u2060b.example"),
        ("https://x", "https\u2060://x"),
        ("see www.evil.example", "see www\u2060.evil.example"),
        ("WwW.Evil", "WwW\u2060.Evil"),
        ("wwwx.example", "wwwx.example"),
        ("plain", "plain"),
    ],
)
def test_mentions_and_autolinks_are_broken_by_a_word_joiner(text: str, inert: str) -> None:
    assert report.inert(text) == inert


@pytest.mark.parametrize(
    ("text", "code", "md"),
    [
        ("a*b_c", False, "a\\*b\\_c"),
        ("\\ [x] <y> | #h ~s~", False, "\\\\ \\[x\\] \\<y\\> \\| \\#h \\~s\\~"),
        ("`code`", False, "\\`code\\`"),
        ("`code`", True, "`code`"),
        ("*`x`*", True, "\\*`x`\\*"),
        ("@o \x1b", False, "@\u2060o \\x1b"),
        ("aXb", False, "aXb"),
        ("X`x`", True, "X`x`"),
    ],
)
def test_markdown_prose_escapes_every_markup_character(text: str, code: bool, md: str) -> None:
    assert report._md(text, code) == md


def test_a_code_span_cannot_be_ended_by_backticks_or_pipes() -> None:
    assert report._code("a`b|c``") == "a'b¦c''"


def _candidate(benign: bool, strength: int) -> Candidate:
    return Candidate("x", "X", 1.0, benign, (), strength=strength)


@pytest.mark.parametrize(
    ("benign", "strength", "word", "label"),
    [
        (False, 2, "certain", ""),
        (False, 1, "possible", " (possible)"),
        (False, 0, "possible", " (possible)"),
        (True, 1, "benign", " (benign)"),
        (True, 2, "benign", " (benign)"),
    ],
)
def test_the_confidence_word_is_benign_before_possible_before_certain(
    benign: bool, strength: int, word: str, label: str
) -> None:
    c = _candidate(benign, strength)
    assert report.confidence_word(c) == word
    assert report.confidence(c) == f"{word} ({report.CONFIDENCE[word]})"
    assert report._label(c) == label


def test_evidence_groups_by_fingerprint_and_collateral_in_order_of_first_line() -> None:
    ev = (
        line("b", 3, 1, "b at 3", "supporting"),
        line("a", None, 2, "a"),
        line("b", 1, 3, "b at 1", "supporting"),
        line("b", 2, 4, "b collateral", "supporting", collateral=True),
        line("b", 1, 5, "b at 1 again", "supporting"),
    )
    got = [
        (g.fingerprint, g.indicates, g.collateral, g.ranks, g.lines, g.first.line)
        for g in report.groups(Candidate("alpha", "A", 1.0, False, ev))
    ]
    assert got == [
        ("b", "supporting", False, (1, 3), 3, 1),
        ("a", "decisive", False, (), 1, 2),
        ("b", "supporting", True, (2,), 1, 4),
    ]


def _entry(steps: tuple[FixView, ...]) -> EntryView:
    return EntryView("alpha", "A", (), ALPHA.causes, steps)


@pytest.mark.parametrize(
    ("steps", "cause", "fix"),
    [
        ((FixView("for cast", ("cast",)), FixView("for gpu", ("gpu",))), "gpu", "for gpu"),
        ((FixView("for cast", ("cast",)), FixView("any", ())), "gpu", "any"),
        ((FixView("any", ()), FixView("for gpu", ("gpu",))), "gpu", "any"),
        ((FixView("both", ("cast", "gpu")),), "gpu", "both"),
        ((FixView("for cast", ("cast",)),), "gpu", None),
    ],
)
def test_the_fix_given_is_the_first_step_for_the_cause_or_none(
    steps: tuple[FixView, ...], cause: str, fix: str | None
) -> None:
    rc = next(c for c in ALPHA.causes if c.id == cause)
    assert report.answer(rc, _entry(steps)) == report.Answer(rc.title, fix, rc.domain, rc.action)


def test_the_likely_cause_is_that_of_the_strongest_own_line_collateral_last(made: Made) -> None:
    entry = made.entries["alpha"]
    alpha = made.diagnosis.matches[0]
    cause, ev = report.pointed_cause(alpha, entry) or (None, None)
    assert (cause and cause.id, ev and ev.fingerprint) == ("gpu", "ecc")
    weaker = Candidate("alpha", "A", 1.0, False, alpha.evidence[:1] + alpha.evidence[-1:])
    cause, ev = report.pointed_cause(weaker, entry) or (None, None)
    assert (cause and cause.id, ev and ev.fingerprint) == ("cast", "cast-warning")
    # a collateral decisive line ranks after an own supporting one
    other = line("ecc", 9, 99, "x", collateral=True)
    both = Candidate("alpha", "A", 1.0, False, (other, alpha.evidence[0]))
    assert report.likely(both, entry) == report.Answer(
        "Casts to `self.dtype`", "Cast from `x.dtype`", "workload", "fix-code"
    )


def test_with_no_line_pointing_to_a_cause_the_entrys_first_cause_is_likely(made: Made) -> None:
    entry = made.entries["alpha"]
    lone = Candidate("alpha", "A", 1.0, False, (line("nccl-abort", 1, 1, "x"),))
    assert report.pointed_cause(lone, entry) is None
    assert report.likely(lone, entry) == report.Answer(
        "Casts to `self.dtype`", "Cast from `x.dtype`", "workload", "fix-code"
    )
    unknown = Candidate("alpha", "A", 1.0, False, (line("not-in-entry", 1, 1, "x"),))
    assert report.pointed_cause(unknown, entry) is None
    assert report.likely(lone, None) is None
    odd = EntryView("alpha", "A", entry.fingerprints, (CauseView("c", "C", "d", "a"),), ())
    assert report.likely(made.diagnosis.matches[0], odd) == report.Answer("C", None, "d", "a")


@pytest.mark.parametrize(
    ("rank", "at", "first"),
    [
        (None, False, None),
        (3, False, "rank 3 (why)"),
        (0, False, "rank 0 (why)"),
        (None, True, "rank unknown at run/job.log:10 (why)"),
        (2, True, "rank 2 at run/job.log:10 (why)"),
    ],
)
def test_the_first_failure_names_its_rank_and_line_when_known(
    made: Made, rank: int | None, at: bool, first: str | None
) -> None:
    ev = made.diagnosis.initiating if at else None
    d = Diagnosis(made.diagnosis.matches, rank, ev, "why")
    assert report._first(d) == first
    assert report.first_text(d) == ([f"first failure: {first}"] if first else [])
    assert report.verdict(d, made.entries, None).first == first


def test_the_verdict_links_to_the_site_or_names_the_show_command(made: Made) -> None:
    v = report.verdict(made.diagnosis, made.entries, "https://np.example/wiki/")
    assert (v.best.id, v.link) == ("alpha", "https://np.example/wiki/entries/alpha.html")
    assert v.answer == report.Answer("A bad GPU", "Drain the node", "infrastructure", "drain-node")
    assert report.read_link("beta", None) == "nanopedia show beta"
    assert report.read_link("beta", "") == "nanopedia show beta"


@pytest.mark.parametrize(("affected", "word"), [(True, "in"), (False, "outside")])
def test_a_version_is_said_to_be_in_or_outside_the_affected_range(
    affected: bool, word: str
) -> None:
    fit = Fit("torch", "2.4.0", "PyTorch", affected, "from 2.1", "a.log", 7)
    assert report.fit_text(fit) == (
        f"torch 2.4.0 (a.log:7) is {word} the affected range of PyTorch: from 2.1"
    )


def test_markdown_keeps_the_code_spans_of_the_cause_and_fix_titles(made: Made) -> None:
    md = report.as_markdown(_bare(made, matches=made.diagnosis.matches[1:2]), made.entries, None, 1)
    assert "- **Likely cause:** Casts to `self.dtype`" in md.splitlines()
    assert "- **First fix:** Cast from `x.dtype`" in md.splitlines()


def test_error_files_are_listed_earliest_first_then_by_rank_those_without_a_time_last() -> None:
    from nanopedia.diagnosis.elastic import ErrorFile

    files = tuple(
        ErrorFile(f"f{i}", rank, 0, f"E{i}", "tb", stamp)
        for i, (rank, stamp) in enumerate(
            [(4, None), (None, 1_800_000_005), (0, 1_800_000_005), (2, 1_800_000_003),
             (1, 1_800_000_003), (3, 1_800_000_009), (1, 1_800_000_007), (0, 1_800_000_007)]
        )
    )  # fmt: skip
    md = report.as_markdown(Diagnosis((), None, None, None, error_files=files), {}, None, 5)
    assert [ln.split("`")[1] for ln in md.splitlines() if ln.startswith("- rank")] == [
        "E4",
        "E3",
        "E1",  # no rank sorts as rank 0, and the order given breaks the tie
        "E2",
        "E7",  # rank 0 before rank 1
        "E6",
        "E5",
        "E0",
    ]
    text = text_report.as_text(Diagnosis((), None, None, None, error_files=files), {}, None, 5)
    assert [ln.strip() for ln in text.splitlines() if ln.strip().startswith("E")] == [
        "E4",
        "E3",
        "E1",
        "E2",
        "E7",
        "E6",
        "E5",
        "E0",
    ]
