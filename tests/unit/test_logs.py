"""`nanopedia.diagnosis.logs`: a log's bytes as the lines a reader sees, whatever the file's
encoding, compression, line endings, colours or size, in bounded memory."""

from __future__ import annotations

import errno
import gzip
import io
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nanopedia.diagnosis import logs

TEXT = b"step 1 loss 2.5\n[rank3]: RuntimeError: boom\n"


def _read(stream: Any, size: int = logs.BUFFER_BYTES) -> bytes:
    """Every line `buffers` gives, joined: what the scan sees."""
    return b"".join(bytes(buf[:n]) for buf, n in logs.buffers(stream, size))


def _lines(data: bytes, size: int = logs.BUFFER_BYTES) -> bytes:
    return _read(io.BytesIO(data), size)


def _open(path: Path, **kw: Any) -> bytes:
    stream, _ = logs.open_log(str(path), **kw)
    with stream:
        return _read(stream)


# --- opening: gzip, UTF-16, pipes, what is not a log ------------------------------------------


# Made at collection, so each xdist worker makes them: gzip's header holds the time unless told
# (`mtime=0`), and two workers collecting in different seconds saw different tests (CI failed).
PACKINGS = [
    ("plain.log", TEXT),
    ("packed.log", gzip.compress(TEXT, mtime=0)),  # no .gz: the magic number says it
    ("utf16.log", TEXT.decode().encode("utf-16")),  # PowerShell's `>`: a byte order mark
    ("utf16le.log", TEXT.decode().encode("utf-16-le")),
    ("utf16be.log", TEXT.decode().encode("utf-16-be")),
    ("utf16.log.gz", gzip.compress(TEXT.decode().encode("utf-16"), mtime=0)),
    ("utf16le.log.gz", gzip.compress(TEXT.decode().encode("utf-16-le"), mtime=0)),
]


@pytest.mark.parametrize("name, data", PACKINGS, ids=[name for name, _ in PACKINGS])
def test_a_log_is_read_as_its_utf8_text_whatever_its_packing_and_encoding(
    tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert _open(path) == TEXT


@pytest.mark.parametrize(
    "head, codec",
    [
        (b"\xff\xfes\x00", "utf-16"),
        (b"\xfe\xff\x00s", "utf-16"),
        (b"s\x00t\x00", "utf-16-le"),
        (b"\x00s\x00t", "utf-16-be"),
        (b"step", None),
        (b"s\x00t", None),  # too short to say
        (b"\x00\x00\x00\x00", None),  # NULs: binary, not UTF-16
        (b"s\x00\x00\x00", None),
        (b"\x00\x00\x00s", None),
        (b"s\x00\x00t", None),
        (b"\x00s\x00\x00", None),
        (b"", None),
    ],
)
def test_utf16_is_recognised_by_its_mark_or_its_nul_bytes(head: bytes, codec: str | None) -> None:
    assert logs.utf16(head) == codec


def test_the_raw_file_under_a_gzip_log_is_returned_for_the_progress_bar(tmp_path: Path) -> None:
    path = tmp_path / "packed.log"
    path.write_bytes(gzip.compress(TEXT * 1000))
    stream, raw = logs.open_log(str(path))
    with stream:
        assert _read(stream) == TEXT * 1000
        assert raw.tell() == path.stat().st_size  # the packed bytes, all read
    assert raw.closed  # closing the log closes the file under it


def test_a_plain_log_is_its_own_raw_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.log"
    path.write_bytes(TEXT)
    stream, raw = logs.open_log(str(path))
    with stream:
        assert stream is raw


def test_a_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as err:
        logs.open_log(str(tmp_path))
    assert (err.value.errno, err.value.strerror, err.value.filename) == (
        errno.EISDIR,
        os.strerror(errno.EISDIR),
        str(tmp_path),
    )


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(logs.NotRegular) as err:
        logs.open_log(str(fifo))
    assert (err.value.errno, err.value.filename) == (errno.EINVAL, str(fifo))
    assert "not a regular file" in str(err.value)
    with pytest.raises(logs.NotRegular) as err:
        logs.open_regular(str(fifo))
    assert (err.value.errno, err.value.strerror, err.value.filename) == (
        errno.EINVAL,
        "not a regular file (a pipe, socket or device)",
        str(fifo),
    )
    assert time.monotonic() - started < 5


def test_a_fifo_is_read_like_a_pipe_when_pipes_are_allowed(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)

    def write() -> None:  # `<(zcat log)`: a writer comes, writes and goes
        time.sleep(0.1)
        with open(fifo, "wb") as writer:
            writer.write(TEXT)

    writer = threading.Thread(target=write)
    writer.start()
    stream, raw = logs.open_log(str(fifo), time.monotonic() + 5, pipes=True)
    writer.join()
    assert isinstance(raw, logs.Waiting) and stream is raw
    with stream:
        assert _read(stream) == TEXT
    assert not raw.timed_out and raw.fd == -1  # opened here, so closed here


def test_a_missing_file_is_an_os_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        logs.open_log(str(tmp_path / "missing.log"))


def test_standard_input_is_read_and_unpacked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's stand-in for stdin, without a file descriptor, is read as it is."""
    packed = io.BufferedReader(io.BytesIO(gzip.compress(TEXT)))  # type: ignore[arg-type]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(packed))
    stream, _ = logs.open_log("-")
    with stream:
        assert _read(stream) == TEXT


def test_standard_input_from_a_file_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "in.log"
    path.write_bytes(TEXT)
    with path.open("rb") as file:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(file))
        stream, _ = logs.open_log("-", time.monotonic() - 1)  # the deadline is for pipes only
        assert _read(stream) == TEXT


