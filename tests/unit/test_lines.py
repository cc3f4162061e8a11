"""What one log line says about who printed it and when (`diagnosis/lines.py`): tables of the
timestamp formats and rank prefixes the first failure is decided by."""

from __future__ import annotations

import random

import pytest

from nanopedia.diagnosis.lines import (
    NEIGHBOUR_LINES,
    TIMESTAMP_WINDOW,
    earlier_timestamp,
    file_rank,
    line_rank,
    nearby_rank,
    timestamp,
)

TIMESTAMPS = [
    ("ISO with T and a fraction", "2024-07-10T18:00:32.5 ERROR", "0710180032.500000000"),
    ("ISO with a space and a comma", "2024-07-10 18:00:32,123 ERROR", "0710180032.123000000"),
    ("ISO with an underscore", "at 2024-07-10_18:00:32 failed", "0710180032.000000000"),
    ("glog, month padded", "E0710 18:00:32.123456 12 ProcessGroupNCCL.cpp", "0710180032.123456000"),
    (
        "glog, month not padded",
        "E710 18:00:32.123456 12 ProcessGroupNCCL.cpp",
        "0710180032.123456000",
    ),
    ("glog, info level", "I1003 01:02:03.000001 7 init.cpp", "1003010203.000001000"),
    ("glog, warning level", "W1003 01:02:03.5 7 x.cpp", "1003010203.500000000"),
    ("glog, fatal level", "F0102 03:04:05.000006 1 y.cpp", "0102030405.000006000"),
    (
        "a fraction past nanoseconds is cut",
        "2024-07-10T18:00:32.1234567891",
        "0710180032.123456789",
    ),
    (
        "the last of two, glog after ISO",
        "[2024-07-10 18:00:32] E1003 01:02:03.5",
        "1003010203.500000000",
    ),
    (
        "the last of two, ISO after glog",
        "E1003 01:02:03.5 at 2024-07-10 18:00:32",
        "0710180032.000000000",
    ),
    ("the last of two ISO", "2024-01-01 00:00:00 then 2024-02-02 00:00:01", "0202000001.000000000"),
    ("no timestamp", "RuntimeError: CUDA error", None),
    ("a glog level glued to a word is none", "XE0710 18:00:32.1", None),
    ("a time without seconds is none", "2024-07-10 18:00", None),
]


@pytest.mark.parametrize(
    "text, expected", [(t, e) for _, t, e in TIMESTAMPS], ids=[n for n, _, _ in TIMESTAMPS]
)
def test_every_timestamp_format_reads_as_a_sortable_time(text: str, expected: str | None) -> None:
    assert timestamp(text) == expected


def test_a_glog_month_without_its_leading_zero_sorts_july_before_october() -> None:
    july, october = timestamp("E710 18:00:32.1 x"), timestamp("E1003 01:02:03.5 x")
    assert july is not None and october is not None
    assert sorted([october, july]) == [july, october]


def test_an_untimed_line_takes_the_nearest_earlier_timestamp_in_the_window() -> None:
    buf = b"2024-07-10 18:00:30 start\n2024-07-10 18:00:31 step\nTraceback (most recent call)\n"
    start = buf.index(b"Traceback")
    assert earlier_timestamp(buf, start) == "0710180031.000000000"
    assert earlier_timestamp(buf, start, window=10) is None  # too far back
    assert earlier_timestamp(buf, 0) is None


def _random_log(rnd: random.Random) -> bytes:
    """Lines of every kind a lookup meets: timed ones in both formats (some glued to a digit, so
    a cut line could read as another timestamp), untimed ones short and long, blank ones, and
    bytes that are not UTF-8."""
    kinds = [
        lambda: f"2024-07-{rnd.randint(10, 28)} 18:{rnd.randint(10, 59)}:31,5 step".encode(),
        lambda: (
            f"E{rnd.randint(1, 12)}{rnd.randint(10, 28)} 18:00:{rnd.randint(10, 59)}.25 x".encode()
        ),
        lambda: f"1{rnd.randint(1000, 2999)}-07-10 18:00:31 glued".encode(),
        lambda: b"Traceback (most recent call last):",
        lambda: b"  x" * rnd.randint(0, 400),
        lambda: b"",
        lambda: bytes(rnd.choice(b"\xff\xfe\x80az 0") for _ in range(rnd.randint(1, 90))),
    ]
    return b"\n".join(rnd.choice(kinds)() for _ in range(rnd.randint(1, 120))) + b"\n"


def test_the_nearest_earlier_timestamp_is_that_of_the_whole_window() -> None:
    """Reading the window's last lines first is only quicker: the answer is always the last
    timestamp of the whole window, as `timestamp` reads it."""
    rnd = random.Random(7)
    for case in range(1500):
        buf, before = _random_log(rnd), _random_log(rnd) if case % 3 == 0 else b""
        start = rnd.randint(0, len(buf))
        window = rnd.choice([40, 300, 1000, 5000, TIMESTAMP_WINDOW])
        head = (before + buf[:start])[-window:] if start < window else buf[start - window : start]
        expected = timestamp(head.decode("utf-8", "replace"))
        assert earlier_timestamp(buf, start, before, window) == expected, (case, start, window)


