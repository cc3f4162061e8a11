"""`nanopedia.diagnosis.error_lines`: the error-looking lines of a job no entry matched,
collapsed so the same failure in many jobs counts as one line, with the file and line where it
was first seen, in bounded memory."""

from __future__ import annotations

import pytest

from nanopedia.diagnosis import error_lines
from nanopedia.diagnosis.error_lines import ErrorLines, normalise_error


def _top(*feeds: bytes, file: str = "a.log", n: int = 5) -> list[tuple[str, int, int]]:
    tap = ErrorLines()
    tap.start(file)
    for data in feeds:
        tap.feed(data)
    tap.finish()
    return [(r["text"], r["count"], r["line"]) for r in tap.top(n)]


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: bad shard",
        "torch.OutOfMemoryError",
        "KeyboardInterruptException raised",
        "E0429 13:55:49.384 something",
        "[F429 13:55:49.384 ProcessGroupNCCL.cpp:1743] watchdog",
        "ERROR: job",
        "FATAL: node",
        "CRITICAL disk",
        "Fatal Python error",
        "fatal: repo",
        "an error occurred",
        "step failed",
        "FAILED",
        "Killed",
        "Aborted (core dumped)",
        "job CANCELLED",
        "Segmentation fault",
        "core dumped",
        "terminate called after",
    ],
)
def test_error_looking_lines_are_counted(line: str) -> None:
    assert _top(line.encode() + b"\n")[0][1:] == (1, 1)


@pytest.mark.parametrize(
    "line",
    [
        "step 10 loss 2.31",
        "Errors: 0",  # no word break after Error
        "terrorist",  # not a word
        "errors in total: 0",
        "E12 13:55:49.384 two digits are no glog level",
        "I0429 13:55:49.384 info",
        "E0429 13:55:49 no fraction",
        "kill -9 ok",
        '  File "/x/train.py", line 3, in f  # ValueError',  # a traceback's frame
        "",
    ],
)
def test_ordinary_lines_and_traceback_frames_are_not(line: str) -> None:
    assert _top(line.encode() + b"\n") == []


@pytest.mark.parametrize(
    "line, normal",
    [
        ("[rank3]: ValueError: bad shard 17", "ValueError: bad shard <n>"),
        ("[default12]:ValueError: x", "ValueError: x"),
        ("[rank3]:[rank3]: ValueError: x", "ValueError: x"),
        ("[1,0]<stderr>: ValueError: x", "ValueError: x"),
        ("node-7: ValueError: x", "ValueError: x"),
        ("gpu7.cluster: ValueError: x", "ValueError: x"),
        ("node7:1234:1234 [0] NCCL WARN failed", "NCCL WARN failed"),
        ("  \tValueError:   x  ", "ValueError: x"),
        ("Error: x", "Error: x"),  # a word without a digit is no host
        ("E0429 13:55:49.384 boom", "E<time> boom"),
        ("W0429 13:55:49 boom", "W<time> boom"),
        ("E429 13:55:49.384 boom", "E<time> boom"),
        ("2024-05-01T10:00:01.5 failed", "<time> failed"),
        ("2024-05-01 10:00:01,123 failed", "<time> failed"),
        ("2024-05-01_10:00:01 failed", "<time> failed"),
        ("at 10:00:01 failed", "at <time> failed"),
        ("at 10:00:01.25 failed", "at <time> failed"),
        ("open /data/x/y.bin failed", "open <path> failed"),
        ("open /data/x/ failed", "open <path> failed"),
        ("open C:/data/x failed", "open <path> failed"),
        ("open /data failed", "open /data failed"),  # one segment is no path
        ("open /a@b/c+d/e~f/g-h failed", "open <path> failed"),
        ("at 0xDEADbeef", "at <hex>"),
        ("id deadbeef01 failed", "id <hex> failed"),
        ("id abcdefab failed", "id abcdefab failed"),  # letters only: a word
        ("id 1234567 failed", "id <n> failed"),
        ("version 2.21.5 failed", "version <n> failed"),
        ("rank3 failed", "rank3 failed"),  # a digit inside a word stays
        ("\x1b[31mERROR\x1b[0m: x", "ERROR: x"),
        ("a\t\tb  error", "a b error"),
    ],
)
def test_what_differs_between_jobs_is_collapsed(line: str, normal: str) -> None:
    assert normalise_error(line) == normal


