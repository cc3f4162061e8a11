"""The check-time guard against slow fingerprint patterns (E033), and the two engines' agreement.

RE2 never backtracks, yet a pattern whose automaton explodes still crawls, and the browser runs the
same pattern on a backtracking engine. `check` times each pattern on a generated adversarial log in
RE2 and, under Node, in the browser worker's own code, and rejects nested unbounded repetition, at
the pattern's line. `ignore_case` folds ASCII letters only, the same in both engines.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import re2
from conftest import FIXTURES, ROOT

from nanopedia.content import fingerprints, gates, portable
from nanopedia.content.corpus import gather, load_entry
from nanopedia.content.load import read
from nanopedia.diagnosis import contract, scan
from nanopedia.model import Fingerprint


def fingerprint(pattern: str) -> Fingerprint:
    return Fingerprint(
        id="probe",
        pattern=pattern,
        indicates="decisive",
        must_match=["[rank3]: RuntimeError: expected scalar type BFloat16 but found Float"],
        must_not_match=["RuntimeError: expected scalar type Long but found Float"],
    )


def test_adversarial_log_is_deterministic_and_sized() -> None:
    fp = fingerprint("expected scalar type (?:BFloat16|Half) but found Float")
    log = fingerprints.adversarial_log(fp)
    assert log == fingerprints.adversarial_log(fp)
    assert len(log) == fingerprints.ADVERSARIAL_BYTES
    assert b"expected scalar type" in log


def test_specific_pattern_is_within_budget() -> None:
    assert (
        fingerprints.slowness_error(fingerprint("expected scalar type \\w+ but found \\w+")) is None
    )


def test_exploding_automaton_is_too_slow() -> None:
    message = fingerprints.slowness_error(fingerprint("[a-z][^X]{25}Q"))
    assert message is not None and "adversarial log" in message and "MB/s" in message


@pytest.mark.parametrize(
    ("pattern", "slow"),
    [
        ("(?:a+)+", True),
        ("(?:\\w+\\s?)*x", True),
        ("(?:x(?:a+)y){2,}", True),
        ("(?:struct )?c10::BFloat16", False),
        ("(?:\\d+\\.)?\\d+ms", False),
        ("[(+]*\\(+", False),
    ],
)
def test_nested_repetition(pattern: str, slow: bool) -> None:
    assert (portable.backtracking_error(pattern) is not None) is slow


#: E04: linear in RE2, polynomial in V8 (each took 11-21 s on one line of about 1,000
#: characters): runs of unbounded repetitions of shared characters, refused like nesting. Two
#: after fixed text cost only a square and stay, as shipped entries have them.
ADJACENT = [
    ("worker \\w+\\w+\\w+\\w+ died", True),
    ("rank\\s*\\s*\\s*\\s*\\d+ crashed hard", True),
    ("oops [a-z]*[a-y]*[b-z]*[a-x]*!", True),
    ("ver \\d*\\.?\\d*\\.?\\d*\\.?\\d*\\.?\\d*X", True),
    ("\\w+\\w+ died", True),  # nothing before the run: every start of the line is a factor
    ("a|\\s*\\s*x", True),
    ("x(?:\\d+\\d*\\d+)y", True),
    # the run that goes on is the one of the last two: [c-e] [d-f] [e-g] all hold 'e'
    ("x[a-c]+[c-e]+[d-f]+[e-g]+y", True),
    ("x[a-c]+[c-e]+[d-f]+y", False),
    ("\\bloss['\"]?\\s*[:=]?\\s*nan\\b", False),
    ("its \\d+\\w* output", False),
    ("(?:\\d+\\.)?\\d+ms", False),
    ("\\w+ but found \\w+", False),
    ("a\\d+[a-z]+\\w+", False),  # \\d and [a-z] share nothing: two runs of one and two
    ("a.*b.*c", False),
    ("\\d+\\s+\\d+", False),
]


@pytest.mark.parametrize(("pattern", "slow"), ADJACENT)
def test_adjacent_repetitions_of_shared_characters(pattern: str, slow: bool) -> None:
    assert (portable.adjacent_repetition_error(pattern) is not None) is slow


def test_check_refuses_the_review_s_polynomial_fingerprints(tmp_corpus: Path, cli) -> None:
    """E04: the review's four fingerprints (`relsec-inputs/poly-fingerprints-entry.yaml`) in
    the fixture entry: each an E033 at its own line."""
    entry = tmp_corpus / "alpha-failure.yaml"
    text = entry.read_text()
    at = text.index("\nchecked_with:")
    added = "".join(
        f"  - id: poly-{n}\n    pattern: '{pattern}'\n    indicates: supporting\n"
        f"    cause: cast\n    must_match: ['{example}']\n    must_not_match: ['nothing']\n"
        for n, (pattern, example) in enumerate(
            [
                ("worker \\w+\\w+\\w+\\w+ died", "worker abcd died"),
                ("rank\\s*\\s*\\s*\\s*\\d+ crashed hard", "rank 3 crashed hard"),
                ("oops [a-z]*[a-y]*[b-z]*[a-x]*!", "oops abc!"),
                ("ver \\d*\\.?\\d*\\.?\\d*\\.?\\d*\\.?\\d*X", "ver 1.2.3X"),
            ]
        )
    )
    entry.write_text(text[: at + 1] + added + text[at + 1 :])
    first = text.count("\n", 0, at) + 3  # the pattern line of the first one added
    run = cli("check", str(entry))
    assert run.code == 1
    assert [line.split(":")[1] for line in run.out.splitlines() if "error[E033]" in line] == [
        str(first + 6 * n) for n in range(4)
    ], run.out
    assert "backtracks polynomially in the browser" in run.out


def test_check_reports_e033_at_the_pattern_line(tmp_corpus: Path, cli) -> None:
    entry = next(p for p in sorted(tmp_corpus.glob("*.yaml")) if p.name != "tags.yaml")
    text = entry.read_text()
    start = text.index("  - id:", text.index("\nfingerprints:"))
    line = text.count("\n", 0, start) + 1
    slow = (
        "  - id: slow-probe\n"
        "    pattern: '(?:\\w+\\s?)*Watchdog'\n"
        "    indicates: supporting\n"
        "    must_match: ['Watchdog']\n"
        "    must_not_match: ['watch']\n"
    )
    entry.write_text(text[:start] + slow + text[start:])
    run = cli("check", str(entry))
    assert run.code == 1
    assert f"{entry.name}:{line + 1}:" in run.out
    assert "error[E033]: fingerprint 'slow-probe': a repeated group" in run.out


# ---- Issue 18: slow in the browser's engine, slow in RE2, and case folding that disagreed. ----

#: Patterns of issue 18 that passed `check`: the first three stall the browser worker (they
#: backtrack without end on a line of their own characters), the last takes RE2 to 0.45 MB/s.
BROWSER_STALLS = ["(?:a|a)*b", "(?:.*,){12}X", "(?:a|ab|b)*yend"]
RE2_CRAWLS = "(?:a|b)*a(?:a|b){25}c"
node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def supporting(pattern: str, example: str, ignore_case: bool = False) -> Fingerprint:
    return Fingerprint(
        id="probe",
        pattern=pattern,
        indicates="supporting",
        must_match=[example],
        must_not_match=["zzz"],
        ignore_case=ignore_case,
    )


def test_re2_crawl_is_too_slow() -> None:
    message = fingerprints.slowness_error(supporting(RE2_CRAWLS, "a" * 26 + "c"))
    assert message is not None and "adversarial log" in message


def test_adversarial_lines_repeat_the_pattern_pieces() -> None:
    lines = fingerprints.adversarial_lines(supporting("(?:a|ab|b)*yend", "abyend"), 64)
    assert "ab" * 32 in lines and "a" * 64 in lines
    assert all(len(line) <= 64 for line in lines)
    assert fingerprints.pattern_pieces("(?:.*,){12}X") == ([",", "X"], ",X")
    assert fingerprints.pattern_pieces("ver\\.sion (?:x|y)") == (
        ["ver.sion ", "x", "y"],
        "ver.sion xy",
    )


def test_the_adversarial_log_is_written_in_log_characters_and_the_examples_own() -> None:
    log = fingerprints.adversarial_log(supporting("zzz \\d+ Q", "zzz 12 Q"))
    assert set(log.decode()) == set("abcdefghijklmnopqrstuvwxyz0123456789 ._:-\nQ")


@node
@pytest.mark.parametrize("pattern", BROWSER_STALLS)
def test_browser_stall_is_stopped_and_refused(
    pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fingerprints, "BROWSER_TIMEOUT_S", 0.3)
    fp = supporting(pattern, "x")
    assert portable.backtracking_error(pattern) is None  # the static rule misses them
    [timing] = gates.browser_timings([fp])
    assert isinstance(timing, gates.BrowserTiming) and timing.timeout
    code, message, hint = timing.verdict() or ("", "", "")
    assert code == "E033" and "browser's JavaScript engine" in message and "stopped" in message
    assert "exclusive" in hint


@node
def test_quadratic_pattern_is_too_slow_in_the_browser() -> None:
    [timing] = gates.browser_timings([supporting("(?:a|b)*a(?:a|b){5}c", "aaaaaac")])
    assert isinstance(timing, gates.BrowserTiming)
    assert timing.verdict() is not None and timing.rate < fingerprints.MIN_BROWSER_RATE


@node
def test_every_entry_pattern_is_fast_in_the_browser_with_margin() -> None:
    """The threshold sits well below what the encyclopedia needs: a busy machine cannot fail it."""
    fps = [
        Fingerprint.model_validate(item)
        for path in sorted((ROOT / "entries").glob("*.yaml"))
        if path.name != "tags.yaml"
        for item in read(path).data.get("fingerprints", [])
    ]
    assert len(fps) > 100
    timings = gates.browser_timings(fps)
    assert not isinstance(timings, str), timings
    slow = [
        (fp.pattern, round(t.rate / 1e6, 2))
        for fp, t in zip(fps, timings, strict=True)
        if t.rate < 2 * fingerprints.MIN_BROWSER_RATE
    ]
    assert slow == []


def add_fingerprints(entry: Path, items: list[tuple[str, str, str]]) -> list[int]:
    """Put fingerprints (id, pattern, must_match) first in an entry; the line of each pattern."""
    text = entry.read_text()
    start = text.index("  - id:", text.index("\nfingerprints:"))
    first = text.count("\n", 0, start) + 1
    block = "".join(
        f"  - id: {ident}\n    pattern: '{pattern}'\n    indicates: supporting\n"
        f"    must_match: ['{example}']\n    must_not_match: ['zzz']\n"
        for ident, pattern, example in items
    )
    entry.write_text(text[:start] + block + text[start:])
    return [first + 1 + 5 * k for k in range(len(items))]


@node
def test_check_refuses_slow_patterns_in_both_engines(
    tmp_corpus: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fingerprints, "BROWSER_TIMEOUT_S", 0.3)
    entry = next(p for p in sorted(tmp_corpus.glob("*.yaml")) if p.name != "tags.yaml")
    items = [
        ("stall-a", BROWSER_STALLS[0], "aab"),
        ("stall-comma", BROWSER_STALLS[1], ",,,,,,,,,,,,X"),
        ("stall-ab", BROWSER_STALLS[2], "abyend"),
        ("crawl", RE2_CRAWLS, "a" * 26 + "c"),
    ]
    lines = add_fingerprints(entry, items)
    run = cli("check", str(tmp_corpus))
    assert run.code == 1
    for (ident, _, _), line in zip(items[:3], lines[:3], strict=True):
        assert (
            f"{entry.name}:{line}:14: error[E033]: fingerprint '{ident}': pattern is too slow "
            "in the browser's JavaScript engine: still running after"
        ) in run.out
    assert (
        f"{entry.name}:{lines[3]}:14: error[E033]: fingerprint 'crawl': pattern is too slow: "
        in run.out
    )
    assert run.out.count("error[E033]") == 4  # the RE2 verdict is not repeated for the browser
    assert "4 problem(s) found" in run.err


def test_check_without_node_warns_and_times_re2_only(
    tmp_corpus: Path, cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-node-here"))
    entry = next(p for p in sorted(tmp_corpus.glob("*.yaml")) if p.name != "tags.yaml")
    run = cli("check", str(tmp_corpus))
    assert run.code == 0, run.out
    assert (
        "warning[E036]: fingerprint patterns were not timed in the browser's JavaScript "
        "engine: Node.js ('node') is not on PATH; they were timed in RE2 only" in run.out
    )
    add_fingerprints(entry, [("crawl", RE2_CRAWLS, "a" * 26 + "c")])
    run = cli("check", str(tmp_corpus))
    assert run.code == 1 and "error[E033]: fingerprint 'crawl'" in run.out


CASES = json.loads((ROOT / "tests" / "cases" / "case_folding.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_folding(case: dict[str, object]) -> None:
    """The CLI's scan gives each case of case_folding.json its `match` (tests/js/matching.test.js
    runs the same cases through the browser worker)."""
    fp = supporting(str(case["pattern"]), "x", bool(case["ignore_case"]))
    src, _ = load_entry(FIXTURES / "corpus" / "alpha-failure.yaml")
    assert src is not None
    matcher = scan.Matcher([src.entry.model_copy(update={"fingerprints": [fp]})])
    scanned = scan.scan(io.BytesIO(str(case["line"]).encode()), "x.log", matcher)
    assert bool(scanned.evidence) is case["match"]
    assert (fingerprints.compile_pattern(fp).search(str(case["line"])) is not None) is case["match"]


def test_fold_ascii_means_re2_ignore_case_on_ascii_text() -> None:
    """On ASCII text the folded program finds exactly what RE2's own case folding finds."""
    catalog, _ = gather(FIXTURES / "corpus")
    patterns = [fp.pattern for src in catalog.sources for fp in src.entry.fingerprints]
    patterns += [
        "CUBLAS_STATUS_[A-Z_]+ when",
        "x[^a-f\\d]y",
        "[]k-]+",
        "\\x4b\\x2d[\\x41-\\x5a]",
        "nan|-?inf\\b",
        "(?:Half|c10::BFloat16) != [^ ]+",
    ]
    lines = [
        "CUBLAS_STATUS_not_supported WHEN",
        "xGy XgY x5y",
        "]K-k]",
        "k-q K-Q",
        "-INF Nan",
        "c10::bfloat16 != half",
    ]
    options = re2.Options()
    options.case_sensitive = False
    for pattern in patterns:
        ours, theirs = re2.compile(portable.fold_ascii(pattern)), re2.compile(pattern, options)
        for line in lines + [line.swapcase() for line in lines]:
            got = [m.span() for m in ours.finditer(line)]
            assert got == [m.span() for m in theirs.finditer(line)], (pattern, line)


def test_export_gives_the_browser_the_folded_program() -> None:
    src, _ = load_entry(FIXTURES / "corpus" / "alpha-failure.yaml")
    assert src is not None
    fps = [supporting("Kernel image", "x", True), supporting("Kernel image", "x")]
    data = contract.export_data([src.entry.model_copy(update={"fingerprints": fps})])
    rows = data["fingerprints"]
    assert [r["program"] for r in rows] == [
        "[Kk][eE][rR][nN][eE][lL] [iI][mM][aA][gG][eE]",
        "Kernel image",
    ]


def test_a_pattern_re2_refuses_is_a_reason_not_noise_on_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    reason = fingerprints.pattern_error(supporting("x{2000}{2000}", "x"))
    assert reason is not None and "invalid repetition size" in reason
    assert capfd.readouterr().err == ""  # RE2's own log lines would go to stderr
