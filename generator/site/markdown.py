"""The one configured markdown-it-py instance, and the link rules entries must follow.

Entry text is untrusted: the `js-default` preset turns raw HTML into text and disables linkify;
links are allowed only to http(s), mailto, relative paths, fragments and other entries
(`entry:<id>`), never to another host without a scheme (`//host/p`, which from a bundle opened
as a file is `file://host/p`). The same rule is used by `check` (to report a bad link at its
line) and by rendering (to drop one that slipped through), so they cannot disagree.

Finding the `]` of a `[` is a scan to the end of the paragraph, once for each `[`: text that
leaves thousands open (`![![![`...) costs seconds per field. `label_cost` measures that work in
linear time, so `check` can refuse such text before any parser sees it.

Rendering adds our rules on the token stream (never on HTML text): `entry:` links become relative
`.html` links, images become plain links (a page never loads anything from elsewhere), and
headings are moved below the page's own levels with ids that carry a prefix and are unique per
page, so they cannot collide with the page's anchors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from nanopedia.site import highlight

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


HEADING_ID_PREFIX = "md-"
HEADING_SHIFT = 3
"""Entry pages use h1 to h3 themselves; a `#` heading in entry text becomes h4."""
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")


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


@dataclass(slots=True)
class PageEnv:
    """Per-page rendering state: where entry pages are, and heading ids already given out."""

    entry_base: str = ""
    """Relative path from the page to the `entries/` folder, e.g. `../entries/`, or "" inside it."""
    ids: set[str] = field(default_factory=set)
    """Heading ids used so far on the page; markdown rendered onto one page shares one set."""


def _fence(source: str, language: str, attrs: str) -> str:
    """markdown-it's highlight hook: Pygments spans, or "" to let markdown-it escape the text."""
    return highlight.code(source, language) if language else ""


def _rewrite_links(state: StateCore) -> None:
    """Entry links to relative `.html` and images to links (pages send no referrer at all)."""
    env: PageEnv = state.env["page"]
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        for tok in block.children:
            if tok.type == "image":
                opener = Token("link_open", "a", 1, attrs={"href": str(tok.attrGet("src"))})
                out += [opener, *(tok.children or ()), Token("link_close", "a", -1)]
                tok = opener
            else:
                out.append(tok)
            if tok.type != "link_open":
                continue
            href = str(tok.attrGet("href") or "")
            target = entry_target(href)
            if target is not None:
                fragment = href.partition("#")[2]
                tok.attrSet("href", f"{env.entry_base}{target}.html" + (f"#{fragment}" *
                                                                        bool(fragment)))
        block.children = out


def _heading_ids(state: StateCore) -> None:
    """Shift headings below the page's own and give each a prefixed id unique on the page."""
    env: PageEnv = state.env["page"]
    tokens = state.tokens
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open":
            continue
        tag = f"h{min(6, int(tok.tag[1]) + HEADING_SHIFT)}"
        tok.tag = tokens[i + 2].tag = tag
        tok.attrSet("id", heading_id(tokens[i + 1].content, env.ids))


def heading_id(source: str, taken: set[str]) -> str:
    """The id of a heading whose markdown source is `source`: prefixed, so it cannot collide
    with the page's own anchors, and unique among `taken`, to which it is added. The site and
    the MkDocs plugin both name headings with it."""
    slug = _SLUG_CHARS.sub("-", source.lower()).strip("-") or "section"
    ident, n = HEADING_ID_PREFIX + slug, 1
    while ident in taken:
        n += 1
        ident = f"{HEADING_ID_PREFIX}{slug}-{n}"
    taken.add(ident)
    return ident


def _renderer() -> MarkdownIt:
    """The safe renderer: js-default, our link rule for validation, our token rules."""
    md = MarkdownIt("js-default", {"highlight": _fence})
    md.validateLink = is_safe_link  # type: ignore[method-assign]
    md.core.ruler.push("nanopedia_links", _rewrite_links)
    md.core.ruler.push("nanopedia_headings", _heading_ids)
    return md


_RENDERER = _renderer()


_PLAIN = re.compile(r"[^\W\d_][^\x00-\x1f\x7f-\x9f\u2028\u2029&*<\[\\_`~]*")
"""Text markdown leaves as it is: one line starting with a letter (no block rule applies: lists,
headings, quotes, tables and fences need another start or a second line), without a character
an enabled inline rule starts at: `\\` escape, `` ` `` code, `*` `_` emphasis, `~` strikethrough,
`[` link and `![` image, `<` autolink, `&` entity. The other characters markdown-it stops its
text at (`: - + ! # = > |`...) serve rules that are off (linkify, typographer, html) or need a
line start. Three fifths of the benchmark's fields (a quarter when `: - +` also excluded them),
mostly short ones, where markdown-it's fixed cost per call dominates."""


def is_plain(text: str) -> bool:
    """True when `text` renders as itself: a paragraph of its escaped text, no markup."""
    return _PLAIN.fullmatch(text) is not None and text == text.strip()


_plain = is_plain  # the name tests/test_markdown_plain.py knows it by


_RENDERED: dict[tuple[bool, str, str], str] = {}
"""(inline, entry base, text) -> HTML, for text that gave no heading: its HTML depends on
nothing else (entries repeat texts: the benchmark's code examples repeat the summary, and every
summary is rendered again for the tag pages)."""
_RENDERED_MAX = 50_000


def _memo(inline: bool, text: str, page: PageEnv) -> str:
    base = page.entry_base if "[" in text or "<" in text else ""  # no link, no base in the HTML
    found = _RENDERED.get((inline, base, text))
    if found is not None:
        return found
    headings = len(page.ids)
    env = {"page": page}
    html = _RENDERER.renderInline(text, env) if inline else _RENDERER.render(text, env)
    if len(page.ids) == headings:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        _RENDERED[inline, base, text] = html
    return html


_ONE_LINE = re.compile(r"[^\W\d_][^\n\r]*")
"""Text that is one paragraph whatever it holds: one line (markdown-it breaks lines at `\\n` and
`\\r`) starting with a letter, so no block rule applies (lists, headings, quotes, fences and
tables need another start or a second line). Most fields of the benchmark are such."""


def render(text: str, page: PageEnv) -> str:
    """Block markdown (paragraphs, lists, tables, code) to safe HTML."""
    if is_plain(text):
        return f"<p>{escapeHtml(text)}</p>\n"
    if _ONE_LINE.fullmatch(text) is not None and text == text.strip():
        # its paragraph holds its inline HTML: skip the block parser (a third of the time)
        return f"<p>{_memo(True, text, page)}</p>\n"
    return _memo(False, text, page)


def render_inline(text: str, page: PageEnv) -> str:
    """One line of inline markdown to safe HTML, without a wrapping paragraph."""
    if is_plain(text):
        return escapeHtml(text)
    return _memo(True, text, page)


def _titles() -> MarkdownIt:
    """Titles (of a cause, a fix step, a code example, a question): text with code spans,
    nothing else, since they are headings and the text of links."""
    return MarkdownIt("zero").enable("backticks")


_TITLES = _titles()


def title_parts(text: str) -> list[tuple[bool, str]]:
    """A title as (is code, text) runs, in order."""
    children = _TITLES.parseInline(text)[0].children or []
    return [(t.type == "code_inline", t.content) for t in children if t.content]


def render_title(text: str) -> str:
    """A title to safe HTML: its code spans as `<code>`, everything else as typed."""
    if "`" not in text:
        return escapeHtml(text)
    return _TITLES.renderInline(text)
