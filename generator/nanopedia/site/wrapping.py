"""Plain text fitted to a terminal's columns: prose wrapped at spaces, a line cut visibly.

What `nanopedia show` (`terminal.py`) and the diagnosis report (`diagnosis/text_report.py`) lay
their lines out with. Nothing here imports the Markdown parser: a diagnosis must start fast.
"""

from __future__ import annotations

import textwrap

#: Narrowest width laid out (a narrower terminal wraps what it is given).
MIN_WIDTH = 40


def fill(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` wrapped to `width` columns after the given indents (a word wider than the line is
    broken, never left to overflow)."""
    out: list[str] = []
    for part in text.split("\n"):
        out += textwrap.wrap(
            " ".join(part.split()),
            max(width, MIN_WIDTH),
            initial_indent=first,
            subsequent_indent=rest,
            break_on_hyphens=False,
        ) or [first.rstrip()]
        first = rest
    return out


def cut(line: str, width: int) -> str:
    """One line cut to `width` columns with a visible `…`."""
    return line if len(line) <= width else line[: width - 1] + "…"