def test_standard_input_from_a_pipe_waits_until_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read, write = os.pipe()
    os.write(write, TEXT)
    with os.fdopen(read, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
        stream, raw = logs.open_log("-", time.monotonic() + 0.3)
        assert isinstance(raw, logs.Waiting)
        assert _read(stream) == TEXT and raw.timed_out  # the writer stayed open and silent
        raw.close()
        os.fstat(read)  # not ours to close
    os.close(write)


# --- gzip: bombs and damage --------------------------------------------------------------------


def test_a_gzip_bomb_stops_at_its_limit_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "UNPACKED_FLOOR", 1000)
    path = tmp_path / "bomb.log"
    path.write_bytes(gzip.compress(b"\n" * 1_000_000))
    packed = path.stat().st_size
    assert 200 * packed < 1_000_000
    said = f"it unpacks to more than {200 * packed:,} bytes, far more than a real log; unpack"
    with pytest.raises(logs.LogTooLarge, match=f"^{said} it yourself if it is one$"):
        _open(path)


def test_a_gzip_log_may_unpack_to_200_times_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "UNPACKED_FLOOR", 1000)
    data = b"".join(b"step %d loss %d\n" % (i, i * 7919 % 1000) for i in range(20_000))
    path = tmp_path / "big.log"
    path.write_bytes(gzip.compress(data))
    assert len(data) <= 200 * path.stat().st_size
    assert _open(path) == data


def test_the_unpacking_limit_is_at_least_the_floor() -> None:
    capped = logs.Capped(io.BytesIO(b"x" * 100), 1)  # type: ignore[arg-type]
    assert capped.limit == logs.UNPACKED_FLOOR
    assert logs.Capped(io.BytesIO(), 1 << 30).limit == 200 << 30  # type: ignore[arg-type]
    assert logs.Capped(io.BytesIO(), None).limit == logs.UNPACKED_FLOOR  # type: ignore[arg-type]