def test_the_text_before_a_buffer_lends_its_timestamp() -> None:
    before = b"E0710 18:00:32.000001 1 x.cpp] watchdog\n"
    assert earlier_timestamp(b"Traceback\n", 0, before) == "0710180032.000001000"
    far = b"E0710 18:00:32.000001 1 x.cpp]" + b" " * 100
    assert earlier_timestamp(b"x" * 50 + b"\n", 50, far, window=60) is None


RANKS = [
    ("a launcher prefix", "[rank3]: RuntimeError", None, 3),
    ("torchrun's default prefix", "[default12]: Traceback", None, 12),
    ("an indented prefix", "   [rank4]: x", None, 4),
    ("[Rank N] in the message", "ProcessGroupNCCL.cpp [Rank 5] Watchdog caught", None, 5),
    ("Rank N: in the message", "NCCL Rank 6: failed", None, 6),
    ("on rank N", "CUDA error on rank 7 during all_reduce", None, 7),
    ("OVERFLOW! Rank N", "[deepspeed] OVERFLOW! Rank 8 Skipping step", None, 8),
    ("for rank N:", "Exception raised for rank 9: timeout", None, 9),
    ("the file's rank when the line names none", "RuntimeError: x", 2, 2),
    ("the line's own rank over the file's", "[rank1]: x", 2, 1),
    ("no rank", "RuntimeError: x", None, None),
    ("seven digits are no rank", "[rank1234567]: x", None, None),
    ("'rank' inside a word is none", "crank 3 on", None, None),
]


@pytest.mark.parametrize(
    "text, of_file, expected", [r[1:] for r in RANKS], ids=[r[0] for r in RANKS]
)
def test_every_rank_marking_names_the_rank_that_printed_the_line(
    text: str, of_file: int | None, expected: int | None
) -> None:
    assert line_rank(text, of_file) == expected


def test_records_joined_on_one_line_keep_their_own_ranks() -> None:
    text = "[rank0]: step 9[rank1]: RuntimeError: boom"
    assert line_rank(text, None, text.index("RuntimeError")) == 1
    assert line_rank(text, None, text.index("step")) == 0


FILES = [
    ("rank3.log", 3),
    ("logs/rank_12.txt", 12),
    ("worker-4.out", 4),
    ("Default7.log", 7),
    ("run/attempt_0/5/stderr.log", 5),
    ("run/attempt_0/5/stdout.log", 5),
    ("run/attempt_0/5/error.json", None),
    ("run/7/notes.log", None),
    ("ranks.log", None),
    ("rank3.gz", 3),
    ("slurm-1234.out", None),
]


@pytest.mark.parametrize("name, expected", FILES, ids=[n for n, _ in FILES])
def test_a_per_rank_file_name_gives_its_rank(name: str, expected: int | None) -> None:
    assert file_rank(name) == expected


def _at(buf: bytes, needle: bytes) -> tuple[int, int, str]:
    start = buf.index(needle)
    end = buf.find(b"\n", start)
    return start, end, buf[start:end].decode()


def test_a_line_without_a_rank_takes_it_from_a_neighbour() -> None:
    buf = b"[rank2]: Traceback (most recent call last):\n  File x\nRuntimeError: boom\nnext\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) == 2


def test_neighbours_that_disagree_give_no_rank() -> None:
    buf = b"[rank2]: a\nRuntimeError: boom\n[rank5]: b\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) is None


def test_neighbours_further_than_the_limit_give_no_rank() -> None:
    gap = b"plain\n" * NEIGHBOUR_LINES
    buf = b"[rank2]: a\n" + gap + b"RuntimeError: boom\n" + gap + b"[rank2]: b\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) is None
    near = b"[rank2]: a\n" + b"plain\n" * (NEIGHBOUR_LINES - 1) + b"RuntimeError: boom\n"
    start, end, text = _at(near, b"RuntimeError")
    assert nearby_rank(near, start, end, line_rank(text, None), None) == 2


def test_the_files_rank_beats_a_neighbours() -> None:
    buf = b"[rank2]: a\nRuntimeError: boom\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), 6) == 6
    own = b"[rank2]: a\n[rank4]: RuntimeError: boom\n"
    start, end, text = _at(own, b"[rank4]")
    assert nearby_rank(own, start, end, line_rank(text, None), 6) == 4


def test_the_last_line_of_a_buffer_without_a_newline_looks_back() -> None:
    buf = b"[rank1]: a\nRuntimeError: boom"
    start = buf.index(b"RuntimeError")
    assert nearby_rank(buf, start, -1, line_rank(buf[start:].decode(), None), None) == 1


