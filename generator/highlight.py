"""Server-side syntax highlighting with Pygments: CSS classes in the HTML, colours in a stylesheet.

No JavaScript highlighter runs in the reader's browser; the stylesheet is generated from Pygments'
styles at build time (a light one and a dark one behind `prefers-color-scheme`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache

from pygments import format as _format
from pygments import lex
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Text, Whitespace, _TokenType
from pygments.util import ClassNotFound

LIGHT_STYLE = "default"
DARK_STYLE = "github-dark"
CSS_SCOPE = ".highlight"
_FORMATTER = HtmlFormatter(nowrap=True)
_PLAIN_CLASSES = frozenset({"w"})
"""Classes `code()` never emits (whitespace is merged into plain text)."""


@cache
def _lexer(language: str) -> Lexer | None:
    """Lexers are costly to look up; one per language for the whole process."""
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


@cache
def _plain() -> frozenset[_TokenType]:
    """Token types drawn like plain text in both schemes: they need no `<span>` (pages stay
    small; names and punctuation are a third of a highlighted block)."""
    styles = [get_style_by_name(name) for name in (LIGHT_STYLE, DARK_STYLE)]
    same = {t for t in STANDARD_TYPES
            if all(st.style_for_token(t) == st.style_for_token(Text) for st in styles)}
    return frozenset(same | {Whitespace})


def _merge_plain(tokens: Iterable[tuple[_TokenType, str]]) -> Iterator[tuple[_TokenType, str]]:
    plain = _plain()
    for ttype, value in tokens:
        yield (Text if ttype in plain else ttype), value


def code(source: str, language: str) -> str:
    """Highlighted HTML spans for `source`, to go inside `<pre><code>`; unknown languages are
    escaped as plain text."""
    lexer = _lexer(language.strip().lower()) or _lexer("text")
    return _format(_merge_plain(lex(source, lexer)), _FORMATTER)


def styles() -> dict[str, str]:
    """Token colour rules for the light and dark schemes; `theme/templates/pygments.css` uses them.

    Only the per-token rules: backgrounds and line numbers come from the theme's own CSS.
    """
    out = {}
    for name, style in (("light", LIGHT_STYLE), ("dark", DARK_STYLE)):
        grouped: dict[str, list[str]] = {}
        for rule in HtmlFormatter(style=style).get_style_defs(CSS_SCOPE).splitlines():
            selector, _, rest = rule.partition(" { ")
            if selector.startswith(CSS_SCOPE + " .") and selector[len(CSS_SCOPE) + 2:] not in \
                    _PLAIN_CLASSES:
                grouped.setdefault(rest.split(" }")[0], []).append(selector)
        out[name] = "\n".join(f"{','.join(sels)}{{{decl}}}" for decl, sels in grouped.items())
    return out
