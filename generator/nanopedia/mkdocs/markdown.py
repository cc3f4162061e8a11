"""Entry markdown re-written as Python-Markdown that MkDocs can only render as the text it says.

MkDocs renders pages with Python-Markdown, which passes raw HTML through and whose user-chosen
extensions give meaning to many more characters (`{: attr }`, `--8<--`, `!!!`, `:emoji:`, `{{ }}`
for macros). So entry text is never handed over as typed: it is parsed with the same CommonMark
preset the site uses (`js-default`, raw HTML as text), and the token tree is written back out as
Markdown in which every character of text is escaped, links are checked with `is_safe_link`, and
the only structure is the structure we emit. Our own markup is a few inline HTML tags
(`<em>`, `<strong>`, `<del>`, `<code>`, `<br>`, `<a id>`) that every theme styles and no extension
needs.

No `<` of entry text reaches Python-Markdown outside a code block: its raw-HTML preprocessor (and
MkDocs' anchor finder) read the whole page as HTML before any inline syntax is known, so a `<` in
a backtick code span is still a tag to them (`<div markdown>` at a line start opens a block, an
unclosed `<script` hides every anchor after it). Inline code is therefore written as `<code>` around
escaped text, and code blocks, whose `<` must stay as typed, are always placed where Python-Markdown
reads them as code: fenced at the top level, indented after a blank line inside a container.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from nanopedia.content.links import entry_target, is_safe_link
from nanopedia.site.markdown import heading_id, title_parts

Resolve = Callable[[str], str]
"""Maps an `entry:<id>[#anchor]` href to the relative `.md` link of that page on the site."""

HEADING_SHIFT = 3
"""Entry pages use h1 to h3 themselves; a `#` heading in entry text becomes h4 (as on the site)."""
HEADING_ANCHOR = '<a id="{}"></a>'
"""Starts each entry heading: the id the site gives it (`markdown.heading_id`), which the plugin
moves onto the heading in place of the one MkDocs' toc made from its text (`search` for a
heading "Search", which the theme may use itself)."""

_BACKSLASH = frozenset("\\`*_{}[]()>#+-.!")
"""Python-Markdown's ESCAPED_CHARS: a backslash makes each of them literal text."""
_ENTITY = frozenset("<&:=|~^$?%@\"'")
"""Characters Python-Markdown cannot backslash-escape but core or common extensions give meaning
to (raw HTML, tables, setext headings, definition lists, emoji, math, details, mark, macros);
written as numeric character references, which no block or inline processor looks inside."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Python-Markdown marks its placeholders with STX/ETX; entry text must not be able to forge one."""
_SPACE = re.compile(r"\s+")
_LANGUAGE = re.compile(r"[^A-Za-z0-9_+-]")
_URL_SAFE = "/:?#[]@!$&*+,;=%-._~"
"""Kept as typed in link targets; everything else (spaces, quotes, parentheses, backticks,
backslashes, angle brackets) is percent-encoded so the target cannot end early or gain a title."""


def _parser() -> MarkdownIt:
    """The site's preset; every link kept as a link so `_link` decides, with `is_safe_link`."""
    md = MarkdownIt("js-default")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


_MD = _parser()


def text(value: str) -> str:
    """Plain text as Python-Markdown text that renders exactly as the characters given, one line."""
    out = []
    for char in _SPACE.sub(" ", _CONTROL.sub("\ufffd", value)):
        if char in _BACKSLASH:
            out.append("\\" + char)
        elif char in _ENTITY:
            out.append(f"&#{ord(char)};")
        else:
            out.append(char)
    return "".join(out)