def test_a_gzip_stream_of_unknown_size_may_unpack_to_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Standard input has no size to scale the limit by: the floor is its limit."""
    monkeypatch.setattr(logs, "UNPACKED_FLOOR", 10)
    assert logs.Capped(io.BytesIO(), None).limit == 10  # type: ignore[arg-type]
    assert logs.Capped(io.BytesIO(), 0).limit == 10  # type: ignore[arg-type]
    assert logs.Capped(io.BytesIO(), 1).limit == 200  # type: ignore[arg-type]


def test_exactly_the_limit_is_allowed() -> None:
    capped = logs.Capped(io.BytesIO(b"x" * 10), None)  # type: ignore[arg-type]
    capped.limit = 10
    assert capped.read(4) + capped.read(6) == b"x" * 10 and capped.read_bytes == 10
    capped = logs.Capped(io.BytesIO(b"x" * 11), None)  # type: ignore[arg-type]
    capped.limit = 10
    with pytest.raises(logs.LogTooLarge):
        capped.read()


@pytest.mark.parametrize("cut", [11, 30, -9])
def test_a_damaged_gzip_log_is_an_os_error_not_a_crash(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "damaged.log"
    whole = gzip.compress(TEXT * 50)
    path.write_bytes(whole[:cut] + (b"\xff" * 40 if cut > 0 else b""))
    with pytest.raises(OSError):
        _open(path)


def test_a_truncated_gzip_log_says_it_is_not_valid(tmp_path: Path) -> None:
    path = tmp_path / "cut.log"
    path.write_bytes(gzip.compress(TEXT * 50)[:-12])
    with pytest.raises(OSError, match="not a valid gzip file"):
        _open(path)


# --- lines: endings, colours, carries, long lines --------------------------------------------


@pytest.mark.parametrize(
    "raw, read",
    [
        (b"a\r\nb\r\n", b"a\nb\n"),
        (b"10%\r50%\r100%\n", b"10% 50% 100%\n"),
        (b"\x1b[31m[rank0]:\x1b[0m boom\n", b"[rank0]: boom\n"),
        (b"\x1b[2K\x1b[1;32mok\n", b"ok\n"),
        (b"a \x1b b\n", b"a \x1b b\n"),  # an ESC that starts no sequence stays
        (b"no newline at the end", b"no newline at the end\n"),
        (b"last\r", b"last \n"),
        (b"\rfirst\n", b" first\n"),
        (b"\x1b[1mfirst\n", b"first\n"),
        (b"", b""),
    ],
    ids=[
        "crlf",
        "lone cr",
        "colour",
        "cursor",
        "lone esc",
        "no final newline",
        "cr end",
        "cr first",
        "colour first",
        "empty",
    ],
)
def test_line_endings_and_colours_are_read_as_the_browser_reads_them(
    raw: bytes, read: bytes
) -> None:
    assert _lines(raw) == read
    assert _lines(raw, 3) == read  # in small reads too


def test_a_line_split_across_reads_is_one_line() -> None:
    data = b"first line\nsecond line, longer than a read\nthird\n"
    got = [bytes(b[:n]) for b, n in logs.buffers(io.BytesIO(data), 8)]
    assert b"".join(got) == data
    assert all(piece.endswith(b"\n") for piece in got)  # every buffer is whole lines
    assert b"second line, longer than a read\n" in got


def test_a_huge_line_is_cut_so_memory_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 64)
    data = b"x" * 200 + b"\nend\n"
    got = [bytes(b[:n]) for b, n in logs.buffers(io.BytesIO(data), 16)]
    assert b"".join(got) == data  # nothing lost, no newline added
    assert max(len(g) for g in got) <= 64 + 16
    assert got[-1].endswith(b"end\n")


def test_a_huge_last_line_without_newline_ends_with_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 64)
    assert _lines(b"y" * 100, 16) == b"y" * 100 + b"\n"


def test_a_line_of_exactly_the_cut_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 32)
    got = [bytes(b[:n]) for b, n in logs.buffers(io.BytesIO(b"z" * 32 + b"\n"), 32)]
    assert got == [b"z" * 32, b"\n"]
    got = [bytes(b[:n]) for b, n in logs.buffers(io.BytesIO(b"z" * 31 + b"\n"), 31)]
    assert got == [b"z" * 31 + b"\n"]


def test_a_buffer_with_nothing_to_clean_is_the_reused_array_itself() -> None:
    """No copy on the way to RE2 for the common buffer; the carry moves to its front."""
    got = [(type(b), bytes(b[:n])) for b, n in logs.buffers(io.BytesIO(b"ab\ncd\nef"), 4)]
    assert got == [(bytearray, b"ab\n"), (bytearray, b"cd\n"), (bytes, b"ef\n")]


# --- normalising and undoing a terminal's wrap ------------------------------------------------


@pytest.mark.parametrize(
    "raw, clean",
    [
        (b"a\r\nb", b"a\nb"),
        (b"a\rb", b"a b"),
        (b"a\r\r\nb", b"a \nb"),
        (b"\x1b[0m", b""),
        (b"\x1b[38;5;208mx", b"x"),
        (b"\x1b[?25lx", b"x"),  # cursor hidden: a parameter byte from 0x30 to 0x3f
        (b"\x1b[1 qx", b"x"),  # an intermediate byte
        (b"\x1b[@x", b"x"),
        (b"\x1b[~x", b"x"),
        (b"\x1bx", b"\x1bx"),
        (b"plain", b"plain"),
    ],
)
def test_normalise_turns_crs_to_newlines_or_spaces_and_drops_colours(
    raw: bytes, clean: bytes
) -> None:
    assert logs.normalise(raw) == clean


_RECORD = (
    "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] ProcessGroupNCCL's "
    "watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
    "collectives. NCCL version 2.21.5+cuda12.4, timeout 600000 ms, last enqueued work 18, "
    "last completed work 17, rank 6 of 64."
)


def _wrapped(text: str, width: int) -> bytes:
    return ("\n".join(text[i : i + width] for i in range(0, len(text), width)) + "\n").encode()


@pytest.mark.parametrize("width", [60, 70, 80, 120])
def test_a_record_wrapped_at_the_terminal_width_is_one_line_again(width: int) -> None:
    data = _wrapped(_RECORD, width) + b"next\n"
    assert logs.wrap_width(data) == width
    lines = logs.unwrap(data).split(b"\n")
    assert lines[0].decode() == _RECORD
    assert len(lines) == len(data.split(b"\n"))  # the newlines removed come back, as blanks
    assert lines[lines.index(b"next")] == b"next"
    assert lines.index(b"next") == data.split(b"\n").index(b"next")
    assert _lines(data) == logs.unwrap(data)  # and the reader does it


def test_a_terminal_narrower_than_60_columns_is_not_unwrapped() -> None:
    data = _wrapped(_RECORD * 2, 59)
    assert logs.wrap_width(data) is None and logs.unwrap(data) == data


def test_a_wrap_is_found_in_characters_not_bytes() -> None:
    record = "é" * 30 + _RECORD
    data = _wrapped(record, 70)
    assert logs.wrap_width(data) == 70
    assert logs.unwrap(data).split(b"\n")[0].decode() == record


def test_a_wrap_needs_a_word_or_number_cut_in_two() -> None:
    lines = [("word " * 20)[:69] + "." for _ in range(3)]  # 70 wide, cut after punctuation
    lines = [f"{i:02d}" + line[2:] for i, line in enumerate(lines)]
    data = ("\n".join(lines) + "\nend\n").encode()
    assert logs.wrap_width(data) is None


def test_lines_of_one_width_that_end_a_record_are_not_a_wrap() -> None:
    data = ("\n".join(f"{i:04d} " + "x" * 64 + "." for i in range(10)) + "\n").encode()
    assert logs.wrap_width(data) is None


def test_a_wrap_with_two_wider_lines_is_no_wrap() -> None:
    data = _wrapped(_RECORD, 70) + b"w" * 90 + b"\n" + b"v" * 91 + b"\n"
    assert logs.wrap_width(data) is None
    one = _wrapped(_RECORD, 70) + b"w" * 90 + b"\n"  # one glued progress bar is allowed
    assert logs.wrap_width(one) == 70


def test_a_width_most_long_lines_do_not_have_is_no_wrap() -> None:
    near = b"".join(b"%03d " % i + b"q" * (64 + i % 5) + b".\n" for i in range(12))
    assert logs.wrap_width(_wrapped(_RECORD, 70) + near) is None


def test_a_line_ending_in_padding_ends_its_record() -> None:
    data = _wrapped(_RECORD, 70)
    first, rest = data.split(b"\n", 1)
    padded = first[:-2] + b"  \n" + rest
    assert logs.wrap_width(padded) == 70
    assert logs.unwrap(padded).split(b"\n")[0] == first[:-2] + b"  "


def test_a_wrapped_record_at_the_end_keeps_its_line_count() -> None:
    data = _wrapped(_RECORD, 70)
    trail = data[: data.rindex(b"\n", 0, len(data) - 1) + 1]  # ends on a full-width line
    lines = trail.split(b"\n")[:-1]
    assert logs.unwrap(trail) == b"".join(lines) + b"\n" * len(lines)


@pytest.mark.parametrize(
    "a, b, same",
    [(b"a", b"b", True), (b"1", b"2", True), (b"a", b"1", False), (b".", b"a", False)],
)
def test_a_cut_word_or_number_is_two_letters_or_two_digits(a: bytes, b: bytes, same: bool) -> None:
    assert logs.same_class(a, b) is same


def test_columns_count_characters_not_bytes() -> None:
    assert logs.columns("naïve ünïcode".encode()) == 13
    assert logs.columns(b"") == 0


# --- stretches of a file -----------------------------------------------------------------------


def test_segments_cover_the_file_and_end_at_newlines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 100)
    data = b"".join(b"line %03d\n" % i for i in range(100))
    path = tmp_path / "job.log"
    path.write_bytes(data)
    with path.open("rb") as file:
        cuts = logs.segments(file, len(data))
    assert cuts[0][0] == 0 and cuts[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
    assert all(data[end - 1 : end] == b"\n" for _, end in cuts)
    assert len(cuts) == 9 or len(cuts) == 10


def test_a_small_file_is_one_segment(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(TEXT * 100)
    with path.open("rb") as file:
        assert logs.segments(file, len(TEXT) * 100) == [(0, len(TEXT) * 100)]
    with path.open("rb") as file:
        assert logs.segments(file, 0) == [(0, 0)]


def test_a_file_slice_reads_only_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"0123456789")
    with path.open("rb") as file:
        assert list(logs.streamed(file, 2, 6, 3)) and True
    with path.open("rb") as file:
        file.seek(2)
        part = logs.FileSlice(file, 6)
        into = bytearray(10)
        assert part.readinto(memoryview(into)) == 4 and into[:4] == b"2345"
        assert part.readinto(memoryview(into)) == 0


def test_an_empty_stretch_maps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(TEXT)
    with path.open("rb") as file:
        assert list(logs.mapped(file, 5, 5)) == []
    path.write_bytes(b"")  # not even of an empty file, which cannot be mapped
    with path.open("rb") as file:
        assert list(logs.mapped(file, 0, 0)) == []


@pytest.mark.parametrize(
    "start, end", [(0, 20_000), (5000, 20_000), (9000, 13_333), (12_288, 16_000)]
)
def test_a_mapped_stretch_is_the_stretch_streamed(tmp_path: Path, start: int, end: int) -> None:
    """Stretches that start past the map's page granularity included."""
    path = tmp_path / "job.log"
    path.write_bytes(b"".join(b"line %05d \x1b[1mbold\x1b[0m\r\n" % i for i in range(1000)))
    for size in (100, 4096, 1 << 20):
        with path.open("rb") as file:
            want = [bytes(b[:n]) for b, n in logs.streamed(file, start, end, size)]
        with path.open("rb") as file:
            got = [bytes(b[:n]) for b, n in logs.mapped(file, start, end, size)]
        assert got == want and b"".join(got), (start, end, size)


