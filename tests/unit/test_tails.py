"""The wrapper's bounded tails: per stream, per rank, in arrival order."""

from __future__ import annotations

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
