"""The wrapper's bounded tails: per stream, per rank, in arrival order."""

from __future__ import annotations

import random
import re

import pytest

from nanopedia.diagnosis.tails import LINE_BYTES, Tails, _Kept


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


def _kinds(*feeds: bytes, **limits: int) -> dict[int | None, bytes]:
    """What each kind of line kept (None: the stream's own), fed as given."""
    out = Tails(**limits).streams["stdout"]
    for data in feeds:
        out.feed(data)
    out.close()
    kept: dict[int | None, bytes] = {}
    if out.plain.pieces:
        kept[None] = b"".join(p for _, p in out.plain.pieces)
    kept.update({r: b"".join(p for _, p in k.pieces) for r, k in out.ranks.items()})
    return kept


@pytest.mark.parametrize(
    "block, kinds",
    [
        (b"step 1\nstep 2\n", {None: b"step 1\nstep 2\n"}),
        (b"[INFO] a\n[x] b\n", {None: b"[INFO] a\n[x] b\n"}),  # brackets, no prefix
        (b"a ]: b\n", {None: b"a ]: b\n"}),  # `]:` that starts no prefix
        (b"[rank1]: a\n[rank1]: b\n", {1: b"[rank1]: a\n[rank1]: b\n"}),
        (b"[default3]:a\n[default3]:b\n", {3: b"[default3]:a\n[default3]:b\n"}),
        (b"  [rank2]: a\n  [rank2]: b\n", {2: b"  [rank2]: a\n  [rank2]: b\n"}),
        (b"[rank1]: a\n", {1: b"[rank1]: a\n"}),
        (b"[rank1]: a\n[rank2]: b\n", {1: b"[rank1]: a\n", 2: b"[rank2]: b\n"}),
        (b"[rank1]: a\n[rank12]: b\n", {1: b"[rank1]: a\n", 12: b"[rank12]: b\n"}),
        (
            b"[rank1]: a\n[rank1]:b\n[rank2]: c\n",
            {1: b"[rank1]: a\n[rank1]:b\n", 2: b"[rank2]: c\n"},
        ),
        (b"[rank1]: a\nplain\n", {None: b"plain\n", 1: b"[rank1]: a\n"}),
        (b"plain\n[rank1]: a\n", {None: b"plain\n", 1: b"[rank1]: a\n"}),
        (b"[rank1]: a\n\n[rank1]: b\n", {None: b"\n", 1: b"[rank1]: a\n[rank1]: b\n"}),
        (b"[rank1]: a\nx [rank1]: b\n", {None: b"x [rank1]: b\n", 1: b"[rank1]: a\n"}),
        (b"[rank1]: a\r\n[rank1]: b\r\n", {1: b"[rank1]: a\r\n[rank1]: b\r\n"}),
        (b"[rank1]: a\r[rank2]: b\n", {1: b"[rank1]: a\r", 2: b"[rank2]: b\n"}),  # a CR redraw
        (
            b"[rank1]: a\r[rank1]: b\n[rank2]: c\n",
            {1: b"[rank1]: a\r[rank1]: b\n", 2: b"[rank2]: c\n"},
        ),
        (b"\n[rank1]: a\n", {None: b"\n", 1: b"[rank1]: a\n"}),
        (b"[rank1]: a\n1 b\n1 c\n", {None: b"1 b\n1 c\n", 1: b"[rank1]: a\n"}),
        (
            b"[rank1]: a\r[rank2]: b\n[rank1]: c\n",
            {1: b"[rank1]: a\r[rank1]: c\n", 2: b"[rank2]: b\n"},
        ),
        (b"[rank1]:\n[rank1]: b\n[rank2]: c\n", {1: b"[rank1]:\n[rank1]: b\n", 2: b"[rank2]: c\n"}),
    ],
)
def test_each_line_goes_to_the_rank_its_prefix_names(
    block: bytes, kinds: dict[int | None, bytes]
) -> None:
    assert _kinds(block) == kinds
    assert _kinds(*(block[i : i + 1] for i in range(len(block)))) == kinds  # byte by byte


