"""Diagnosis holds on damaged real logs: every real excerpt of the corpus, damaged the ways logs
are damaged on their way to a reader (colours, CRLF, a paste into an issue, lost indentation, a
progress bar glued to the first record, carriage-return updates, a terminal's hard wrap), gives the
same answer."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.diagnosis import logs, rank, scan
from nanopedia.diagnosis.lines import line_rank

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import log_bytes, real_cases  # noqa: E402

CASES = [c for c in real_cases() if len(c.logs) == 1 and c.top]


def _lines(f: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(f(line) for line in text.split("\n"))


DAMAGE: dict[str, Callable[[str], str]] = {
    "ansi colours": _lines(lambda line: f"\x1b[1;31m{line}\x1b[0m" if line else line),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "pasted into an issue": lambda text: (
        "```\n" + _lines(lambda line: f"**{line}**" if "Error" in line else line)(text) + "\n```\n"
    ),
    "indentation stripped": _lines(str.lstrip),
    "tqdm bar glued on": lambda text: " 37%|███▋      | 37/100 [00:12<00:21,  2.96it/s]" + text,
    "carriage-return progress": lambda text: (
        "".join(f"step {i}/3 loss 2.1\r" for i in range(3)) + "\n" + text
    ),
    "wrapped by an 80-column terminal": _lines(
        lambda line: "\n".join(line[i : i + 80] for i in range(0, max(len(line), 1), 80))
    ),
}


def _cuts_a_word(raw: bytes) -> bool:
    lines = DAMAGE["wrapped by an 80-column terminal"](raw.decode("utf-8", "replace")).split("\n")
    cuts = [
        i
        for i in range(len(lines) - 1)
        if len(lines[i]) == 80
        and logs.same_class(lines[i][-1:].encode(), lines[i + 1][:1].encode())
    ]
    return len({lines[i] for i in range(len(lines) - 1) if len(lines[i]) == 80}) >= 2 and bool(cuts)


@pytest.fixture(scope="module")
def matcher() -> scan.Matcher:
    return scan.Matcher(gathered_entries()[0].entries)


def _answer(matcher: scan.Matcher, text: str) -> str | None:
    scanned = scan.scan(io.BytesIO(text.encode()), "job.log", matcher)
    result = rank.diagnose([scanned])
    return result.matches[0].id if result.matches else None


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_real_logs_keep_their_answer(matcher, damage: str) -> None:
    wrong = []
    for case in CASES:
        raw = log_bytes(case.logs[0])
        if damage.startswith("wrapped") and (logs.wrap_width(raw) or not _cuts_a_word(raw)):
            # Wrapped once already, as posted; or a wrap that never cuts a word or a number (or
            # one long line only): that is not told apart from fixed-width lines.
            continue
        text = raw.decode("utf-8", "replace")
        got = _answer(matcher, DAMAGE[damage](text))
        if got != case.top:
            wrong.append(f"{case.name}: {got} instead of {case.top}")
    assert wrong == []


def test_colour_codes_do_not_hide_a_rank_prefix() -> None:
    data = b"\x1b[31m[rank5]:\x1b[0m RuntimeError: boom\r\n"
    assert logs.normalise(data) == b"[rank5]: RuntimeError: boom\n"
    assert line_rank(logs.normalise(data).decode(), None) == 5


def test_a_terminal_wrap_is_undone_and_line_numbers_stay() -> None:
    record = (
        "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] ProcessGroupNCCL's "
        "watchdog got stuck for 480 seconds without making progress in monitoring "
        "enqueued collectives."
    )
    other = "step 10 loss 2.31 " * 6  # ends where a record ends: not a wrap on its own
    text = "\n".join(record[i : i + 70] for i in range(0, len(record), 70)) + "\n"
    text += "\n".join(other[i : i + 70] for i in range(0, len(other), 70)) + "\nlast line\n"
    data = logs.normalise(text.encode())
    assert logs.wrap_width(data) == 70
    lines = logs.unwrap(data).split(b"\n")
    assert lines[0].decode() == record and lines[1:3] == [b"", b""]
    assert lines[-2] == b"last line" and len(lines) == len(data.split(b"\n"))


def test_ordinary_lines_are_not_unwrapped() -> None:
    lines = [
        f"step {i} loss {i * 0.37:.4f} lr 3e-4 grad_norm {i * 1.3:.2f} tokens/s {9000 + i}"
        for i in range(200)
    ]
    data = ("\n".join(lines) + "\n").encode()
    assert logs.wrap_width(data) is None and logs.unwrap(data) == data


def test_records_joined_on_one_line_keep_their_ranks() -> None:
    line = "[rank3]: step 7 loss 2.1[rank1]: RuntimeError: CUDA error: an illegal memory access"
    at = line.index("RuntimeError")
    assert line_rank(line, None, at) == 1
    assert line_rank(line, None, 0) == 3


def test_a_traceback_takes_the_rank_of_its_prefixed_neighbours() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 388.00 MiB. GPU 0 has "
        "a total capacity of 9.68 GiB of which 95.75 MiB is free.\n"
        '[rank2]: Traceback (most recent call last):\n[rank2]:   File "train.py", line 6\n'
    )
    matcher = scan.Matcher(gathered_entries()[0].entries)
    result = rank.diagnose([scan.scan(io.BytesIO(text.encode()), "job.log", matcher)])
    assert result.matches[0].id == "cuda-out-of-memory" and result.initiating_rank == 2
