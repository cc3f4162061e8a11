"""The check-time guard against slow fingerprint patterns (E033).

RE2 never backtracks, yet a pattern whose automaton explodes still crawls, and the browser runs the
same pattern on a backtracking engine. `check` times each pattern on a generated adversarial log
and rejects nested unbounded repetition, at the pattern's line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generator import fingerprints
from generator.model import Fingerprint


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
    assert (fingerprints.backtracking_error(pattern) is not None) is slow


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
