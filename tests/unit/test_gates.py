"""The browser gate of `nanopedia check`: what a pattern's timing in the browser's engine says
(each verdict word for word), and what check says when Node cannot time the patterns at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.content import gates
from nanopedia.content.corpus import gather
from nanopedia.model import Fingerprint

SLOW_HINT = (
    "a repeated group whose branches can match the same text ('(?:a|a)*', '(?:a|ab|b)*') or that "
    "holds '.*' ('(?:.*,){12}') backtracks without end: make the branches exclusive and stop each "
    "repetition at the separator ('[^,]*,')"
)

VERDICTS = {
    "fast enough": (gates.BrowserTiming(2048, 1.0), None),
    "exactly the rate needed": (gates.BrowserTiming(1_000_000, 1000.0), None),
    "no time measured": (gates.BrowserTiming(2048, None), None),
    "too slow": (
        gates.BrowserTiming(3 * 1024, 30.0),
        (
            "E033",
            "pattern is too slow in the browser's JavaScript engine: 30 ms of CPU on a 3 KiB "
            "adversarial sample (0.10 MB/s, at least 1 MB/s needed)",
            SLOW_HINT,
        ),
    ),
    "stopped": (
        gates.BrowserTiming(5 * 1024, None, timeout=True),
        (
            "E033",
            "pattern is too slow in the browser's JavaScript engine: still running after 1 s on "
            "a 5 KiB adversarial sample, so it was stopped (it backtracks without end)",
            SLOW_HINT,
        ),
    ),
    "not compiled": (
        gates.BrowserTiming(1024, None, error="Invalid regular expression: /(?<x/: bad"),
        (
            "E030",
            "the browser's JavaScript engine cannot compile it: Invalid regular expression: "
            "/(?<x/: bad",
            "see 'Fingerprints' in entries/README.md for the portable subset",
        ),
    ),
}


@pytest.mark.parametrize(("timing", "said"), VERDICTS.values(), ids=VERDICTS)
def test_a_timing_gives_its_verdict_word_for_word(
    timing: gates.BrowserTiming, said: tuple[str, str, str] | None
) -> None:
    assert timing.verdict() == said


def test_the_rate_is_sample_characters_per_cpu_second() -> None:
    assert gates.BrowserTiming(4000, 2.0).rate == 2_000_000
    assert gates.BrowserTiming(4000, 0.0).rate == float("inf")
    assert gates.BrowserTiming(4000, None).rate == 0.0


def _probe() -> Fingerprint:
    return Fingerprint(
        id="probe",
        pattern="expected scalar type \\w+",
        indicates="supporting",
        must_match=["expected scalar type Half"],
        must_not_match=["zzz"],
    )


def test_without_node_on_path_the_timing_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert gates.browser_timings([_probe()]) == "Node.js ('node') is not on PATH"


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("echo not json; echo first >&2; echo 'last words' >&2; exit 3", "last words"),
        ("exit 3", "exit status 3"),
        ("echo '{\"results\": []}'", "exit status 0"),  # not one result per pattern
        ('echo \'{"results": [{"ms": 1}]}\'', "exit status 0"),  # a result without its keys
    ],
)
def test_a_timer_that_fails_is_named_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, said: str
) -> None:
    node = tmp_path / "node"
    node.write_text(f"#!/bin/sh\nwhile read -r _; do :; done\n{script}\n")  # stdin read
    node.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gates.browser_timings([_probe()]) == f"patterntime.js failed: {said}"


def test_check_without_node_warns_once_at_the_entries_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    monkeypatch.setenv("PATH", str(tmp_path))  # no node there
    (warning,) = gates.browser_slowness(catalog.sources)
    assert str(warning) == (
        f"{os.path.relpath(FIXTURES / 'corpus')}: warning[E036]: fingerprint patterns were not "
        "timed in the browser's JavaScript engine: Node.js ('node') is not on PATH; they were "
        "timed in RE2 only\n"
        "    hint: install Node.js (https://nodejs.org) so that 'check' times them as the "
        "diagnosis page runs them"
    )
    assert warning.severity == "warning"


def test_patterns_already_refused_at_their_line_are_not_timed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    timed = []
    monkeypatch.setattr(gates, "browser_timings", lambda fps: timed.append(fps) or "not run")
    src = next(s for s in catalog.sources if s.entry.fingerprints)
    refused = gates.problem(src.doc.path, "E033", "slow", at=src.at("fingerprints", 0, "pattern"))
    assert gates.browser_slowness([src], [refused]) == []
    assert timed == []  # the one pattern was refused: Node is not even started
