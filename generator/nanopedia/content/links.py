"""Links in entry text: how they are found, which are allowed, and where `check` reports the others.

Entry text is untrusted. Links are allowed only to http(s), mailto, relative paths, fragments and
other entries (`entry:<id>`), never to another host without a scheme (`//host/p`, which from a
bundle opened as a file is `file://host/p`). The same rule is used by `check` (to report a bad
link at its line, `link_problems`) and by rendering in `nanopedia/site/markdown.py` (to drop one
that slipped through), so they cannot disagree.

Finding the `]` of a `[` is a scan to the end of the paragraph, once for each `[`: text that
leaves thousands open (`![![![`...) costs seconds per field. `label_cost` measures that work in
linear time, so `check` can refuse such text (`label_problem`) before any parser sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

from nanopedia.content.load import Document, Path_, dotted
from nanopedia.errors import Problem, problem

ALLOWED_SCHEMES = frozenset({"http", "https", "mailto", "entry"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


def link_scheme(href: str) -> str | None:
    """The scheme a browser would see in `href` (control characters and case ignored), or None."""
    match = _SCHEME.match(_IGNORED.sub("", href).lower())
    return match.group(1) if match else None


_OTHER_HOST = re.compile(r"^[/\\]{2}")
"""`//host`, and the backslash forms a browser reads the same way (`\\\\host`, `/\\host`)."""


def is_protocol_relative(href: str) -> bool:
    """True for a link to another host that takes the page's scheme: `//evil.example/p`."""
    return _OTHER_HOST.match(_IGNORED.sub("", href)) is not None


def is_safe_link(href: str) -> bool:
    """True for http(s), mailto, entry:, relative paths and fragments; never `javascript:`, nor a
    protocol-relative link."""
    scheme = link_scheme(href)
    if scheme is None:
        return not is_protocol_relative(href)
    return scheme in ALLOWED_SCHEMES


LABEL_BUDGET = 50_000
"""The most label-scan work (`label_cost`) one markdown field may take; the entries' fields need
a few hundred at most, and this much takes markdown-it about a millisecond."""
_BRACKET = re.compile(r"\\[\s\S]|[\[\]]|\n[ \t]*(?=\n|$)")


def label_cost(text: str) -> tuple[int, int]:
    """How many characters markdown-it scans looking for the `]` of every `[`, and the offset
    of the first `[` still open when that passes `LABEL_BUDGET` (-1 while it does not).

    Each open `[` costs one step for every character up to its `]`, or to the end of the
    paragraph when there is none: the sum is the depth of open brackets summed over the text. A
    backslash escape is no bracket; a bracket in a code span is counted (an overestimate)."""
    if "[" not in text:
        return 0, -1
    cost = 0
    last = 0
    opened: list[int] = []
    for match in _BRACKET.finditer(text):
        at = match.start()
        cost += len(opened) * (at - last)
        last = at
        if cost > LABEL_BUDGET:
            return cost, opened[0]
        token = match.group()
        if token == "[":
            opened.append(at)
        elif token == "]":
            if opened:
                opened.pop()
        elif token[0] == "\n":  # a blank line ends the paragraph, and every scan with it
            opened.clear()
    cost += len(opened) * (len(text) - last)
    return cost, (opened[0] if cost > LABEL_BUDGET else -1)


def _parser() -> MarkdownIt:
    """A parser that keeps every link (even unsafe ones), as typed (not percent-encoded: `\\\\`
    stays a backslash), so `check` can report them."""
    md = MarkdownIt("js-default")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    return md


_LINK_PARSER = _parser()


@dataclass(frozen=True, slots=True)
class Link:
    """A link or image target found in markdown text, with its 0-based line inside the text."""

    href: str
    line: int


def links(text: str) -> Iterator[Link]:
    """Every link and image target in `text`, in order, with the line it is written on."""
    if "[" not in text and "<" not in text:  # every link form needs one; parsing is costly
        return
    lines = text.splitlines()
    for block in _LINK_PARSER.parse(text):
        first, last = block.map if block.map else (0, 1)
        for token in block.children or ():
            if token.type in ("link_open", "image"):
                href = str(token.attrGet("href" if token.type == "link_open" else "src") or "")
                yield Link(href, _line_of(lines, first, last, href))


def _line_of(lines: list[str], first: int, last: int, href: str) -> int:
    """The line of a block that holds `href` (inline tokens carry no line of their own)."""
    raw = href.split(":", 1)[-1][:20]
    for number in range(first, min(last, len(lines))):
        if raw in lines[number]:
            return number
    return first


def entry_target(href: str) -> str | None:
    """The entry id of an `entry:<id>` or `entry:<id>#anchor` link, else None."""
    if link_scheme(href) != "entry":
        return None
    target = href.split(":", 1)[1]
    return target.split("#", 1)[0]


def doc_line(doc: Document, where: Path_, offset: int) -> tuple[int, int]:
    """The file position of line `offset` inside the scalar at `where` (block text starts a line
    later), in any document: an entry or the tag registry."""
    line, col = doc.position(where)
    if where in doc.blocks:
        return line + 1 + offset, 1
    return (line + offset, col) if offset else (line, col)


def link_problems(doc: Document, where: Path_, text: str) -> Iterator[Problem]:
    """Every link of a markdown field that `is_safe_link` refuses, at its line."""
    for link in links(text):
        if is_safe_link(link.href):
            continue
        line, col = doc_line(doc, where, link.line)
        scheme = link_scheme(link.href)
        if scheme is None and is_protocol_relative(link.href):
            message = (
                f"protocol-relative link '{link.href[:60]}' is not allowed in "
                f"'{dotted(where)}': it points at another host (a file:// one from a "
                "bundle)"
            )
            hint = "write the https:// address in full, or a path without a leading '//'"
        else:
            message = f"link scheme '{scheme}:' is not allowed in '{dotted(where)}'"
            hint = "use https://, mailto:, a #fragment or entry:<id>"
        yield problem(doc.path, "E016", message, hint, at=(line, col))


def label_problem(doc: Document, where: Path_, text: str) -> Problem | None:
    """The refusal of markdown whose `[` brackets would take the parser too long, or None."""
    cost, opened = label_cost(text)
    if opened < 0:
        return None
    offset = text.count("\n", 0, opened)
    line, col = doc_line(doc, where, offset)
    if where not in doc.blocks and offset == 0:
        col += opened
    unclosed = text.count("[") - text.count("]")
    return problem(
        doc.path,
        "E013",
        f"'{dotted(where)}' leaves too many '[' open: markdown looks for the ']' of each to the "
        f"end of its paragraph ({cost:,} characters scanned, at most {LABEL_BUDGET:,})"
        + (f"; {unclosed:,} more '[' than ']'" if unclosed > 0 else ""),
        "close each '[' with ']', or write '\\[' for a bracket that is text",
        at=(line, col),
    )
