"""The wrapper's bounded tails: per stream, per rank, in arrival order."""

from __future__ import annotations

import random
import re

import pytest

from nanopedia.diagnosis.tails import LINE_BYTES, Tails


def test_a_rank_that_failed_early_survives_the_others_chatter() -> None:
    tails = Tails(stream_bytes=4096, rank_bytes=1024)
    err = tails.streams["stderr"]
    err.feed(b"[rank3]: RuntimeError: CUDA error: an illegal memory")
    err.feed(b" access was encountered\n")  # one line, cut between two reads
    for i in range(100_000):
        err.feed(b"[rank0]: step %d waiting\n" % i)
        tails.streams["stdout"].feed(b"step %d loss 1.0\n" % i)
    kept = tails.merged()
    assert b"[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n" in kept
    assert len(kept) < 4096 + 2 * 1024 + 200
    assert kept.index(b"[rank3]") < kept.index(b"[rank0]")  # the order they came in
    assert kept.endswith(b"[rank0]: step 99999 waiting\n") or kept.endswith(b"loss 1.0\n")


def test_a_line_without_end_is_bounded_and_kept() -> None:
    tails = Tails(stream_bytes=1 << 20)
    out = tails.streams["stdout"]
    for _ in range(100):
        out.feed(b"\r 45%|#####     | 450/1000" * 100)
    assert len(out._pending) <= LINE_BYTES + 2600  # noqa: SLF001
    out.feed(b"\nKilled")
    assert tails.merged().endswith(b"450/1000\nKilled")
    assert out.total == 100 * 2600 + 7


def _stream(seed: int, lines: int) -> list[bytes]:
    """Lines as a job prints them, each unique: runs of one rank's lines (one rank printing),
    ranks taking turns, lines of no rank, `[INFO]` brackets, indented prefixes."""
    rng = random.Random(seed)
    out: list[bytes] = []
    while len(out) < lines:
        kind = rng.choice(["run", "turns", "plain", "info", "indented"])
        for _ in range(rng.randint(1, 400)):
            n = len(out)
            out.append(
                {
                    "run": b"[rank3]:step %d loss 0.5\n" % n,
                    "turns": b"[default%d]:step %d\n" % (n % 5, n),
                    "plain": b"step %d loss 0.5\n" % n,
                    "info": b"[INFO] step %d [x]: y\n" % n,
                    "indented": b"  [rank7]: at %d\n" % n,
                }[kind]
            )
    return out


def _rank(line: bytes) -> int | None:
    m = re.match(rb"\s*\[[A-Za-z_]*?(\d{1,6})\]:", line)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("seed", range(6))
def test_each_rank_keeps_at_least_its_last_lines_in_arrival_order(seed: int) -> None:
    """Whatever the reads' sizes: each kind of line (each rank, and no rank) keeps at least its
    last `limit` bytes of whole lines and at most twice that, and the kept lines come out in
    the order they were printed."""
    lines = _stream(seed, 20_000)
    data = b"".join(lines)
    tails = Tails(stream_bytes=8192, rank_bytes=2048)
    out = tails.streams["stdout"]
    rng = random.Random(seed)
    at = 0
    while at < len(data):
        step = rng.choice([1, 7, 100, 4096, 65536, 1 << 20])
        out.feed(data[at : at + step])
        at += step
    kept = tails.merged().splitlines(keepends=True)
    order = {line: n for n, line in enumerate(lines)}
    assert [order[line] for line in kept] == sorted(order[line] for line in kept)
    for rank in {None, *(r for line in lines if (r := _rank(line)) is not None)}:
        limit = 8192 if rank is None else 2048
        theirs = [line for line in lines if _rank(line) == rank]
        ours = [line for line in kept if _rank(line) == rank]
        assert theirs[len(theirs) - len(ours) :] == ours  # a suffix of that kind's lines
        assert limit <= sum(map(len, ours)) <= 2 * limit or ours == theirs


def test_one_ranks_block_goes_to_that_rank_and_another_rank_in_it_is_not_lost() -> None:
    tails = Tails(stream_bytes=4096, rank_bytes=1024)
    out = tails.streams["stdout"]
    block = b"".join(b"[rank3]: step %d\n" % i for i in range(5000))
    out.feed(block + b"[rank1]: RuntimeError: boom\n")  # one read: rank 1's line last
    out.feed(b"".join(b"[rank3]: step %d\n" % i for i in range(5000)))
    out.feed(b"".join(b"chatter %d\n" % i for i in range(5000)))
    assert list(out.ranks) == [3, 1]
    kept = tails.merged()
    assert b"[rank1]: RuntimeError: boom\n" in kept
    rank3 = b"".join(piece for _, piece in out.ranks[3].pieces)
    assert rank3.startswith(b"[rank3]: step ") and rank3.endswith(b"[rank3]: step 4999\n")
    assert 1024 <= len(rank3) <= 2048
