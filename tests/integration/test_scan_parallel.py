"""A large plain log scanned in stretches by several processes gives exactly the answer of one
pass; torchrun's Root Cause bookkeeping stays linear and under the deadline; the launcher's rank
list names the ranks of a combined log that printed no evidence."""

from __future__ import annotations

import faulthandler
import io
import json
import os
import random
import time
from pathlib import Path

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.diagnosis import logs, presence, rank, scan

ROOT_BLOCK = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n  <NO_OTHER_FAILURES>\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n  time      : 2024-05-01_10:00:00\n  host      : node7\n"
    "  rank      : {rank} (local_rank: {rank})\n  exitcode  : 1 (pid: 4242)\n"
)


@pytest.fixture(scope="module")
def matcher() -> scan.Matcher:
    return scan.Matcher(gathered_entries()[0].entries)


def _log(tmp_path: Path) -> Path:
    healthy = "".join(
        f"2024-05-01 10:00:{i % 60:02d},123 step {i} loss 2.{i % 97:02d}\n" for i in range(3000)
    )
    failure = (ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log").read_text()
    text = (
        healthy + "[rank1]: RuntimeError: CUDA error: an illegal memory access was "
        "encountered\n" + healthy + ROOT_BLOCK.format(rank=3) + healthy + failure + healthy
    )
    path = tmp_path / "combined.log"
    path.write_text(text)
    return path


@pytest.mark.parametrize("segment", [4096, 50_000, 1 << 30])
def test_stretches_in_two_processes_equal_one_pass(tmp_path, matcher, monkeypatch, segment) -> None:
    path = _log(tmp_path)
    with path.open("rb") as stream:
        one = scan.scan(stream, "combined.log", matcher)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", segment)
    with path.open("rb") as stream:
        cuts = logs.segments(stream, path.stat().st_size)
    assert cuts[0][0] == 0 and cuts[-1][1] == path.stat().st_size
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
    data = path.read_bytes()
    assert all(data[end - 1 : end] == b"\n" for _, end in cuts)
    many = scan.scan_file(str(path), matcher, jobs=2, name="combined.log")
    assert many == one
    assert one.root_ranks and one.root_ranks[0][1] == 3 and one.evidence
    if segment == 4096:
        assert len(cuts) > 10  # the Root Cause block and evidence lie across cuts


def test_one_enormous_line_is_cut_without_reading_it_twice(tmp_path) -> None:
    path = tmp_path / "one-line.log"
    path.write_bytes(b"x" * 300_000 + b"\n" + b"y" * 10)

    class Counting(io.FileIO):
        read_bytes = 0

        def read(self, size: int = -1) -> bytes:
            data = super().read(size)
            Counting.read_bytes += len(data)
            return data

    with Counting(path, "r") as raw:
        old = logs.SEGMENT_BYTES
        logs.SEGMENT_BYTES = 1000
        try:
            cuts = logs.segments(raw, path.stat().st_size)  # type: ignore[arg-type]
        finally:
            logs.SEGMENT_BYTES = old
    assert cuts == [(0, 300_001), (300_001, 300_011)]
    assert Counting.read_bytes < 2 * path.stat().st_size


def test_repeated_root_cause_blocks_stay_linear(tmp_path, matcher) -> None:
    """#18: 3.3 MB of Root Cause blocks ran 227 s past `--deadline 5` (quadratic pairing)."""
    block = ROOT_BLOCK.format(rank=5)
    data = (block * (3_300_000 // len(block))).encode()
    start = time.monotonic()
    found = scan.scan(io.BytesIO(data), "job.log", matcher, deadline=time.monotonic() + 60)
    assert time.monotonic() - start < 30  # linear: well under a second on an idle machine
    assert found.root_ranks[0] == (8, 5) and len(found.root_ranks) <= scan.EVIDENCE_CAP


def test_the_deadline_message_says_how_long_it_ran(tmp_path, cli, monkeypatch) -> None:
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    monkeypatch.setattr(scan.time, "monotonic", iter([0.0] + [100.0] * 50).__next__)
    run = cli("diagnose", "--deadline", "5", str(log))
    assert run.code == 2
    assert "stopped after 100.0 s (--deadline 5)" in run.err


def test_launcher_ranks_name_the_silent_ones(matcher) -> None:
    text = (
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for "
        "workers. Result:\n  restart_count=0\n  group_rank=0\n  group_world_size=1\n"
        "  local_ranks=[0, 1, 2, 3]\n  role_ranks=[0, 1, 2, 3]\n  global_ranks=[0, 1, 2, 3]\n"
        "  role_world_sizes=[4, 4, 4, 4]\n  global_world_sizes=[4, 4, 4, 4]\n"
        "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    result = rank.diagnose([scan.scan(io.BytesIO(text.encode()), "job.log", matcher)])
    assert result.matches[0].id == "cuda-illegal-memory-access"
    assert result.silent_ranks == (0, 3)
    # With no rank on any evidence line, nothing is said about the others.
    bare = text.replace("[rank1]: ", "").replace("[rank2]: ", "")
    result = rank.diagnose([scan.scan(io.BytesIO(bare.encode()), "job.log", matcher)])
    assert result.silent_ranks == ()


def test_a_rank_list_of_huge_numbers_is_no_crash(matcher) -> None:
    text = (
        "global_ranks=[" + "7" * 5000 + ", 3 4]\n[rank3]: RuntimeError: CUDA error: an "
        "illegal memory access was encountered\n"
    )
    result = rank.diagnose([scan.scan(io.BytesIO(text.encode()), "job.log", matcher)])
    assert result.silent_ranks == (4,)


def _model_buffers(stream: io.BytesIO, size: int) -> list[bytes]:
    """The buffers as the read-and-concatenate loop that the reused array replaced cut them."""
    out, carry = [], b""
    while chunk := stream.read(size):
        data = carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) < logs.MAX_LINE_BYTES:
                carry = data
                continue
            out.append(logs.unwrap(logs.normalise(data)))
            carry = b""
            continue
        carry = data[cut + 1 :]
        out.append(logs.unwrap(logs.normalise(data[: cut + 1])))
    if carry:
        out.append(logs.unwrap(logs.normalise(carry) + b"\n"))
    return out


_RECORD = (
    "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] ProcessGroupNCCL's "
    "watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
    "collectives."
)
#: Pieces of damaged log text: CRLF and lone CR, colour codes (one cut short), long lines, a
#: record hard-wrapped at 70 columns, a multi-byte character, no newline at all.
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
    ("\n".join(_RECORD[i : i + 70] for i in range(0, len(_RECORD), 70)) + "\n").encode(),
]


@pytest.mark.parametrize("seed", range(40))
def test_reused_buffer_cuts_lines_as_the_concatenating_loop_did(monkeypatch, seed) -> None:
    """Buffer edges: carries, CRLF and colour codes split across reads, cut long lines, the last
    line without a newline; each buffer is exactly what the old loop yielded."""
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 48)  # the long-line cut, at small sizes
    rng = random.Random(seed)
    data = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 120)))
    for size in (1, 2, 3, 5, 16, 47, 48, 100, 333, 4096):
        got = [bytes(buf[:length]) for buf, length in logs.buffers(io.BytesIO(data), size)]
        assert got == _model_buffers(io.BytesIO(data), size), (seed, size)