def test_a_stretch_past_the_end_of_the_file_is_a_read_error(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(TEXT)
    with path.open("rb") as file:
        with pytest.raises(OSError, match="^it was cut short while it was read$"):
            list(logs.mapped(file, 0, 1 << 20))


# --- streams -------------------------------------------------------------------------------


def test_prefixed_gives_the_head_then_the_rest_in_any_read_sizes() -> None:
    for sizes in ([1, 1, 1, 100], [2, 5, -1], [-1], [0, 3, -1], [3, -1]):
        stream = logs.Prefixed(b"abc", io.BytesIO(b"defgh"))  # type: ignore[arg-type]
        got = b"".join(stream.read(n) for n in sizes)
        assert got == b"abcdefgh"[: len(got)] and (-1 not in sizes or got == b"abcdefgh"), sizes
    stream = logs.Prefixed(b"abc", io.BytesIO(b"defgh"))  # type: ignore[arg-type]
    assert stream.read(0) == b"" and stream.read(5) == b"abcde" and stream.read(2) == b"fg"
    stream = logs.Prefixed(b"abc", io.BytesIO(b"defgh"))  # type: ignore[arg-type]
    assert stream.read(3) == b"abc" and stream.read(0) == b"" and stream.read() == b"defgh"


def test_transcoded_reads_utf16_as_utf8_in_any_read_sizes() -> None:
    text = "naïve\n€ 5\n" * 100
    for size in (1, 2, 7, 1 << 20, -1):
        stream = logs.Transcoded(io.BytesIO(text.encode("utf-16-le")), "utf-16-le")  # type: ignore[arg-type]
        parts = []
        while chunk := stream.read(size):
            parts.append(chunk)
            if size < 0:
                break
        assert b"".join(parts) == text.encode(), size
        assert all(len(p) <= size for p in parts) or size < 0


def test_transcoded_replaces_an_odd_byte_and_reads_a_lone_surrogate() -> None:
    bad = "a\n".encode("utf-16-le") + b"\x00\xd8" + "b\n".encode("utf-16-le") + b"x"
    out = logs.Transcoded(io.BytesIO(bad), "utf-16-le").read()  # type: ignore[arg-type]
    assert out == "a\n\ufffdb\n\ufffd".encode()  # the odd byte at the end too


def test_transcoding_reads_the_stream_a_mebibyte_at_a_time_and_no_more_than_asked() -> None:
    under = io.BytesIO(("x" * (2 << 20)).encode("utf-16-le"))
    stream = logs.Transcoded(under, "utf-16-le")  # type: ignore[arg-type]
    assert stream.read(0) == b"" and under.tell() == 0
    assert stream.read(512 << 10) == b"x" * (512 << 10)
    assert under.tell() == 1 << 20  # one read of 1 MiB gave exactly what was asked
    assert stream.read(0) == b"" and stream.read(1) == b"x"  # nothing held back is lost
    assert len(stream.read(-1)) == (2 << 20) - (512 << 10) - 1 and stream.read(0) == b""


def test_a_stream_reads_into_an_array() -> None:
    into = bytearray(4)
    stream = logs.Prefixed(b"ab", io.BytesIO(b"cdef"))  # type: ignore[arg-type]
    assert stream.readinto(memoryview(into)) == 4 and into == bytearray(b"abcd")
    assert stream.readinto(memoryview(into)) == 2 and into[:2] == b"ef"


def test_closing_a_stream_closes_what_it_reads() -> None:
    under = io.BytesIO(b"x")
    with logs.Prefixed(b"", under):  # type: ignore[arg-type]
        pass
    assert under.closed
    under = io.BytesIO(b"x")
    with logs.Transcoded(under, "utf-16"):  # type: ignore[arg-type]
        pass
    assert under.closed
    under, raw = io.BytesIO(b"x"), io.BytesIO(b"y")
    with logs.Capped(under, None, raw):  # type: ignore[arg-type]
        pass
    assert under.closed and raw.closed
    logs.Stream().close()  # nothing to release


# --- pipes that stay open ----------------------------------------------------------------------


def test_a_silent_open_pipe_ends_at_the_deadline_with_what_it_gave() -> None:
    read, write = os.pipe()
    os.write(write, b"line 1\n")
    pipe = logs.Waiting(read, time.monotonic() + 0.3, owned=True)
    started = time.monotonic()
    with pipe:
        assert pipe.read() == b"line 1\n"
    assert 0.2 < time.monotonic() - started < 5 and pipe.timed_out and pipe.fd == -1
    os.close(write)


def test_a_pipe_that_ends_is_read_to_its_end_without_a_timeout() -> None:
    read, write = os.pipe()
    os.write(write, b"a\nb\n")
    os.close(write)
    pipe = logs.Waiting(read, time.monotonic() + 30, owned=True)
    assert pipe.peek(1) == b"a\nb\n"[: len(pipe.peek(1))] and pipe.peek(3) == b"a\nb"
    assert pipe.read(2) == b"a\n"  # from what peek held
    assert pipe.read() == b"b\n" and pipe.read() == b""
    assert not pipe.timed_out and pipe.ended and pipe.tell() == 0
    assert pipe.fileno() == read
    pipe.close()
    pipe.close()  # twice is fine


def test_a_pipe_without_deadline_waits_for_its_writer() -> None:
    read, write = os.pipe()
    os.write(write, b"x" * 10)
    os.close(write)
    pipe = logs.Waiting(read, None, owned=False)
    into = bytearray(4)
    assert pipe.readinto(memoryview(into)) == 4
    assert pipe.read(-1) == b"x" * 6 and not pipe.timed_out
    pipe.close()
    os.close(read)  # not owned: still open


def test_a_pipe_past_its_deadline_reads_nothing_more() -> None:
    read, write = os.pipe()
    os.write(write, b"late\n")
    pipe = logs.Waiting(read, time.monotonic() - 1, owned=True)
    assert pipe.peek(4) == b"" and pipe.read() == b"" and pipe.timed_out
    pipe.close()
    os.close(write)


def test_a_pipe_read_returns_what_is_ready_without_waiting_for_more() -> None:
    read, write = os.pipe()
    os.write(write, b"ready\n")
    pipe = logs.Waiting(read, time.monotonic() + 5, owned=True)
    started = time.monotonic()
    into = bytearray(100)
    assert pipe.readinto(memoryview(into)) == 6 and into[:6] == b"ready\n"
    os.write(write, b"x")
    assert pipe.peek() == b"x"  # one byte is enough
    assert time.monotonic() - started < 1 and pipe.timed_out is False
    pipe.close()
    os.close(write)


def test_a_peek_past_the_end_gives_what_there_was() -> None:
    read, write = os.pipe()
    os.write(write, b"abc")
    os.close(write)
    pipe = logs.Waiting(read, None, owned=True)
    assert pipe.peek(10) == b"abc" and pipe.ended
    pipe.close()


def test_a_pipe_that_gives_its_bytes_in_pieces_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first read waits; the pieces ready after it are taken at once, every byte counted."""
    pieces = [b"abc", b"d", b"ef", b""]
    read, write = os.pipe()
    os.write(write, b"!")  # keeps the pipe readable for select

    def readv(fd: int, buffers: list[memoryview]) -> int:
        piece = pieces.pop(0)
        buffers[0][: len(piece)] = piece
        return len(piece)

    monkeypatch.setattr(logs.os, "readv", readv)
    pipe = logs.Waiting(read, None, owned=False)
    into = bytearray(100)
    assert pipe.readinto(memoryview(into)) == 6 and into[:6] == b"abcdef"
    assert pipe.ended and pipe.readinto(memoryview(into)) == 0
    os.close(read)
    os.close(write)


def test_a_read_woken_for_nothing_waits_again(monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    os.write(write, b"late\n")
    os.close(write)
    real, calls = os.readv, []

    def spurious(fd: int, buffers: list[memoryview]) -> int:
        calls.append(fd)
        if len(calls) == 1:
            raise BlockingIOError
        return real(fd, buffers)

    monkeypatch.setattr(logs.os, "readv", spurious)
    pipe = logs.Waiting(read, time.monotonic() + 5, owned=True)
    assert pipe.read() == b"late\n" and not pipe.timed_out
    pipe.close()


@pytest.mark.parametrize(
    "left, timeout, timed_out",
    [
        (-1.0, None, True),  # a blocking read past the deadline: the input ends there
        (0.0, None, True),
        (-1.0, 0, False),  # a look for more, past it: nothing said yet
        (0.0, 0, False),
    ],
)
def test_no_read_waits_past_the_deadline(
    monkeypatch: pytest.MonkeyPatch, left: float, timeout: float | None, timed_out: bool
) -> None:
    read, write = os.pipe()
    os.write(write, b"ready")  # even with bytes ready
    monkeypatch.setattr(logs.time, "monotonic", lambda: 100.0)
    pipe = logs.Waiting(read, 100.0 + left, owned=True)
    assert pipe._wait(timeout) is False and pipe.timed_out is timed_out  # noqa: SLF001
    pipe.close()
    os.close(write)


def test_cutting_a_file_into_stretches_reads_a_block_per_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded reading: each cut looks for the next newline in one 64 KiB block, never reading
    the file to its end (it may be tens of gigabytes)."""
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 100_000)
    data = b"".join(b"line %06d\n" % i for i in range(100_000))  # 1.2 MB
    path = tmp_path / "job.log"
    path.write_bytes(data)
    read: list[int] = []

    class Counting(io.FileIO):
        def read(self, size: int | None = -1) -> bytes:
            got = super().read(size)
            read.append(len(got))
            return got

    with Counting(str(path)) as file:
        cuts = logs.segments(file, len(data))  # type: ignore[arg-type]
    assert len(cuts) == 12 and max(read) == 1 << 16 and len(read) == 11


