"""The bounded tail of a command's output that `nanopedia run` keeps for its verdict.

The wrapper passes every byte through and keeps only the end: per stream, the last
`STREAM_BYTES` of the lines that name no rank, and per rank (a line that starts `[rank3]:` or
torchrun's `[default3]:`, `lines.PREFIX_RANK`) the last `RANK_BYTES` of that rank's lines, so a
rank that failed early is not pushed out by the ranks that kept printing. Every piece carries a
sequence number shared by the streams; `merged` gives the kept pieces in the order they arrived,
which is the order a terminal showed them. Memory is bounded: at most `MAX_RANKS` ranks, a line
of at most `LINE_BYTES` held while it is incomplete, and each deque trimmed as it grows.

The copying is paid for on every byte of a healthy run, so the common chunks take one step: a
chunk with no `]` (memchr; a search for `]:` itself costs ten times more) or no `]:` in it is kept
whole, and so is a chunk whose every line carries the same rank's prefix (one rank printing,
torchrun's `[default0]:` on all of rank 0's lines), found by counting. Only other chunks are
split into lines, and each run of lines of one kind is kept as one piece.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from nanopedia.diagnosis.lines import PREFIX_RANK

#: Bytes of output kept per stream from lines that name no rank.
STREAM_BYTES = 1 << 20
#: Bytes kept per rank from the lines its prefix names.
RANK_BYTES = 64 << 10
#: Ranks kept apart; the lines of further ranks count as lines that name none.
MAX_RANKS = 1024
#: An unfinished line longer than this (a progress bar redrawn with `\r`) is kept as it is.
LINE_BYTES = 64 << 10

_PREFIX = re.compile(PREFIX_RANK.pattern.encode("ascii"), re.ASCII)


@dataclass(slots=True)
class _Kept:
    """The last lines of one kind, in pieces: at least their last `limit` bytes (whole lines),
    less than about twice that (a piece of many lines is cut to the lines that hold its last
    `limit` bytes; older pieces go once the newer hold `limit`)."""

    limit: int
    pieces: deque[tuple[int, bytes]] = field(default_factory=deque)
    size: int = 0

    def add(self, seq: int, data: bytes) -> None:
        if len(data) > self.limit:  # the lines that hold its last `limit` bytes: all it keeps
            data = data[data.rfind(b"\n", 0, len(data) - self.limit) + 1 :]
        self.pieces.append((seq, data))
        self.size += len(data)
        while self.size - len(self.pieces[0][1]) >= self.limit:
            self.size -= len(self.pieces.popleft()[1])


class StreamTail:
    """The tail of one stream (`stdout`, `stderr`); `feed` it bytes as they are read."""

    def __init__(
        self,
        name: str,
        order: Iterator[int],
        stream_bytes: int = STREAM_BYTES,
        rank_bytes: int = RANK_BYTES,
        max_ranks: int = MAX_RANKS,
    ) -> None:
        self.name = name
        self._order = order
        self._pending = bytearray()
        self.plain = _Kept(stream_bytes)
        self.ranks: dict[int, _Kept] = {}
        self._rank_bytes = rank_bytes
        self._max_ranks = max_ranks
        self.total = 0
        """Bytes fed."""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        cut = data.rfind(b"\n") + 1
        if not cut:
            self._pending += data
            if len(self._pending) > LINE_BYTES:
                self.close()
            return
        block = bytes(self._pending) + data[:cut] if self._pending else data[:cut]
        self._pending[:] = data[cut:]
        if b"]" not in block or b"]:" not in block:
            self.plain.add(next(self._order), block)
            return
        head = _PREFIX.match(block)
        if head and b"\n" not in head.group(0):
            prefix = head.group(0)  # the same on every line (the second line's, first)?
            if (
                block.startswith(prefix, block.find(b"\n") + 1)
                and b"\r" not in block
                and block.count(b"\n" + prefix) == block.count(b"\n") - 1
            ):
                self._kept(int(head.group(1))).add(next(self._order), block)
                return
        seen: dict[bytes, _Kept] = {}  # this block's ranks, by the digits of their prefix
        run, lines = self.plain, []
        for line in block.splitlines(keepends=True):
            m = _PREFIX.match(line)
            if m:
                kept = seen.get(m.group(1))
                if kept is None:
                    kept = seen[m.group(1)] = self._kept(int(m.group(1)))
            else:
                kept = self.plain
            if kept is run:
                lines.append(line)
                continue
            if lines:
                run.add(next(self._order), b"".join(lines))
            run, lines = kept, [line]
        run.add(next(self._order), b"".join(lines))

    def _kept(self, rank: int) -> _Kept:
        """The tail of `rank`'s lines; past `max_ranks` ranks, the stream's own."""
        kept = self.ranks.get(rank)
        if kept is None:
            if len(self.ranks) >= self._max_ranks:
                return self.plain
            kept = self.ranks[rank] = _Kept(self._rank_bytes)
        return kept

    def close(self) -> None:
        """Keep an unfinished last line (the stream ended, or it grew past `LINE_BYTES`)."""
        if self._pending:
            self.plain.add(next(self._order), bytes(self._pending))
            self._pending.clear()

    def pieces(self) -> list[tuple[int, bytes]]:
        return [p for kept in (self.plain, *self.ranks.values()) for p in kept.pieces]


class Tails:
    """The tails of a command's streams, in one arrival order."""

    def __init__(self, names: tuple[str, ...] = ("stdout", "stderr"), **limits: int) -> None:
        order = itertools.count()  # next() on it is one C call: safe from the reader threads
        self.streams = {n: StreamTail(n, order, **limits) for n in names}

    def merged(self) -> bytes:
        """Every kept piece of every stream, in the order it arrived."""
        for s in self.streams.values():
            s.close()
        pieces = sorted(p for s in self.streams.values() for p in s.pieces())
        return b"".join(data for _, data in pieces)