_FAILURE = b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
_HEALTHY = b"".join(
    b"2024-05-01 10:00:%02d,123 step %d loss 2.5\n" % (i % 60, i) for i in range(120)
)


def test_a_match_straddling_a_read_boundary_is_found_once(matcher) -> None:
    """Reads that end before, inside and just short of the end of the failure line."""
    data = _HEALTHY + _FAILURE + _HEALTHY
    whole = scan.scan(io.BytesIO(data), "job.log", matcher)
    assert whole.evidence and {e.line for e in whole.evidence} == {121}
    start = len(_HEALTHY)
    for size in (start - 3, start + 1, start + 20, start + len(_FAILURE) - 1, 64):
        assert scan.scan(io.BytesIO(data), "job.log", matcher, buffer_bytes=size) == whole


def test_a_crlf_split_across_reads_is_one_line_break(matcher) -> None:
    lf = _HEALTHY + _FAILURE + _HEALTHY
    crlf = lf.replace(b"\n", b"\r\n")
    want = scan.scan(io.BytesIO(lf), "job.log", matcher)
    cr_at = crlf.index(_FAILURE.replace(b"\n", b"\r\n")) + len(_FAILURE)  # a read ends on its \r
    for size in (cr_at, cr_at + 1, 7, 100):
        got = scan.scan(io.BytesIO(crlf), "job.log", matcher, buffer_bytes=size)
        assert got == want, size  # bytes too: those of the normalised text


def test_bytes_left_in_the_reused_buffer_by_a_longer_read_are_not_scanned(matcher) -> None:
    """A short last read fills only the front of the array: the failure further on in it, from
    the read before, must not be found a second time."""
    first = (_FAILURE + _HEALTHY)[:4000]
    first = first[: first.rindex(b"\n") + 1]
    data = first + b"ok\n"
    found = scan.scan(io.BytesIO(data), "job.log", matcher, buffer_bytes=len(first))
    assert {e.line for e in found.evidence} == {1}
    assert all(n == 1 for n in found.counts.values()) and found.lines == data.count(b"\n")