def heading(value: str) -> str:
    """Text for a heading, escaped only as far as a one-line heading needs.

    Headings become page and section titles, which themes print in places that keep character
    references as typed (MkDocs' search results show `&#63;`), so only `<`, `&` and the
    backslash-escapable characters are escaped; the others cannot start a block inside a heading.
    Material prints the page title into `<title>` after decoding it, so `</` gets a zero-width
    space: an entry title cannot close the element.
    """
    out = []
    for char in _SPACE.sub(" ", _CONTROL.sub("\ufffd", value.replace("</", "<\u200b/"))):
        if char in _BACKSLASH:
            out.append("\\" + char)
        else:
            out.append({"<": "&lt;", "&": "&amp;"}.get(char, char))
    return "".join(out)


def title(value: str, escape: Callable[[str], str] = text) -> str:
    """A cause's, fix step's, code example's or question's title, as on the site: its code spans
    as code, every other character as typed (escaped by `escape`: `text` for a link, `heading`
    for a heading)."""
    return "".join(
        code_span(part, escape) if code else escape(part) for code, part in title_parts(value)
    )


def url(href: str) -> str:
    """A link target as written inside `(...)`: percent-encoded where Markdown would read syntax."""
    return quote(_CONTROL.sub("", href), safe=_URL_SAFE)


def code_span(code: str, escape: Callable[[str], str] = text) -> str:
    """Inline code as `<code>` around text escaped by `escape`, never in backticks: a backtick
    span hands its `<` to Python-Markdown raw, and its HTML preprocessor reads it as a tag."""
    return f"<code>{escape(code)}</code>"


def fenced(code: str, language: str) -> str:
    """A fenced code block the site's own highlighter renders; the fence outlasts any run inside."""
    code = _CONTROL.sub("\ufffd", code).rstrip("\n")
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", code)), default=0) + 1)
    return f"{fence}{_LANGUAGE.sub('', language)}\n{code}\n{fence}"


def inline(source: str, resolve: Resolve) -> str:
    """Inline entry markdown (a symptom, a checklist item) as one safe line."""
    root = SyntaxTreeNode(_MD.parseInline(source))
    return _inline(root.children[0], resolve) if root.children else ""


def block(
    source: str, resolve: Resolve, *, nested: bool = False, ids: set[str] | None = None
) -> str:
    """Block entry markdown (paragraphs, lists, tables, code) as safe Python-Markdown blocks.

    `nested` is for text that will sit inside a container (a blockquote), where Python-Markdown
    does not recognise fenced code: code blocks are then indented instead. `ids` are the heading
    ids given out on the page so far (markdown rendered onto one page shares one set, as on the
    site); each heading adds its own.
    """
    nodes = SyntaxTreeNode(_MD.parse(source)).children
    return "\n\n".join(_blocks(nodes, resolve, nested=nested, ids=set() if ids is None else ids))


def _blocks(
    nodes: list[SyntaxTreeNode], resolve: Resolve, *, nested: bool, ids: set[str]
) -> list[str]:
    """Each block as a chunk of lines; chunks are separated by a blank line when joined.

    Python-Markdown merges two lists that follow each other into one, so an empty comment (which
    renders as nothing) keeps them apart, as CommonMark does.
    """
    chunks: list[str] = []
    previous = ""
    for node in nodes:
        chunk = _block(node, resolve, nested=nested, ids=ids)
        if not chunk:
            continue
        if previous.endswith("_list") and node.type.endswith("_list"):
            chunks.append("<!-- -->")
        chunks.append(chunk)
        previous = node.type
    return chunks


def _indent(chunk: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in chunk.split("\n"))


_CODE = ("fence", "code_block")