#: Pieces of damaged text: CRLF and lone CRs, colour codes (one cut short), long runs, UTF-8.
_PIECES = [
    b"step 1 loss 2.5\n",
    b"\r\n",
    b"\r",
    b"\n",
    b"\x1b[31m",
    b"\x1b[0m",
    b"\x1b",
    b"[",
    b"x" * 57,
    b"caf\xc3\xa9 ",
    b"[rank3]: RuntimeError: boom",
    _wrapped(_RECORD, 70),
]


@pytest.mark.parametrize("seed", range(30))
def test_a_memory_map_cuts_lines_as_the_reads_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """`mapped` (a pool worker's reader) gives the buffers `streamed` reads of the same stretch:
    carries, long lines cut, damaged text, stretches past the page granularity, an end without
    a newline."""
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 48)
    rng = random.Random(seed)
    data = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 900)))
    path = tmp_path / "job.log"
    path.write_bytes(data)
    start = rng.randrange(len(data))
    end = rng.randrange(start, len(data) + 1)
    for lo, hi in ((0, len(data)), (start, len(data)), (start, end), (4097, len(data))):
        for size in (1, 3, 16, 47, 48, 100, 4096, 1 << 20):
            with path.open("rb") as file:
                want = [bytes(b[:n]) for b, n in logs.streamed(file, lo, hi, size)]
            with path.open("rb") as file:
                got = [bytes(b[:n]) for b, n in logs.mapped(file, lo, hi, size)]
            assert got == want, (seed, lo, hi, size)