def test_a_rank_past_the_limit_of_ranks_counts_as_the_streams_own() -> None:
    kinds = _kinds(b"[rank1]: a\n[rank2]: b\n[rank3]: c\n[rank1]: d\n", max_ranks=2)
    assert kinds == {None: b"[rank3]: c\n", 1: b"[rank1]: a\n[rank1]: d\n", 2: b"[rank2]: b\n"}
    assert _kinds(b"[rank3]: x\n[rank3]: y\n", max_ranks=0) == {None: b"[rank3]: x\n[rank3]: y\n"}


def test_kept_lines_come_out_in_the_order_they_arrived_across_streams() -> None:
    tails = Tails()
    out, err = tails.streams["stdout"], tails.streams["stderr"]
    out.feed(b"step 1\n")
    err.feed(b"[rank1]: warn\n")
    out.feed(b"[rank0]: a\nplain 2\n[rank0]: b\n")
    err.feed(b"no newline yet")
    out.feed(b"step 3\n")
    assert tails.merged() == (
        b"step 1\n[rank1]: warn\n[rank0]: a\nplain 2\n[rank0]: b\nstep 3\nno newline yet"
    )


@pytest.mark.parametrize(
    "pieces, limit, kept",
    [
        ([b"aa\n", b"bb\n", b"cc\n"], 6, [b"bb\n", b"cc\n"]),  # the newer hold `limit`
        ([b"aa\n", b"bb\n", b"cc\n"], 7, [b"aa\n", b"bb\n", b"cc\n"]),
        ([b"aa\n", b"bb\n", b"cc\n"], 3, [b"cc\n"]),
        ([b"aa\nbb\ncc\n"], 6, [b"bb\ncc\n"]),  # one piece: its lines that hold the last 6
        ([b"aa\nbb\ncc\n"], 5, [b"bb\ncc\n"]),
        ([b"aa\nbb\ncc\n"], 9, [b"aa\nbb\ncc\n"]),
        ([b"aa\nbb\ncc\n"], 8, [b"aa\nbb\ncc\n"]),
        ([b"aa\nbb\ncc\n"], 3, [b"cc\n"]),
        ([b"a\nbbbbbbbbbb\n"], 4, [b"bbbbbbbbbb\n"]),  # a line longer than the limit stays whole
        ([b"\nbbbb\n"], 4, [b"bbbb\n"]),
        ([b"bbbb\n"], 4, [b"bbbb\n"]),
    ],
)
def test_each_kind_keeps_the_lines_that_hold_its_last_bytes(
    pieces: list[bytes], limit: int, kept: list[bytes]
) -> None:
    tail = _Kept(limit)
    for seq, data in enumerate(pieces):
        tail.add(seq, data)
    assert [p for _, p in tail.pieces] == kept
    assert tail.size == sum(map(len, kept))


def test_a_line_without_end_is_kept_whole_until_it_grows_past_the_line_limit() -> None:
    out = Tails().streams["stdout"]
    out.feed(b"p" * LINE_BYTES)
    assert not out.plain.pieces and len(out._pending) == LINE_BYTES  # noqa: SLF001
    out.feed(b"p")
    assert [p for _, p in out.plain.pieces] == [b"p" * (LINE_BYTES + 1)]
    assert not out._pending  # noqa: SLF001
    out.feed(b"q\n")
    assert [p for _, p in out.plain.pieces][-1] == b"q\n"


def test_closing_twice_keeps_the_last_line_once() -> None:
    tails = Tails()
    tails.streams["stdout"].feed(b"a\nlast")
    assert tails.merged() == b"a\nlast"
    assert tails.merged() == b"a\nlast"
    assert tails.streams["stdout"].total == 6


def test_a_tail_has_the_streams_it_is_given() -> None:
    tails = Tails(("out",), stream_bytes=10, rank_bytes=5, max_ranks=1)
    out = tails.streams["out"]
    assert list(tails.streams) == ["out"] and out.name == "out"
    assert (out.plain.limit, out._rank_bytes, out._max_ranks) == (10, 5, 1)  # noqa: SLF001
    default = Tails().streams["stderr"]
    assert default.plain.limit == 1 << 20 and default._rank_bytes == 64 << 10  # noqa: SLF001
    assert default._max_ranks == 1024  # noqa: SLF001