def _block(node: SyntaxTreeNode, resolve: Resolve, *, nested: bool, ids: set[str]) -> str:
    kind = node.type
    if kind == "paragraph":
        return _inline(node.children[0], resolve) if node.children else ""
    if kind == "heading":
        level = min(6, int(node.tag[1]) + HEADING_SHIFT)
        anchor = HEADING_ANCHOR.format(heading_id(node.children[0].content, ids))
        return "#" * level + " " + anchor + _inline(node.children[0], resolve)
    if kind in _CODE:
        code = node.content.rstrip("\n")
        if nested:  # fenced blocks only work at the top level without extra extensions
            return _indent(_CONTROL.sub("\ufffd", code), "    ")
        return fenced(code, node.info.split(" ", 1)[0] if kind == "fence" else "")
    if kind in ("bullet_list", "ordered_list"):
        return _list(node, resolve, ids)
    if kind == "blockquote":
        inner = "\n\n".join(_blocks(node.children, resolve, nested=True, ids=ids))
        return "\n".join("> " + line if line else ">" for line in inner.split("\n"))
    if kind == "table":
        return _table(node, resolve)
    if kind == "hr":
        return "* * *"
    return text(node.content)


def _list(node: SyntaxTreeNode, resolve: Resolve, ids: set[str]) -> str:
    """A list; an item's lines after its first are indented four spaces, as Python-Markdown wants.

    A tight list stays tight (items on consecutive lines, a nested list right under its item);
    any other second block in an item is set off by a blank line. A list holding code is loose:
    Python-Markdown would read the next item's line as more code.
    """
    ordered = node.type == "ordered_list"
    start = int(node.attrs.get("start", 1)) if ordered else 1
    children = [child for item in node.children for child in item.children]
    tight = all(c.hidden for c in children if c.type == "paragraph") and not any(
        c.type in _CODE for c in children
    )
    items = []
    for n, item in enumerate(node.children, start):
        marker = f"{n}." if ordered else "-"
        body = f"{marker:<3} "
        for i, child in enumerate(item.children):
            chunk = _block(child, resolve, nested=True, ids=ids)
            if i == 0 and child.type in _CODE:
                # After the marker an indented line is the item's text, not code: its `<` would
                # be a tag. The empty comment takes the marker's line, the code goes below it.
                body += "<!-- -->\n\n" + _indent(chunk, "    ")
                continue
            if i == 0:
                body += _indent(chunk, "    ")[4:] if chunk else ""
                continue
            sep = "\n" if tight and child.type.endswith("_list") else "\n\n"
            body += sep + _indent(chunk, "    ")
        items.append(body.rstrip())
    return ("\n" if tight else "\n\n").join(items)


def _table(node: SyntaxTreeNode, resolve: Resolve) -> str:
    rows = [row for part in node.children for row in part.children]
    lines = []
    for i, row in enumerate(rows):
        cells = [_inline(c.children[0], resolve) if c.children else "" for c in row.children]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            aligns = [str(c.attrs.get("style", "")) for c in row.children]
            lines.append("| " + " | ".join(_align(a) for a in aligns) + " |")
    return "\n".join(lines)


def _align(style: str) -> str:
    return {
        "text-align:left": ":---",
        "text-align:right": "---:",
        "text-align:center": ":---:",
    }.get(style, "---")


def _inline(node: SyntaxTreeNode, resolve: Resolve) -> str:
    return "".join(_span(child, resolve) for child in node.children)


_TAGS = {"em": "em", "strong": "strong", "s": "del"}


def _span(node: SyntaxTreeNode, resolve: Resolve) -> str:
    kind = node.type
    if kind == "text":
        return text(node.content)
    if kind == "softbreak":
        return " "
    if kind == "hardbreak":
        return "<br>"
    if kind == "code_inline":
        return code_span(node.content)
    if kind in _TAGS:
        tag = _TAGS[kind]
        return f"<{tag}>{_inline(node, resolve)}</{tag}>"
    if kind in ("link", "image"):
        href = str(node.attrs.get("href" if kind == "link" else "src", ""))
        label = _inline(node, resolve) or text(href)
        return _link(label, href, resolve)
    return text(node.content)


def _link(label: str, href: str, resolve: Resolve) -> str:
    """A Markdown link MkDocs checks; an unsafe target keeps only its text (as the site does)."""
    if not is_safe_link(href):
        return label
    target = entry_target(href)
    return f"[{label}]({resolve(href) if target is not None else url(href)})"
