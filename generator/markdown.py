"""The one configured markdown-it-py instance, and the link rules entries must follow.

Entry text is untrusted: the `js-default` preset turns raw HTML into text and disables linkify;
links are allowed only to http(s), mailto, relative paths, fragments and other entries
(`entry:<id>`). The same scheme rule is used by `check` (to report a bad link at its line) and by
rendering (to drop one that slipped through), so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

ALLOWED_SCHEMES = frozenset({"http", "https", "mailto", "entry"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


def link_scheme(href: str) -> str | None:
    """The scheme a browser would see in `href` (control characters and case ignored), or None."""
    match = _SCHEME.match(_IGNORED.sub("", href).lower())
    return match.group(1) if match else None


def is_safe_link(href: str) -> bool:
    """True for http(s), mailto, entry:, relative paths and fragments; never `javascript:`."""
    scheme = link_scheme(href)
    return scheme is None or scheme in ALLOWED_SCHEMES


def _parser() -> MarkdownIt:
    """A parser that keeps every link (even unsafe ones) so `check` can report them."""
    md = MarkdownIt("js-default")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


_LINK_PARSER = _parser()


@dataclass(frozen=True, slots=True)
class Link:
    """A link or image target found in markdown text, with its 0-based line inside the text."""

    href: str
    line: int


def links(text: str) -> Iterator[Link]:
    """Every link and image target in `text`, in order, with the line it is written on."""
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