def test_a_normal_form_is_cut_to_its_length() -> None:
    assert normalise_error("ValueError: " + "x" * 500) == ("ValueError: " + "x" * 500)[:200]
    assert len(normalise_error("  ValueError: " + "x" * 500)) == error_lines.ERROR_CHARS


def test_the_same_failure_in_other_words_counts_once_at_its_first_line() -> None:
    data = (
        b"step 1\n[rank0]: ValueError: bad shard 17 at /data/s/17.bin\n"
        b"[rank1]: ValueError: bad shard 9 at /data/s/9.bin\nKilled\n"
        b"[rank2]: ValueError: bad shard 3 at /data/s/3.bin\n"
    )
    assert _top(data) == [
        ("ValueError: bad shard <n> at <path>", 3, 2),
        ("Killed", 1, 4),
    ]


def test_ties_keep_the_order_of_first_appearance_and_top_is_bounded() -> None:
    data = b"".join(b"Error: kind %c\n" % k for k in b"dcbaedcba")
    top = _top(data, n=3)
    assert [t[0] for t in top] == ["Error: kind d", "Error: kind c", "Error: kind b"]
    assert [t[1] for t in top] == [2, 2, 2]
    assert len(_top(data)) == 5 == error_lines.ERROR_LINES_KEPT


def test_more_frequent_lines_come_first() -> None:
    data = b"Error: rare\n" + b"Error: often\n" * 3 + b"Error: twice\n" * 2
    assert [t[:2] for t in _top(data)] == [
        ("Error: often", 3),
        ("Error: twice", 2),
        ("Error: rare", 1),
    ]


def test_a_line_with_several_error_words_counts_once() -> None:
    assert _top(b"ERROR: RuntimeError failed, core dumped\nok\nKilled\n") == [
        ("ERROR: RuntimeError failed, core dumped", 1, 1),
        ("Killed", 1, 3),
    ]


@pytest.mark.parametrize("cut", [1, 5, 14, 15, 16, 30, 31])
def test_a_line_split_between_reads_is_counted_once_at_its_line(cut: int) -> None:
    data = b"ok\nValueError: bad 1\nfine\nKilled\n"
    assert (
        _top(data[:cut], data[cut:])
        == _top(data)
        == [
            ("ValueError: bad <n>", 1, 2),
            ("Killed", 1, 4),
        ]
    )


def test_the_last_line_without_a_newline_is_counted() -> None:
    assert _top(b"ok\nok\nKilled") == [("Killed", 1, 3)]
    assert _top(b"Kil", b"led") == [("Killed", 1, 1)]


def test_line_numbers_count_from_each_file() -> None:
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"ok\nok\nError: one\n")
    tap.finish()
    tap.start("b.log")
    tap.feed(b"Error: two\npartial")
    tap.start("c.log")  # what b.log left unfinished is not c.log's
    tap.feed(b"ok\nError: three\n")
    tap.finish()
    rows = {r["text"]: (r["file"], r["line"]) for r in tap.top()}
    assert rows == {
        "Error: one": ("a.log", 3),
        "Error: two": ("b.log", 1),
        "Error: three": ("c.log", 2),
    }


def test_the_example_is_the_first_line_as_written_without_controls() -> None:
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"  [rank0]: Error:\tbad\x07 17  \n[rank1]: Error: bad\x07 18\n")
    tap.finish()
    (row,) = tap.top()
    assert row["example"] == "[rank0]: Error: bad  17"
    assert row["count"] == 2


