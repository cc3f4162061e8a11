"""Error-looking lines of a job, normalised and counted: what a job that no entry matched shows.

What differs between jobs (rank and host prefixes, timestamps, paths, hex, numbers) is collapsed, so
the same unknown failure in many jobs counts as one line of the fleet's gaps; counts and lines
looked at are bounded per job and file.
"""

from __future__ import annotations

import re
from typing import Any

import re2

from nanopedia.diagnosis.logs import MAX_LINE_BYTES

#: Error-looking lines: distinct (normalised) lines counted per job, lines looked at per file,
#: and lines kept in the record of a job that no entry matched.
ERROR_KEYS = 256
ERROR_LINES_PER_FILE = 2000
ERROR_LINES_KEPT = 5


#: An error-looking line: an exception class, an ERROR/FATAL level (glog's `E0429 13:55:49.38`
#: and PyTorch's `[E429 13:55:49.38 ...]` too), a crash message.
_ERRORISH = re2.compile(
    rb"(?:Error|Exception)\b|\b[EF]\d{3,4} \d\d:\d\d:\d\d\.|"
    rb"\b(?:ERROR|FATAL|CRITICAL|Fatal|fatal|error)\b|"
    rb"\b(?:failed|FAILED|Killed|Aborted|CANCELLED)\b|Segmentation fault|core dumped|"
    rb"terminate called"
)
_NORM_PREFIX = re.compile(
    r"^(?:\s*(?:\[[A-Za-z_]*\d{1,6}\]:|\[\d+,\d+\]<\w+>:|[A-Za-z][\w.-]*\d[\w.-]*: |"
    r"[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] ))*\s*",
    re.ASCII,
)
_NORM_RULES = [
    (re.compile(p, re.ASCII), r)
    for p, r in (
        (r"\x1b\[[0-?]*[ -/]*[@-~]", ""),
        (r"\b([IWEF])\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?", r"\1<time>"),
        (r"\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d+)?|\b\d\d:\d\d:\d\d(?:[.,]\d+)?", "<time>"),
        (r"(?:[A-Za-z]:)?(?:/[\w.@+~-]+){2,}/?", "<path>"),
        (r"\b0x[0-9a-fA-F]+\b|\b(?=[a-f]*\d)[0-9a-f]{8,}\b", "<hex>"),
        (r"\b\d+(?:\.\d+)*", "<n>"),
        (r"\s+", " "),
    )
]
#: Bytes of a line normalised (a 1 MiB line is cut first), characters of the normalised line,
#: and of its example.
ERROR_SOURCE_BYTES = 4096
ERROR_CHARS = 200
EXAMPLE_CHARS = 300


def normalise_error(text: str) -> str:
    """An error line with what differs between jobs collapsed: rank and host prefixes,
    timestamps, paths, hex, numbers; so the same failure in 40 jobs counts as one line."""
    text = _NORM_PREFIX.sub("", text, count=1)
    for regex, into in _NORM_RULES:
        text = regex.sub(into, text)
    return text.strip()[:ERROR_CHARS]


class ErrorLines:
    """Counts the error-looking lines of one job's bytes as the scan reads them: distinct
    normalised lines (at most `ERROR_KEYS`), each with its first occurrence."""

    def __init__(self) -> None:
        self.counts: dict[str, list[Any]] = {}  # text -> [count, order, example, file, line]
        self.file = ""
        self.carry = b""
        self.line = 0
        self.seen = 0

    def start(self, file: str) -> None:
        self.file, self.carry, self.line, self.seen = file, b"", 0, 0

    def feed(self, data: bytes) -> None:
        data = self.carry + data if self.carry else data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            self.carry = data[:MAX_LINE_BYTES]
            return
        self.carry = data[cut:][:MAX_LINE_BYTES]
        self._block(data[:cut])

    def finish(self) -> None:
        if self.carry:
            self._block(self.carry + b"\n")
        self.carry = b""

    def _block(self, block: bytes) -> None:
        if self.seen >= ERROR_LINES_PER_FILE:
            return
        counted, next_line = 0, 0
        for m in _ERRORISH.finditer(block):
            start = m.start()
            if start < next_line:
                continue
            begin = block.rfind(b"\n", 0, start) + 1
            end = block.find(b"\n", start)
            self.line += block.count(b"\n", counted, begin)
            counted, next_line = begin, end + 1
            raw = block[begin : min(end, begin + ERROR_SOURCE_BYTES)]
            self._add(raw.decode("utf-8", "replace"), self.line + 1)
            self.seen += 1
            if self.seen >= ERROR_LINES_PER_FILE:
                return
        self.line += block.count(b"\n", counted)

    def _add(self, raw: str, line: int) -> None:
        text = normalise_error(raw)
        if not text or text.startswith('File "'):
            return
        row = self.counts.get(text)
        if row is not None:
            row[0] += 1
        elif len(self.counts) < ERROR_KEYS:
            example = raw.translate(_CONTROLS).strip()[:EXAMPLE_CHARS]
            self.counts[text] = [1, len(self.counts), example, self.file, line]

    def top(self, n: int = ERROR_LINES_KEPT) -> list[dict[str, Any]]:
        """The most frequent lines, ties in order of first appearance."""
        rows = sorted(self.counts.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:n]
        return [
            {"text": t, "count": c, "example": ex, "file": f, "line": ln}
            for t, (c, _, ex, f, ln) in rows
        ]


_CONTROLS = {c: " " for c in [*range(0x20), 0x7F]}
