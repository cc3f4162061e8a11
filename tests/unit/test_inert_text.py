"""Text from logs and entries made inert where it lands (#38): Markdown that GitHub or Slack
would turn into a mention, a link, an image or HTML (T15, D10, V21), a terminal that bidi
controls would reorder (D11), and a spreadsheet that would run a formula (T14). Each row is one
hostile input; every renderer is checked against every row."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from markdown_it import MarkdownIt

from nanopedia.commands.diff import _escape as diff_text
from nanopedia.diagnosis import report, triage_report

HOSTILE = [
    "cc @org/oncall please",
    "@nanopedia/maintainers www.evil.example https://evil.example/p",
    "mail admin@evil.example now",
    "WWW.Evil.Example and HTTP://EVIL.EXAMPLE",
    "[click](https://evil.example) ![img](https://evil.example/i.png)",
    "<img src=x onerror=alert(1)> <!-- hidden --> <https://evil.example>",
    "*bold* _it_ `code` ~~gone~~ | pipe # heading",
    "ftp://evil.example/file",
]

#: A GitHub mention or a GFM autolink (extended: www., http(s)://, e-mail) left live.
_LIVE = re.compile(
    r"(?<![\w`])@[A-Za-z0-9][\w-]*|(?i:\b(?:https?|ftp)://)|(?i:(?<![\w.])www\.)"
    r"|[\w.+-]+@[\w-]+\.[\w.-]+"
)

MARKDOWN: dict[str, Callable[[str], str]] = {
    "triage": triage_report._md,
    "diagnose": report._md,
    "diff": diff_text,
}


def _active(md: str) -> list[str]:
    """What CommonMark (with HTML) makes of it beyond text, and the GFM extras by regex."""
    found = [m.group(0) for m in _LIVE.finditer(md)]
    for token in MarkdownIt("commonmark").parseInline(md):
        for child in token.children or []:
            if child.type not in ("text", "softbreak", "code_inline"):
                found.append(child.type)
    return found


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("where", sorted(MARKDOWN))
def test_markdown_from_logs_and_entries_is_inert(where: str, text: str) -> None:
    md = MARKDOWN[where](text)
    assert _active(md) == [], md
    visible = md.replace("\u2060", "").replace("\\", "")
    assert re.sub(r"\s+", " ", visible) == re.sub(r"\s+", " ", text.replace("\\", ""))


BIDI = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
]


@pytest.mark.parametrize("char", BIDI)
def test_bidi_controls_are_shown_escaped_in_the_terminal(char: str) -> None:
    shown = report.shorten(f"RuntimeError: {char}gnp.exe")
    assert char not in shown and f"\\u{ord(char):04x}" in shown


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=cmd|' /C calc'!A0 Error: boom", "'=cmd|' /C calc'!A0 Error: boom"),
        ('=HYPERLINK("http://evil.example")', '\'=HYPERLINK("http://evil.example")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("job-17/train.log", "job-17/train.log"),
        ("RuntimeError: x = 1", "RuntimeError: x = 1"),
        ("", ""),
        (-3, -3),
        (12, 12),
    ],
)
def test_csv_cells_never_start_a_formula(value: object, cell: object) -> None:
    assert triage_report.cell(value) == cell