def test_a_single_timestamp_at_the_start_of_the_window_is_found() -> None:
    buf = b"2024-07-10 18:00:31 step\nTraceback\n"
    assert earlier_timestamp(buf, buf.index(b"Traceback")) == "0710180031.000000000"
    glog = b"E0710 18:00:31.5 x.cpp] step\nTraceback\n"
    assert earlier_timestamp(glog, glog.index(b"Traceback")) == "0710180031.500000000"


def test_bytes_that_are_not_utf8_never_stop_a_lookup() -> None:
    buf = b"\xff\xfe 2024-07-10 18:00:31 \xff\n[rank2]: \xff\nRuntimeError: boom\n[rank2]: \xfe\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) == 2
    assert earlier_timestamp(buf, start) == "0710180031.000000000"


def test_the_evidence_on_the_first_line_reads_only_the_lines_after_it() -> None:
    buf = b"RuntimeError: boom\n[rank3]: a\n[rank4]: b\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) == 3


def test_a_neighbour_whose_rank_ends_its_line_counts() -> None:
    buf = b"NCCL watchdog [Rank 5]\nRuntimeError: boom\nnext\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) == 5
    after = b"RuntimeError: boom\nNCCL watchdog [Rank 6]"
    start, end, text = _at(after, b"RuntimeError")
    assert nearby_rank(after, start, end, line_rank(text, None), None) == 6


def test_the_last_line_looks_back_only() -> None:
    buf = b"[rank2]: x\nplain\nplain\nplain\n[rank1]: a\nRuntimeError: boom"
    start = buf.index(b"RuntimeError")
    assert nearby_rank(buf, start, -1, line_rank(buf[start:].decode(), None), None) == 1


def test_a_joined_records_own_rank_beats_its_neighbours() -> None:
    buf = b"[rank3]: a\n[rank0]: x[rank1]: RuntimeError: boom\n"
    line_start = buf.index(b"[rank0]")
    end = buf.index(b"\n", line_start)
    text = buf[line_start:end].decode()
    at = buf.index(b"RuntimeError")
    assert nearby_rank(buf, line_start, end, line_rank(text, None, at - line_start), None) == 1


def test_an_empty_line_between_is_a_neighbour_of_its_own() -> None:
    behind = b"[rank2]: a\n\nRuntimeError: boom\n[rank5]: b\n"
    start, end, text = _at(behind, b"RuntimeError")
    assert nearby_rank(behind, start, end, line_rank(text, None), None) == 5
    ahead = b"[rank2]: a\nRuntimeError: boom\n\n[rank5]: b\n"
    start, end, text = _at(ahead, b"RuntimeError")
    assert nearby_rank(ahead, start, end, line_rank(text, None), None) == 2


def test_a_neighbour_is_one_line_not_the_rest_of_the_buffer() -> None:
    buf = b"[rank2]: a\nplain\nRuntimeError: boom\nplain\nNCCL [Rank 7] x\n"
    start, end, text = _at(buf, b"RuntimeError")
    assert nearby_rank(buf, start, end, line_rank(text, None), None) is None


def test_a_prefix_that_ends_right_at_the_evidence_is_its_rank() -> None:
    text = "[rank0]: x[rank1]:RuntimeError: boom"
    assert line_rank(text, None, text.index("RuntimeError")) == 1


def test_the_earlier_timestamp_is_the_last_of_the_whole_window_whatever_its_lines() -> None:
    """The window is read from its end in growing tails of whole lines: the answer is still the
    last timestamp of all of it (of either format, a cut character or a timestamp split by the
    window's start included)."""
    import random

    glued = b"1" * 2000 + b"2024-07-10 18:00:39".ljust(255) + b"\n"  # a digit before it: none
    buf = b"2024-07-10 18:00:30 step\n" + glued
    assert earlier_timestamp(buf, len(buf)) == "0710180030.000000000"
    rng = random.Random(32)
    stamps = ["2024-07-10 18:00:{:02d},5", "E710 18:00:{:02d}.250000", "I0710 18:01:{:02d}.1"]
    for _ in range(400):
        lines = []
        for _ in range(rng.randrange(1, 60)):
            text = "".join(rng.choice("x1é ") * rng.randrange(0, 300) for _ in range(3))
            if rng.random() < 0.3:  # anywhere in the line, a digit or a letter before it or not
                at = rng.randrange(len(text) + 1)
                stamp = rng.choice(stamps).format(rng.randrange(60))
                text = text[:at] + stamp + rng.choice(["", " "]) + text[at:]
            lines.append(text)
        buf = ("\n".join(lines) + "\n").encode()
        start = rng.choice([len(buf), buf.rfind(b"\n", 0, len(buf) - 1) + 1])
        window = rng.choice([100, 1000, TIMESTAMP_WINDOW])
        whole = buf[max(0, start - window) : start].decode("utf-8", "replace")
        assert earlier_timestamp(buf, start, window=window) == timestamp(whole)