def test_segments_are_of_one_length(tmp_path, monkeypatch) -> None:
    """Both cores stay busy to the end: no short stretch left over for one of them."""
    path = tmp_path / "job.log"
    line = len(b"step 000000 loss 2.5 lr 3e-4 grad_norm 0.9\n")
    path.write_bytes(
        b"".join(b"step %06d loss 2.5 lr 3e-4 grad_norm 0.9\n" % i for i in range(10_000))
    )
    size = path.stat().st_size
    monkeypatch.setattr(logs, "SEGMENT_BYTES", size // 3 + 1000)  # a third stretch, short
    with path.open("rb") as stream:
        cuts = logs.segments(stream, size)
    lengths = [end - start for start, end in cuts]
    assert len(cuts) == 3 and max(lengths) - min(lengths) < 2 * line
    assert max(lengths) <= logs.SEGMENT_BYTES


@pytest.mark.parametrize("size", [0, 1, 4095, 256 << 10, (256 << 10) + 3, 3 << 20])
def test_newlines_are_counted_in_a_view_as_in_bytes(size) -> None:
    rng = random.Random(size)
    data = bytes(rng.choice(b"ab\n\r") for _ in range(size + 7))
    for lo, hi in ((0, size), (7, size + 7), (3, max(3, size // 2))):
        want = data.count(b"\n", lo, hi)
        assert logs.newlines(memoryview(data), lo, hi) == want
        assert logs.newlines(bytearray(data), lo, hi) == want


def test_a_log_cut_short_while_the_workers_read_it_is_a_read_error(
    tmp_path, matcher, monkeypatch
) -> None:
    """Truncating a mapped file makes reading its lost pages raise SIGBUS, which kills the worker;
    a stretch mapped afterwards is refused. Both end as an OSError naming what happened, never a
    hang of the pool or a traceback."""
    path = tmp_path / "job.log"
    path.write_bytes(_HEALTHY * 400)  # 400 KB
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 64 << 10)
    real = logs.mapped

    def cut_short(file, start, end, size=logs.BUFFER_BYTES):  # noqa: ANN001, ANN202
        faulthandler.disable()  # pytest's, inherited by the worker: no dump of its SIGBUS
        bufs = real(file, start, end, 4096)
        first = next(bufs)  # the stretch is mapped now
        os.truncate(path, 0)
        yield first
        yield from bufs

    monkeypatch.setattr(scan, "mapped", cut_short)
    started = time.monotonic()
    with pytest.raises(OSError, match="cut short while it was read"):
        scan.scan_file(str(path), matcher, jobs=2)
    assert time.monotonic() - started < 30


def test_the_fast_answer_in_two_processes_equals_one_pass_of_the_set(
    tmp_path, matcher, monkeypatch
) -> None:
    """The forked workers use the database the CLI compiled (`Matcher.accelerate`), and the
    stretches holding a byte over 0x7F (a progress bar's blocks) are answered by the set."""
    path = _log(tmp_path)
    bar = "".join(
        f"train {i}%|\u2588\u2588\u258c | {i}/100 [00:0{i % 10}<00:00]\n" for i in range(100)
    )
    path.write_text(bar + path.read_text() + bar)
    with path.open("rb") as stream:
        one = scan.scan(stream, "combined.log", matcher)
    fast = scan.Matcher(gathered_entries()[0].entries)
    fast.accelerate(None)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 4096)
    assert scan.scan_file(str(path), fast, jobs=2, name="combined.log") == one
    assert one.evidence and one.root_ranks


def test_the_cli_keeps_the_compiled_database_for_a_large_log(tmp_path, cli, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("NANOPEDIA_CACHE", str(cache))
    path = tmp_path / "big.log"
    failure = (ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log").read_bytes()
    line = b"2024-05-01 10:00:00,123 step 1 loss 2.31 lr 3e-4\n"
    with path.open("wb") as out:
        out.write(line * (presence.ACCELERATE_BYTES // len(line) + 1) + failure)
    first = cli("diagnose", "--json", str(path))
    assert first.code == 0 and len(list(cache.glob("hyperscan-*.db"))) == 1
    stored = next(cache.glob("hyperscan-*.db")).stat().st_mtime_ns
    again = cli("diagnose", "--json", str(path))
    assert again.out == first.out
    assert json.loads(first.out)["matches"][0]["id"] == "fsdp-mixed-precision-error"
    assert next(cache.glob("hyperscan-*.db")).stat().st_mtime_ns == stored
