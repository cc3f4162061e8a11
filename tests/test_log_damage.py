"""Diagnosis holds on damaged real logs: every real excerpt of the corpus, damaged the ways logs
are damaged on their way to a reader (colours, CRLF, a paste into an issue, lost indentation, a
progress bar glued to the first record, carriage-return updates), gives the same answer."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest
from conftest import ROOT

from generator import diagnose
from generator.corpus import gather

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import log_bytes, real_cases  # noqa: E402

CASES = [c for c in real_cases() if len(c.logs) == 1 and c.top]


def _lines(f: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(f(line) for line in text.split("\n"))


DAMAGE: dict[str, Callable[[str], str]] = {
    "ansi colours": _lines(lambda line: f"\x1b[1;31m{line}\x1b[0m" if line else line),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "pasted into an issue": lambda text: "```\n" + _lines(
        lambda line: f"**{line}**" if "Error" in line else line)(text) + "\n```\n",
    "indentation stripped": _lines(str.lstrip),
    "tqdm bar glued on": lambda text: " 37%|███▋      | 37/100 [00:12<00:21,  2.96it/s]" + text,
    "carriage-return progress": lambda text: "".join(
        f"step {i}/3 loss 2.1\r" for i in range(3)) + "\n" + text,
}


@pytest.fixture(scope="module")
def matcher() -> diagnose.Matcher:
    return diagnose.Matcher(gather(ROOT / "entries")[0].entries)


def _answer(matcher: diagnose.Matcher, text: str) -> str | None:
    scanned = diagnose.scan(io.BytesIO(text.encode()), "job.log", matcher)
    result = diagnose.diagnose([scanned])
    return result.matches[0].id if result.matches else None


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_real_logs_keep_their_answer(matcher, damage: str) -> None:
    wrong = []
    for case in CASES:
        text = log_bytes(case.logs[0]).decode("utf-8", "replace")
        got = _answer(matcher, DAMAGE[damage](text))
        if got != case.top:
            wrong.append(f"{case.name}: {got} instead of {case.top}")
    assert wrong == []


def test_colour_codes_do_not_hide_a_rank_prefix() -> None:
    data = b"\x1b[31m[rank5]:\x1b[0m RuntimeError: boom\r\n"
    assert diagnose.normalise(data) == b"[rank5]: RuntimeError: boom\n"
    assert diagnose.line_rank(diagnose.normalise(data).decode(), None) == 5
