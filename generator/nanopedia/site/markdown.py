"""The one configured markdown-it-py instance that turns entry text into safe HTML.

Entry text is untrusted: the `js-default` preset turns raw HTML into text and disables linkify,
and markdown-it drops every link that `is_safe_link` refuses: the link rule of
`nanopedia/content/links.py`, the one `check` reports bad links with, so they cannot disagree.

Rendering adds our rules on the token stream (never on HTML text): `entry:` links become relative
`.html` links, images become plain links (a page never loads anything from elsewhere), and
headings are moved below the page's own levels with ids that carry a prefix and are unique per
page, so they cannot collide with the page's anchors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from nanopedia.content.links import entry_target, is_safe_link
from nanopedia.site import highlight

HEADING_ID_PREFIX = "md-"
HEADING_SHIFT = 3
"""Entry pages use h1 to h3 themselves; a `#` heading in entry text becomes h4."""
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")


@dataclass(slots=True)
class PageEnv:
    """Per-page rendering state: where entry pages are, and heading ids already given out."""

    entry_base: str = ""
    """Relative path from the page to the `entries/` folder, e.g. `../entries/`, or "" inside it."""
    ids: set[str] = field(default_factory=set)
    """Heading ids used so far on the page; markdown rendered onto one page shares one set."""
    markdown: Markdown | None = None
    """The renderer, with what it remembers (a build's); None: one that remembers nothing."""


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
                tok.attrSet(
                    "href", f"{env.entry_base}{target}.html" + (f"#{fragment}" * bool(fragment))
                )
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


def _renderer(highlighter: highlight.Highlighter) -> MarkdownIt:
    """The safe renderer: js-default, our link rule for validation, our token rules; fenced
    code highlighted by `highlighter` (markdown-it's hook gets "" for text to escape)."""

    def fence(source: str, language: str, attrs: str) -> str:
        return highlighter.code(source, language) if language else ""

    md = MarkdownIt("js-default", {"highlight": fence})
    md.validateLink = is_safe_link  # type: ignore[method-assign,assignment]
    md.core.ruler.push("nanopedia_links", _rewrite_links)
    md.core.ruler.push("nanopedia_headings", _heading_ids)
    return md


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


_RENDERED_MAX = 50_000


class Markdown:
    """The safe renderer and what it remembers: its highlighter, and the HTML of each text that
    gave no heading, by (inline, entry base, text), since that HTML depends on nothing else
    (entries repeat texts: the benchmark's code examples repeat the summary). A build's context
    holds one, as jinja hangs its caches on its `Environment`."""

    __slots__ = ("highlighter", "parser", "_rendered", "_remember")

    def __init__(self, remember: bool = True) -> None:
        self.highlighter = highlight.Highlighter(remember)
        self.parser = _renderer(self.highlighter)
        """The markdown-it instance, configured (`_renderer`)."""
        self._rendered: dict[tuple[bool, str, str], str] = {}
        self._remember = remember

    def render(self, text: str, page: PageEnv) -> str:
        """Block markdown (paragraphs, lists, tables, code) to safe HTML."""
        if is_plain(text):
            return f"<p>{escapeHtml(text)}</p>\n"
        if _ONE_LINE.fullmatch(text) is not None and text == text.strip():
            # its paragraph holds its inline HTML: skip the block parser (a third of the time)
            return f"<p>{self._memo(True, text, page)}</p>\n"
        return self._memo(False, text, page)

    def render_inline(self, text: str, page: PageEnv) -> str:
        """One line of inline markdown to safe HTML, without a wrapping paragraph."""
        if is_plain(text):
            return escapeHtml(text)
        return self._memo(True, text, page)

    def _memo(self, inline: bool, text: str, page: PageEnv) -> str:
        base = page.entry_base if "[" in text or "<" in text else ""  # no link, no base in HTML
        found = self._rendered.get((inline, base, text))
        if found is not None:
            return found
        headings = len(page.ids)
        env = {"page": page}
        html = self.parser.renderInline(text, env) if inline else self.parser.render(text, env)
        if self._remember and len(page.ids) == headings:
            if len(self._rendered) >= _RENDERED_MAX:
                self._rendered.clear()
            self._rendered[inline, base, text] = html
        return html


_ONE_LINE = re.compile(r"[^\W\d_][^\n\r]*")
"""Text that is one paragraph whatever it holds: one line (markdown-it breaks lines at `\\n` and
`\\r`) starting with a letter, so no block rule applies (lists, headings, quotes, fences and
tables need another start or a second line). Most fields of the benchmark are such."""


def render(text: str, page: PageEnv) -> str:
    """Block markdown (paragraphs, lists, tables, code) to safe HTML, by the page's renderer."""
    return (page.markdown or _ONCE).render(text, page)


def render_inline(text: str, page: PageEnv) -> str:
    """One line of inline markdown to safe HTML, without a wrapping paragraph."""
    return (page.markdown or _ONCE).render_inline(text, page)


_ONCE = Markdown(remember=False)
"""The renderer of pages rendered outside a build's context (the MkDocs plugin, tests): it
remembers nothing."""


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