def test_the_example_is_cut_to_its_length() -> None:
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"Error: " + b"y" * 1000 + b"\n")
    (row,) = tap.top()
    assert len(row["example"]) == error_lines.EXAMPLE_CHARS
    assert row["example"] == ("Error: " + "y" * 1000)[:300]


def test_only_the_start_of_a_huge_line_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(error_lines, "ERROR_CHARS", 10_000)
    monkeypatch.setattr(error_lines, "EXAMPLE_CHARS", 10_000)
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"Error: " + b"z" * 10_000 + b"\nKilled\n")
    rows = tap.top()
    assert len(rows[0]["text"]) == error_lines.ERROR_SOURCE_BYTES
    assert rows[1]["line"] == 2


def test_a_line_without_end_is_held_only_up_to_the_line_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(error_lines, "MAX_LINE_BYTES", 100)
    tap = ErrorLines()
    tap.start("a.log")
    for _ in range(50):
        tap.feed(b"x" * 64)
        assert len(tap.carry) <= 100
    tap.feed(b"Error: y\nKilled\nmore")
    assert len(tap.carry) == 4
    tap.finish()
    assert tap.carry == b""
    # the line's first bytes and what came with its end: its middle is not held
    assert [r["text"] for r in tap.top()] == ["x" * 100 + "Error: y", "Killed"]


def test_the_distinct_lines_of_a_job_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(error_lines, "ERROR_KEYS", 3)
    data = b"Error: a\nError: b\nError: c\nError: d\nError: a\n"
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(data)
    assert sorted(tap.counts) == ["Error: a", "Error: b", "Error: c"]
    assert tap.counts["Error: a"][0] == 2  # a known line is still counted


@pytest.mark.parametrize("per_feed", [False, True])
def test_the_lines_looked_at_per_file_are_bounded(
    monkeypatch: pytest.MonkeyPatch, per_feed: bool
) -> None:
    monkeypatch.setattr(error_lines, "ERROR_LINES_PER_FILE", 3)
    lines = [b"Error: %c\n" % c for c in b"abcdef"]
    tap = ErrorLines()
    tap.start("a.log")
    for piece in lines if per_feed else [b"".join(lines)]:
        tap.feed(piece)
    tap.finish()
    assert [(r["text"], r["line"]) for r in tap.top()] == [
        ("Error: a", 1),
        ("Error: b", 2),
        ("Error: c", 3),
    ]
    tap.start("b.log")
    tap.feed(b"Killed\n")
    assert len(tap.counts) == 4  # each file gets its own


def test_lines_fed_before_any_file_is_named_count_from_the_first_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(error_lines, "ERROR_LINES_PER_FILE", 2)
    tap = ErrorLines()
    tap.feed(b"Error: a\nError: b\nError: c\n")
    tap.finish()
    assert [(r["text"], r["file"], r["line"]) for r in tap.top()] == [
        ("Error: a", "", 1),
        ("Error: b", "", 2),
    ]


@pytest.mark.parametrize(
    "feeds, line",
    [([b"\nKilled\n"], 2), ([b"\n", b"Killed\n"], 2), ([b"\n\n", b"ok\nKilled"], 4)],
)
def test_blank_lines_count_in_line_numbers(feeds: list[bytes], line: int) -> None:
    assert _top(*feeds) == [("Killed", 1, line)]


def test_a_line_that_is_not_utf8_is_counted_with_replacement_characters() -> None:
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"Error: caf\xe9 \xff\n")
    (row,) = tap.top()
    assert row["text"] == "Error: caf\ufffd \ufffd" and row["example"] == row["text"]


def test_a_huge_line_after_a_blank_one_keeps_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(error_lines, "MAX_LINE_BYTES", 100)
    tap = ErrorLines()
    tap.start("a.log")
    tap.feed(b"\n" + b"x" * 150)  # one blank line, then the start of a long one
    tap.feed(b"Error: y\n")
    assert [(r["text"], r["line"]) for r in tap.top()] == [("x" * 100 + "Error: y", 2)]
