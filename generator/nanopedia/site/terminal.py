"""An entry as plain text for a terminal (`nanopedia show ID`): Markdown rendered without its
markup (no backticks, asterisks or link brackets), every line fitted to a width.

Pure: an entry and a width in, text out; the command measures the terminal and prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from markdown_it import MarkdownIt
from markdown_it.token import Token

from nanopedia.site.wrapping import MIN_WIDTH, cut, fill

if TYPE_CHECKING:
    from nanopedia.model import Entry

_PARSER = MarkdownIt("commonmark")


def blocks(text: str, width: int, indent: str = "") -> list[str]:
    """Block Markdown (paragraphs, lists, code) as plain lines of at most `width` columns."""
    lines: list[str] = []
    tokens = _PARSER.parse(text)
    lists: list[list[int]] = []  # per open list: [next number, or -1 for bullets]
    marker = ""
    for i, token in enumerate(tokens):
        depth = indent + "   " * max(len(lists) - 1, 0)
        if token.type == "bullet_list_open":
            lists.append([-1])
        elif token.type == "ordered_list_open":
            start = token.attrGet("start")  # 0 where the list starts at 0, as on the page
            lists.append([1 if start is None else int(start)])
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif token.type == "list_item_open":
            number = lists[-1][0]
            marker = "- " if number < 0 else f"{number}. "
            if number >= 0:
                lists[-1][0] += 1
        elif token.type == "inline":
            words = _plain(token)
            lead = depth + marker if marker else depth + ("   " if lists else "")
            rest = " " * len(lead)
            lines += fill(words, width, lead, rest)
            marker = ""
        elif token.type in ("fence", "code_block"):
            pad = depth + ("   " if lists else "") + "    "
            lines += [cut(pad + line, width) for line in token.content.rstrip("\n").split("\n")]
        elif token.type == "paragraph_close" and not lists and _more(tokens, i):
            lines.append("")
    return lines


def _more(tokens: list[Token], i: int) -> bool:
    return any(t.type == "paragraph_open" or t.type.endswith("list_open") for t in tokens[i + 1 :])


def _plain(token: Token) -> str:
    out: list[str] = []
    href, start = "", 0
    for child in token.children or []:
        if child.type == "link_open":
            href = str(child.attrGet("href") or "")
            start = len(out)
        elif child.type == "link_close":
            label = "".join(out[start:])
            if href.startswith("http") and href != label:
                out.append(f" <{href}>")
        elif child.type in ("text", "code_inline", "image"):
            out.append(child.content)
        elif child.type == "softbreak":
            out.append(" ")
        elif child.type == "hardbreak":
            out.append("\n")
    return "".join(out)


def plain(text: str) -> str:
    """Inline Markdown as plain text on one line."""
    token = _PARSER.parseInline(text)[0]
    return " ".join(_plain(token).split())


def entry_text(entry: Entry, width: int, link: str | None) -> str:
    """What `nanopedia show` prints: title, the quick answer (summary), the root causes with
    their failure domain and action, the fix with the causes each step is for, how to confirm,
    and where to read the rest."""
    width = max(width, MIN_WIDTH)
    causes = {c.id: c for c in entry.root_causes}
    out = fill(f"{entry.id}: {plain(entry.title)}", width, "", "  ")
    out += ["", "Quick answer"] + blocks(entry.summary, width, "  ")
    out += ["", "Root causes"]
    for n, cause in enumerate(entry.root_causes, 1):
        lead = f"  {n}. "
        out += fill(
            f"{plain(cause.title)} [{cause.domain}, {cause.action}]", width, lead, " " * len(lead)
        )
    out += ["", "Fix"]
    for n, step in enumerate(entry.fix, 1):
        lead = f"  {n}. "
        out += fill(plain(step.title), width, lead, " " * len(lead))
        named = [plain(causes[c].title) for c in step.causes if c in causes]
        out += fill(
            "for: " + ("; ".join(named) if named else "every cause"),
            width,
            " " * len(lead),
            " " * (len(lead) + 2),
        )
        out += blocks(step.detail, width, " " * len(lead))
    out += ["", "How to confirm"]
    for item in entry.confirm:
        out += fill(plain(item), width, "  - ", "    ")
    if link:
        out += ["", *fill(f"read: {link}", width, "", "  ")]
    return "\n".join(cut(line, width) for line in out)