def test_a_stretch_is_read_in_buffers_of_the_size_asked(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"".join(b"line %03d\n" % i for i in range(100)))
    with path.open("rb") as file:
        got = [bytes(b[:n]) for b, n in logs.streamed(file, 90, 495, 30)]
    assert got[0] == b"line 010\nline 011\nline 012\n"
    assert b"".join(got) == path.read_bytes()[90:495]


@pytest.mark.parametrize(
    "data, segment",
    [
        (b"a\n" * 10 + b"b" * 100 + b"\n", 60),  # the search for a newline ends at the end
        (b"a\n" * 10 + b"b" * 100, 60),  # no newline at all after the cut
        (b"a\n" + b"b" * 100_000 + b"\n" + b"c\n" * 10, 30_000),  # a line longer than a block
        (b"c\n" * 50_000, 20_000),
    ],
    ids=["last line", "no newline", "a long line", "many lines"],
)
def test_segments_end_at_a_newline_or_the_end_and_none_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, segment: int
) -> None:
    monkeypatch.setattr(logs, "SEGMENT_BYTES", segment)
    path = tmp_path / "job.log"
    path.write_bytes(data)
    with path.open("rb") as file:
        cuts = logs.segments(file, len(data))
    assert cuts[0][0] == 0 and cuts[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
    assert all(start < end for start, end in cuts)
    assert all(data[end - 1 : end] == b"\n" for _, end in cuts[:-1])


def test_opening_a_pipe_waits_only_for_the_bytes_that_tell_gzip_and_utf16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four bytes say what the input is: a pipe that has given them is open at once, though
    its writer is still there and silent."""
    read, write = os.pipe()
    os.write(write, b"abc\n")
    with os.fdopen(read, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
        started = time.monotonic()
        stream, raw = logs.open_log("-", time.monotonic() + 2)
        assert time.monotonic() - started < 1 and not raw.timed_out  # type: ignore[attr-defined]
    os.close(write)


def _w(text: str) -> bytes:
    return text.encode() + b"\n"


@pytest.mark.parametrize(
    "data, width",
    [
        # a line of 63 columns (9/10 of 70) is not near the width; two of the three 70s cut words
        (
            _wrapped(_RECORD[:210], 70) + b"".join(_w(f"{i} " + "q" * 60 + ".") for i in range(4)),
            70,
        ),
        # as many lines near the width as twice those of it: still a wrap
        (
            _wrapped(_RECORD[:140] + " fin", 70) + _w("p" * 64 + "  end") + _w("r" * 65 + "  end"),
            70,
        ),
        # many short lines besides
        (_wrapped(_RECORD[:210], 70) + b"ok\n" * 20, 70),
        # the only cut word: a line ending in a one-letter word, the last pair of lines
        (_w("y" * 69 + ".") + _w("y" * 68 + " a") + _w("bc"), 70),
        (_w("y" * 68 + " a") + _w("bcd" + "z" * 66 + ".") + _w(". end"), 70),
        # widths in characters, not bytes
        (_wrapped("abcdé " * 60, 70), 70),
    ],
    ids=["63 columns", "twice", "short lines", "last pair", "one-letter end", "characters"],
)
def test_the_wrap_width_is_found_at_its_edges(data: bytes, width: int) -> None:
    assert logs.wrap_width(data) == width


def test_a_buffer_with_nothing_to_clean_is_not_copied_though_the_next_line_needs_it() -> None:
    got = [(type(b), bytes(b[:n])) for b, n in logs.buffers(io.BytesIO(b"ab\ncd\re\x1b[0m"), 16)]
    assert got == [(bytearray, b"ab\n"), (bytes, b"cd e\n")]


def test_a_huge_line_that_needs_cleaning_keeps_its_first_byte(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 64)
    data = b"\x1b[1m" + b"x" * 200 + b"\r\nend\n"
    assert _lines(data, 16) == b"x" * 200 + b"\nend\n"


def test_newlines_in_a_view_count_one_at_its_first_byte() -> None:
    assert logs.newlines(memoryview(b"\nab\n"), 0, 4) == 2
    assert logs.newlines(memoryview(b"\nab\n"), 1, 4) == 1
