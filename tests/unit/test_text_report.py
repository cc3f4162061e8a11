"""The verdict `diagnose` prints in a terminal (`diagnosis/text_report.py`), on a diagnosis made
by hand (`conftest.made`): the whole report at 80 and 60 columns as golden files
(tests/golden/diagnose-text/made-*.txt, rewritten by `pytest --update-golden`), and the rules
that lay it out (titles without backticks, log lines cut around their matched words, the
folder evidence is named under, the line that makes a verdict certain) as tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanopedia.diagnosis import text_report
from nanopedia.diagnosis.elastic import ErrorFile
from nanopedia.diagnosis.flight import Report
from nanopedia.diagnosis.rank import Candidate, Diagnosis
from nanopedia.diagnosis.versions import Seen

from .conftest import Made, line

#: Two words far apart in one line.
FAR = " ".join(["one"] * 10 + ["far"] * 10)
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "diagnose-text"
SEEN = (Seen("torch", "2.4.0", "run/job.log", 2), Seen("numpy", "1.0", "run/job.log", 3))


@pytest.mark.parametrize("width", [80, 60, 20])
def test_the_terminal_report_of_a_full_diagnosis_reads_as_its_golden_file(
    made: Made, update_golden: bool, width: int
) -> None:
    """Verdict box, why, evidence by rank (a line shown once, then pointed back to), error files
    earliest first and the Flight Recorder; a width under 60 is laid out at 60."""
    text = text_report.as_text(made.diagnosis, made.entries, None, 5, SEEN, width) + "\n"
    golden = GOLDEN / f"made-{max(width, text_report.MIN_WIDTH)}.txt"
    if update_golden and width >= text_report.MIN_WIDTH:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert max(len(ln) for ln in text.splitlines()) <= max(width, text_report.MIN_WIDTH)


def test_the_report_links_findings_under_the_base_url_and_shows_the_top_candidates(
    made: Made,
) -> None:
    text = text_report.as_text(made.diagnosis, made.entries, "https://np.example", 1)
    lines = text.splitlines()
    assert "  read: https://np.example/entries/alpha.html" in lines
    assert "     (all_reduce) that ranks 0,1 entered (read:" in lines
    assert "     https://np.example/entries/nccl-hang.html)" in lines
    assert "2. beta (possible): score 0.5" not in lines and "1. alpha: score 5.5" in lines
    assert text_report.as_text(made.diagnosis, made.entries, None, 5) == text_report.as_text(
        made.diagnosis, made.entries, None, 5, (), text_report.WIDTH
    )


def test_a_report_with_no_match_names_the_first_failure_and_what_was_read(made: Made) -> None:
    d = Diagnosis(
        (),
        None,
        made.diagnosis.initiating,
        "the earliest error file",
        error_files=made.diagnosis.error_files[1:2],
        flight_report=Report((("d0", 0), ("d1", 1)), (), ()),
    )
    assert text_report.as_text(d, {}, None, 5).splitlines() == [
        "no known failure matched",
        "  first failure: rank unknown at run/job.log:10 (the earliest error file)",
        "",
        "torchelastic error files (earliest first):",
        "   rank ? at an unknown time: run/attempt_0/1/error.json",
        "     ValueError: `odd`",
        "",
        "flight recorder (2 dumps, ranks 0,1):",
        "   every rank entered the same collectives (no rank behind, no mismatch)",
    ]
    assert text_report.as_text(Diagnosis((), None, None, None), {}, None, 5) == (
        "no known failure matched"
    )


def test_an_error_file_message_already_shown_as_evidence_is_pointed_back_to(made: Made) -> None:
    shown = made.diagnosis.matches[0].evidence[0].text
    err = ErrorFile("run/attempt_0/1/error.json", 1, 0, shown, "tb", None)
    d = Diagnosis(made.diagnosis.matches[:1], None, None, None, error_files=(err,))
    lines = text_report.as_text(d, made.entries, None, 5).splitlines()
    assert lines[-2:] == [
        "   rank 1 at an unknown time: run/attempt_0/1/error.json",
        "       (message shown under 1.)",
    ]


def test_a_verdict_without_a_first_failure_or_silent_ranks_leaves_both_out(made: Made) -> None:
    d = Diagnosis(made.diagnosis.matches[1:2], None, None, None)
    lines = text_report.as_text(d, made.entries, None, 5).splitlines()
    assert lines[:6] == [
        "verdict: beta: Beta | failure",
        "  confidence: possible",
        "  likely cause: Casts to self.dtype",
        "  what to do: fix-code (workload)",
        "  first fix: Cast from x.dtype",
        "  read: nanopedia show beta",
    ]
    assert lines[7:10] == [
        "why:",
        "  possible: no exact error line of its own: generic or shared lines only",
        "  likely cause: the entry's first, as no line that matched points to one",
    ]
    assert "  first fix: the entry's first step for that cause" in lines


def test_an_entry_not_in_the_catalogue_gets_no_cause_and_a_first_failure_of_unknown_rank(
    made: Made,
) -> None:
    d = Diagnosis(made.diagnosis.matches[2:], None, None, "the order of the lines")
    lines = text_report.as_text(d, {}, None, 5).splitlines()
    assert lines[:4] == [
        "verdict: gamma: Gamma",
        "  confidence: benign",
        "  first failure: rank unknown",
        "  read: nanopedia show gamma",
    ]
    assert "  first failure: the order of the lines" in lines
    assert not any("likely cause" in ln or "first fix" in ln for ln in lines)


def test_a_cause_with_no_fix_step_says_so_in_the_box_and_in_why(made: Made) -> None:
    from nanopedia.diagnosis.catalogue import EntryView

    alpha = made.entries["alpha"]
    entries = {"alpha": EntryView("alpha", "A", alpha.fingerprints, alpha.causes, alpha.fixes[:1])}
    lines = text_report.as_text(made.diagnosis, entries, None, 5).splitlines()
    assert "  first fix: no step of the entry's fix is for this cause: read the entry" in lines
    assert "  first fix: none, as no step of the entry's fix is for that cause" in lines


def test_a_single_silent_rank_is_named_in_the_singular(made: Made) -> None:
    d = Diagnosis(made.diagnosis.matches[:1], None, None, None, silent_ranks=(3,))
    lines = text_report.as_text(d, made.entries, None, 5, width=100).splitlines()
    assert (
        "  silent: rank 3 (their logs show no error: hung, killed before printing, or fine)"
        in lines
    )


def test_more_fingerprints_than_shown_are_counted_and_lines_of_many_files_named_by_path(
    made: Made,
) -> None:
    evidence = tuple(
        line(f"fp{i}", i, i + 1, f"line {i}", file=f"run/attempt_0/{i}/stderr.log")
        for i in range(8)
    )
    c = Candidate("alpha", "Alpha", 9.0, False, evidence)
    lines = text_report.as_text(Diagnosis((c,), None, None, None), {}, None, 5).splitlines()
    assert "evidence (files under run/attempt_0/):" in lines
    assert "   rank 5: fp5 (decisive) 5/stderr.log:6" in lines
    assert "   rank 6: fp6 (decisive) 6/stderr.log:7" not in lines
    assert "   … 2 more fingerprint(s) of alpha (--format json lists every line)" in lines
    apart = (line("a", 0, 1, "x", file="a.log"), line("b", 1, 2, "y", file="b.log"))
    c = Candidate("alpha", "Alpha", 9.0, False, apart)
    lines = text_report.as_text(Diagnosis((c,), None, None, None), {}, None, 5).splitlines()
    assert "   rank 0: a (decisive) a.log:1" in lines
    assert not any(ln.startswith("evidence (") for ln in lines)


def test_two_fingerprints_of_one_line_share_it_and_point_back_once(made: Made) -> None:
    text = "RuntimeError: CUDA error: an illegal memory access was encountered"
    evidence = (
        line("cuda", 0, 5, text, span=(14, 24)),
        line("illegal", 0, 5, text, "supporting", span=(28, 49)),
        line("cuda", 0, 9, "other"),
    )
    c = Candidate("alpha", "Alpha", 9.0, False, evidence)
    lines = text_report.as_text(Diagnosis((c,), 0, evidence[0], "r"), {}, None, 5).splitlines()
    at = lines.index("1. alpha: score 9")
    assert lines[at + 1 :] == [
        "   rank 0: cuda (decisive, 2 lines) line 5",
        "   rank 0: illegal (supporting) line 5, shown above",
    ]
    lines = text_report.as_text(Diagnosis((c,), None, None, None), {}, None, 5, (), 60)
    assert lines.splitlines()[-3:] == [
        "   rank 0: cuda (decisive, 2 lines) line 5",
        "   rank 0: illegal (supporting) line 5",
        "     RuntimeError: CUDA error: an illegal memory access…",
    ]


@pytest.mark.parametrize(
    ("title", "shown"),
    [
        ("plain", "plain"),
        ("a `b` c", "a b c"),
        ("``a ` b``", "a ` b"),
        ("` a `", "a"),
        ("`  a  `", " a "),
        ("`  `", "  "),
        ("`` ` ``", "`"),
        ("odd ` tick", "odd ` tick"),
        ("``x` y", "``x` y"),
        ("`a\nb`", "a b"),
        ("`x` and ``y``", "x and y"),
        ("` ab`", " ab"),
        ("`a ``b`` c", "`a b c"),  # a run with no closing run of its length is text
        ("` \t `", "\t"),
        ("` X `", "X"),
        ("`ab `", "ab "),
    ],
)
def test_a_titles_code_spans_lose_their_backticks_as_commonmark_reads_them(
    title: str, shown: str
) -> None:
    assert text_report.title_text(title) == shown


@pytest.mark.parametrize(
    ("text", "spans", "shown", "moved"),
    [
        ("plain", [(0, 2)], "plain", [(0, 2)]),
        ("a\x1bb hit", [(4, 7)], "a\\x1bb hit", [(7, 10)]),
        ("\x07x", [(0, 1), (1, 2)], "\\x07x", [(0, 4), (4, 5)]),
        ("\x07x", [], "\\x07x", []),
    ],
)
def test_matched_spans_move_with_the_escapes_that_make_a_line_printable(
    text: str, spans: list[tuple[int, int]], shown: str, moved: list[tuple[int, int]]
) -> None:
    assert text_report.printable(text, spans) == (shown, moved)


@pytest.mark.parametrize(
    ("text", "spans", "shown"),
    [
        ("x" * 20, [(0, 5)], ["x" * 20]),
        ("x" * 21, [(0, 5)], ["x" * 19 + "…"]),
        ("words here and there and more", [], ["words here and…"]),
        ("a" * 30 + " tail", [(31, 35)], ["…aaaaaaaaaaaaa tail"]),
        ("a b c d e f g h i j k l m n o p", [(28, 29)], ["…h i j k l m n o p"]),
        ("a" * 40, [(35, 35)], ["…" + "a" * 18]),
        (" " * 5 + "x" * 40, [(30, 32)], ["…" + "x" * 18 + "…"]),
        ("y" * 60, [(0, 60)], ["y" * 19 + "…", "…" + "y" * 18 + "…", "…" + "y" * 18 + "…",
                               "…" + "y" * 5]),
        ("y" * 100, [(0, 100)], ["y" * 19 + "…", "…" + "y" * 18 + "…", "…" + "y" * 18 + "…",
                                 "…" + "y" * 18 + "…"]),
        (FAR, [(0, 3), (70, 73)], ["one one one one…", "…far far far far"]),
        (FAR, [(70, 73), (0, 3)], ["one one one one…", "…far far far far"]),
        ("ab " * 10 + "zz", [(10, 12), (16, 18)], ["ab ab ab ab ab ab a…"]),
        # a match that ends by column 19 is shown from the line's start, one at 20 is not
        ("x" * 17 + "ab" + "y" * 20, [(17, 19)], ["xxxxxxxxxxxxxxxxxab…"]),
        ("x" * 18 + "ab" + "y" * 20, [(18, 20)], ["…xxxxxabyyyyyyyyyyy…"]),
        # a match wider than a piece starts it, nothing before
        ("a" * 30 + "b" * 30 + "c" * 10, [(30, 60)],
         ["…" + "b" * 18 + "…", "…" + "b" * 12 + "c" * 6 + "…"]),
        # the cut between words is looked for before the match, never inside or after it
        ("a" * 40 + "HIT b" + "c" * 30, [(40, 43)], ["…aaaaaHIT…"]),
    ],
)  # fmt: skip
def test_a_long_log_line_is_cut_at_20_columns_around_its_matched_words(
    text: str, spans: list[tuple[int, int]], shown: list[str]
) -> None:
    assert text_report.excerpt(text, spans, 20) == shown
    assert all(len(p) <= 20 for p in shown)


@pytest.mark.parametrize(
    ("files", "folder"),
    [
        ([], ""),
        (["a/b/c.log"], ""),
        (["a/b/c.log", "a/b/d.log"], "a/b/"),
        (["a/b/c.log", "a/x/d.log"], "a/"),
        (["a/c.log", "b/d.log"], ""),
        (["c.log", "d.log"], ""),
        (["r/0/s.log", "r/0/t/u.log"], "r/0/"),
    ],
)
def test_evidence_of_several_files_is_named_under_their_common_folder(
    files: list[str], folder: str
) -> None:
    assert text_report._folder(files) == folder


@pytest.mark.parametrize(
    ("evidence", "strength", "benign", "deciding"),
    [
        ((line("a", 3, 1, "x"),), 2, False, " (a at rank 3)"),
        ((line("a", None, 1, "x"),), 2, False, " (a)"),
        ((line("s", 1, 1, "x", "supporting"), line("d", 0, 2, "y")), 2, False, " (d at rank 0)"),
        ((line("c", 1, 1, "x", collateral=True), line("d", 4, 2, "y")), 2, False, " (d at rank 4)"),
        ((line("a", 3, 1, "x"),), 1, False, ""),
        ((line("a", 3, 1, "x"),), 2, True, ""),
        ((line("a", 3, 1, "x", "supporting"),), 2, False, ""),
        ((line("a", 3, 1, "x", collateral=True),), 2, False, ""),
    ],
)  # fmt: skip
def test_why_names_the_own_decisive_line_that_makes_a_verdict_certain(
    evidence: tuple, strength: int, benign: bool, deciding: str
) -> None:
    c = Candidate("alpha", "A", 1.0, benign, evidence, strength=strength)
    assert text_report._deciding(c) == deciding


def test_the_spans_shown_of_a_line_come_first_failure_first_then_cause_then_evidence(
    made: Made,
) -> None:
    text = "RuntimeError: CUDA error: uncorrectable ECC"
    first = line("unknown", 0, 1, text, span=(14, 24))
    pointer = line("cast-warning", 0, 1, text, "supporting", span=(0, 12))
    other = line("zz", 0, 1, text, "context", span=(26, 43))
    nospan = line("yy", 0, 1, text, "context")
    c = Candidate("alpha", "A", 1.0, False, (other, first, pointer, nospan, other))
    d = Diagnosis((c,), 0, first, "r")
    spans = text_report._spans(text, d, made.entries, 5)
    assert spans == [(14, 24), (0, 12), (26, 43)]
    assert text_report._spans(text, d, {}, 5) == [(14, 24), (26, 43), (0, 12)]
    assert text_report._spans(text, d, made.entries, 0) == [(14, 24), (0, 12)]
    assert text_report._spans("other", d, made.entries, 5) == []


def test_the_layout_width_follows_the_terminal_and_never_goes_under_60(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for columns, width in (("100", 100), ("30", 60), ("60", 60), ("61", 61)):
        monkeypatch.setenv("COLUMNS", columns)
        assert text_report.columns() == width
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(
        text_report.shutil,
        "get_terminal_size",
        lambda fallback: __import__("os").terminal_size(fallback),
    )
    assert text_report.columns() == text_report.WIDTH == 80


def test_long_titles_paths_and_counts_wrap_under_their_own_indent() -> None:
    title = "A very long title " * 5
    path = "runs/" + "deep/" * 14 + "job.log"
    evidence = tuple(line(f"fp-{i}", i, i + 1, f"line {i}", file=path) for i in range(8))
    c = Candidate("an-entry-whose-id-is-long-enough-to-wrap", title, 9.0, False, evidence)
    text = text_report.as_text(Diagnosis((c,), None, None, None), {}, None, 5, (), 60)
    lines = text.splitlines()
    assert lines[:3] == [
        "verdict: an-entry-whose-id-is-long-enough-to-wrap: A very",
        "    long title A very long title A very long title A very",
        "    long title A very long title",
    ]
    at = next(i for i, ln in enumerate(lines) if ln.startswith("evidence (lines of"))
    assert lines[at - 1 : at + 2] == [
        "",
        "evidence (lines of runs/deep/deep/deep/deep/deep/deep/deep/d",
        "eep/deep/deep/deep/deep/deep/deep/job.log):",  # a word wider than the line is broken
    ]
    assert lines[-3:] == [
        "   … 2 more fingerprint(s) of",
        "     an-entry-whose-id-is-long-enough-to-wrap (--format json",
        "     lists every line)",
    ]


def test_six_fingerprints_are_all_shown_with_no_count_of_more() -> None:
    evidence = tuple(line(f"fp{i}", i, i + 1, f"line {i}", file=f"r/{i}.log") for i in range(6))
    c = Candidate("alpha", "Alpha", 9.0, False, evidence)
    lines = text_report.as_text(Diagnosis((c,), None, None, None), {}, None, 5).splitlines()
    at = lines.index("evidence (files under r/):")
    assert lines[at - 1] == ""
    assert lines[-2:] == ["   rank 5: fp5 (decisive) 5.log:6", "     line 5"]


def test_the_first_failures_line_is_cut_around_the_spans_of_the_candidates_shown() -> None:
    text = "head " + "a" * 40 + " FIRST " + "b" * 40 + " SECOND " + "c" * 40
    first = line("x", 0, 1, text, span=(46, 51))
    other = line("y", 0, 1, text, span=(93, 99))
    one = Candidate("alpha", "A", 9.0, False, (first,))
    two = Candidate("beta", "B", 1.0, False, (other,), strength=1)
    d = Diagnosis((one, two), 0, first, "r")

    def shown(top: int) -> str:
        lines = text_report.as_text(d, {}, None, top).splitlines()
        at = lines.index("  first failure: rank 0 at run/job.log:1")
        return " ".join(ln for ln in lines[at + 1 : at + 4] if ln.startswith("    "))

    assert "FIRST" in shown(1) and "SECOND" not in shown(1)
    assert "FIRST" in shown(2) and "SECOND" in shown(2)


EDGES = json.loads((Path(__file__).resolve().parents[1] / "cases" / "excerpt.json").read_text())


@pytest.mark.parametrize("case", EDGES["cases"], ids=range(len(EDGES["cases"])))
def test_the_cut_rules_of_a_long_line_hold_at_their_edges(case: dict) -> None:
    spans = [tuple(s) for s in case["spans"]]
    shown = text_report.excerpt(case["text"], spans, case["width"])
    assert shown == case["shown"]
    assert all(len(p) <= case["width"] for p in shown)


def test_error_files_and_dump_lines_wrap_under_their_indent_and_a_repeat_points_back() -> None:
    same = "RuntimeError: the same message on both ranks"
    files = (
        ErrorFile("run/attempt_0/3/error.json", 3, 0, same, "tb", 1_800_000_000),
        ErrorFile("run/attempt_0/5/error.json", 5, 0, same, "tb", 1_800_000_001),
    )
    report = Report((("d0", 0),), (), tuple(range(1, 40, 2)))
    d = Diagnosis((), None, None, None, error_files=files, flight_report=report)
    assert text_report.as_text(d, {}, None, 5, (), 60).splitlines()[2:] == [
        "torchelastic error files (earliest first):",
        "   rank 3 at 2027-01-15 08:00:00 UTC:",
        "       run/attempt_0/3/error.json",
        "     RuntimeError: the same message on both ranks",
        "   rank 5 at 2027-01-15 08:00:01 UTC:",
        "       run/attempt_0/5/error.json (message shown for rank 3)",
        "",
        "flight recorder (1 dumps, ranks 0):",
        "   no dump from ranks",
        "     1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39",
        "     (their part is unknown)",
        "   every rank entered the same collectives (no rank behind,",
        "     no mismatch)",
    ]
