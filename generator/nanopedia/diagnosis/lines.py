"""What one log line says about who printed it and when: its rank and its timestamp.

A rank comes from the line's prefix (`[rank3]:`, torchrun's `[default3]:`), its message
(`[Rank 3]`, `on rank 3`), the file name, or a neighbouring line; a timestamp from ISO or glog
formats, or the nearest earlier timestamped line. The patterns are exported to the browser
(`contract.export_data`) so both engines read lines alike.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cached_property
from pathlib import PurePath

#: Bytes before an untimestamped evidence line searched for the nearest earlier timestamp.
TIMESTAMP_WINDOW = 16 << 10


# Ranks have at most six digits: a line of 5,000 digits is not a rank (and no int() of it).
PREFIX_RANK = re.compile(r"^\s*\[[A-Za-z_]*?(\d{1,6})\]:", re.ASCII)
#: A launcher's rank prefix anywhere in a line (a record glued to the one before it).
JOINED_RANK = re.compile(r"\[(?:rank|default)(\d{1,6})\]:", re.ASCII)
MESSAGE_RANK = re.compile(
    r"\[Rank (\d{1,6})\]|\bRank (\d{1,6}):|\bon rank (\d{1,6})\b|OVERFLOW! Rank (\d{1,6})\b|"
    r"\bfor rank (\d{1,6}):",
    re.ASCII,  # \d and \b as JavaScript reads them
)
FILE_RANK = re.compile(
    r"(?:rank|default|worker)[_-]?(\d{1,6})(?:[^0-9]|$)", re.IGNORECASE | re.ASCII
)
ISO_TIME = re.compile(r"\b\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?", re.ASCII)
GLOG_TIME = re.compile(r"\b[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", re.ASCII)
#: The NCCL watchdog's last enqueued work: in a collective timeout, the lowest fell behind.
ENQUEUED = re.compile(r"[Ll]ast enqueued (?:NCCL )?work: (-?\d{1,18})\b", re.ASCII)


class LineRanks:
    """The ranks one line names, read once however many of its positions are asked about (a
    line can hold a hit of every fingerprint): where each `[rankN]:` or `[defaultN]:` prefix
    ends, up to `upto`, and the rank of its leading prefix or message, read when first needed."""

    def __init__(self, text: str, upto: int | None = None) -> None:
        self.text = text
        found = JOINED_RANK.finditer(text, 0, len(text) if upto is None else upto)
        pairs = [(m.end(), int(m.group(1))) for m in found]
        self.ends = [end for end, _ in pairs]
        self.ranks = [rank for _, rank in pairs]

    @cached_property
    def own(self) -> int | None:
        found = PREFIX_RANK.match(self.text) or MESSAGE_RANK.search(self.text)
        return int(next(g for g in found.groups() if g is not None)) if found else None

    def at(self, at: int) -> int | None:
        """The rank that printed character `at`: the last prefix that ends by `at + 1` (records
        joined on one line keep their own ranks), else the line's own."""
        k = bisect_right(self.ends, at + 1)
        return self.ranks[k - 1] if k else self.own


def line_rank(text: str, file_rank: int | None, at: int = 0) -> int | None:
    """The rank that printed the text at character `at` of a line (`LineRanks.at`), else the
    file name's."""
    found = LineRanks(text, at + 1).at(at)
    return file_rank if found is None else found


#: Lines either side of an evidence line whose rank says who printed it, when it names none.
NEIGHBOUR_LINES = 3


def nearby_rank(
    buf: bytes, start: int, end: int, own: int | None, rank_of_file: int | None
) -> int | None:
    """`own` (the line's rank at the evidence, `LineRanks.at`), else the file's rank, else the
    rank of the nearest line within `NEIGHBOUR_LINES` that names one (a traceback whose launcher
    prefix is on its other lines), unless the lines before and after at that distance disagree."""
    if own is not None or rank_of_file is not None:
        return own if own is not None else rank_of_file
    before, after = start, (end if end >= 0 else len(buf))
    for _ in range(NEIGHBOUR_LINES):
        found = set()
        if before > 0:
            begin = buf.rfind(b"\n", 0, before - 1) + 1
            found.add(line_rank(buf[begin : before - 1].decode("utf-8", "replace"), None))
            before = begin
        if after < len(buf) - 1:
            stop = buf.find(b"\n", after + 1)
            stop = len(buf) if stop < 0 else stop
            found.add(line_rank(buf[after + 1 : stop].decode("utf-8", "replace"), None))
            after = stop
        found.discard(None)
        if found:
            return found.pop() if len(found) == 1 else None
    return None


def file_rank(name: str) -> int | None:
    """Rank from a per-rank file name (`rank3.log`, torchrun's `<log_dir>/.../3/stderr.log`)."""
    path = PurePath(name)
    found = FILE_RANK.search(path.name)
    if found:
        return int(found.group(1))
    if path.stem in ("stdout", "stderr") and re.fullmatch(r"[0-9]{1,6}", path.parent.name):
        return int(path.parent.name)
    return None


def timestamp(text: str) -> str | None:
    """The last timestamp in `text`, whatever its format, as sortable `MMDDhhmmss.fffffffff`.

    The year is ignored because glog lines as ProcessGroupNCCL prints them have none, and their
    month is not zero-padded (`E710 18:00:32` is July 10).
    """
    last = None
    for regex in (ISO_TIME, GLOG_TIME):
        for found in regex.finditer(text):
            if last is None or found.start() > last.start():
                last = found  # the nearest timestamp of any format, not the last of the first
    if last is None:
        return None
    mo, d, h, mi, s, frac = last.groups()
    return f"{mo.zfill(2)}{d}{h}{mi}{s}.{(frac or '').ljust(9, '0')[:9]}"


def earlier_timestamp(
    buf: bytes, start: int, before: bytes = b"", window: int = TIMESTAMP_WINDOW
) -> str | None:
    """The timestamp of the nearest earlier line within `window` bytes (traceback lines have none,
    the log line before them usually does); `before` is the text preceding `buf`.

    The whole lines at the end of the window are read first, a few hundred bytes and then four
    times more until one holds a timestamp: a timestamp never spans a newline, so the last one
    of such a tail is the last of the window (a line without one, in a log with thousands of
    them, read the whole window each time: a third of a large log's scan)."""
    head = buf[max(0, start - window) : start]
    if start < window and before:
        head = (before + head)[-window:]
    size = _TAIL
    while size < len(head):
        line = head.find(b"\n", len(head) - size) + 1
        if line and (found := timestamp(head[line:].decode("utf-8", "replace"))):
            return found
        size *= 4
    return timestamp(head.decode("utf-8", "replace"))


#: Bytes before a line first looked at for an earlier timestamp (`earlier_timestamp`).
_TAIL = 256
