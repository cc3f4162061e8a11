"""Server-side syntax highlighting with Pygments: CSS classes in the HTML, colours in a stylesheet.

No JavaScript highlighter runs in the reader's browser; the stylesheet is generated from Pygments'
styles at build time (a light one and a dark one behind `prefers-color-scheme`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import partial

from pygments import format as _format
from pygments import lex
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.lexers.python import PythonLexer
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Name, Operator, Text, Whitespace, _TokenType
from pygments.util import ClassNotFound

LIGHT_STYLE = "default"
DARK_STYLE = "github-dark"
CSS_SCOPE = "pre"
"""Token rules apply inside any `<pre>`: code examples and fenced blocks in entry text alike."""
_FORMATTER = HtmlFormatter(nowrap=True)
_AS_TEXT = frozenset({Operator, Whitespace})
"""Token types drawn as plain text on purpose, whatever the styles say: whitespace, and symbol
operators (`.`, `=`, `**`...), which were 38% of the entries' highlighting spans (about 2.7 KB
of the largest entry page) for a grey close to the text in the light scheme. Word operators
(`in`, `not`) keep their colour."""


def _lexer(language: str) -> Lexer | None:
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


def _classes() -> dict[_TokenType, _TokenType]:
    """Each standard token type -> the one type whose class draws it: `Text` (no `<span>`) for
    types drawn like plain text in both schemes, else the most general type with the same look
    in both (`kn` and `kr` are drawn as `k`). Fewer distinct classes mean shorter class names,
    fewer rules in pygments.css, and neighbours of one look sharing a `<span>`."""
    styles = [get_style_by_name(name) for name in (LIGHT_STYLE, DARK_STYLE)]

    def look(ttype: _TokenType) -> tuple[object, ...]:
        return tuple(tuple(sorted(st.style_for_token(ttype).items())) for st in styles)

    plain = look(Text)
    by_look: dict[tuple[object, ...], _TokenType] = {}
    out = {}
    for ttype in sorted(STANDARD_TYPES, key=lambda t: (len(t), STANDARD_TYPES[t])):
        drawn_as_text = ttype in _AS_TEXT or look(ttype) == plain
        out[ttype] = Text if drawn_as_text else by_look.setdefault(look(ttype), ttype)
    return out


_CLASSES = _classes()


def _canonical(tokens: Iterable[tuple[_TokenType, str]]) -> Iterator[tuple[_TokenType, str]]:
    """The tokens, each with the type whose class draws it (see `_classes`)."""
    classes = _CLASSES
    for ttype, value in tokens:
        standard = ttype
        while standard not in classes:  # a lexer's own subtype: drawn as its standard parent
            standard = standard.parent
        yield classes[standard], value


class Highlighter:
    """Highlights code, remembering the lexer of each language (costly to look up) and, for
    Python, the HTML of each line it highlighted (see `_python_lines`). A build's context holds
    one for the whole build, as jinja hangs its caches on its `Environment`; `code` alone
    remembers nothing."""

    __slots__ = ("lexers", "lines", "remember")

    def __init__(self, remember: bool = True) -> None:
        self.remember = remember
        self.lexers: dict[str, Lexer | None] = {}
        self.lines: dict[str, tuple[str, bool, bool]] = {}
        """Python line -> (its HTML, whether the lexer ends it in its root state, whether it
        ends in a module name of an `import` or `from` statement, which the next line may
        continue)."""

    def lexer(self, language: str) -> Lexer | None:
        if not self.remember:
            return _lexer(language)
        if language not in self.lexers:
            self.lexers[language] = _lexer(language)
        return self.lexers[language]

    def code(self, source: str, language: str) -> str:
        """Highlighted HTML spans for `source`, to go inside `<pre><code>`; unknown languages
        are escaped as plain text."""
        lexer = self.lexer(language.strip().lower()) or self.lexer("text")
        if isinstance(lexer, PythonLexer):
            lines = _python_lines(lexer, source, self.lines if self.remember else {})
            if lines is not None:
                return "".join(lines)
        return _format(_canonical(lex(source, lexer)), _FORMATTER)


def code(source: str, language: str) -> str:
    """`Highlighter.code`, remembering nothing."""
    return Highlighter(remember=False).code(source, language)


# Per-line highlighting. Pygments' formatter closes every span at the end of a line, so a block's
# HTML is the concatenation of its lines' HTML whenever each line gets the same tokens alone as
# inside the block. For Python that holds when the lexer is back in its root state at every line
# end (measured: half of a cold build was lexing the same lines again in every block).
_LINE_CACHE_MAX = 500_000
_SENTINEL = "\n "
_TRIPLE_QUOTE = re.compile("\"\"\"|'''")
_OPENS_NEXT_LINE = re.compile(r"^(?:#!|\s*(?:match|case)\b)|lazy\s*$")
"""Lines whose state a one-space sentinel cannot reveal: a hash-bang (only the first line of a
block is one), soft keywords (their state waits for a `_` on a later line), `lazy` (waits for
`from`)."""
_CONTINUES_IMPORT = re.compile(r"\s*(?:,|as\b)")
_CONTINUES_FROM = re.compile(r"\s*import\b")


def _python_lines(
    lexer: Lexer, source: str, known: dict[str, tuple[str, bool, bool]]
) -> list[str] | None:
    """Each line's HTML, or None when the block must be lexed as a whole (a triple-quoted
    string, a continued line, an open f-string expression...)."""
    text = source.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if _TRIPLE_QUOTE.search(text):
        return None
    lines = text.removesuffix("\n").split("\n")
    out = []
    for i, line in enumerate(lines):
        hit = known.get(line)
        if hit is None:
            hit = _python_line(lexer, line, known)
        html, closed, module_end = hit
        if not closed:
            return None
        if module_end and i + 1 < len(lines):
            after = lines[i + 1]
            if _CONTINUES_IMPORT.match(after) or ("from" in line and _CONTINUES_FROM.match(after)):
                return None
        out.append(html)
    return out


def _python_line(
    lexer: Lexer, line: str, known: dict[str, tuple[str, bool, bool]]
) -> tuple[str, bool, bool]:
    """Lex `line` followed by a newline and a space: the lexer is in its root state at the line
    end exactly when the newline comes out as a token of its own (every other state that can
    reach it either resets at it or swallows the space too), except the `import` states, which
    wait for a comma, `as` or `import` on the next line after a module name."""
    end = len(line)
    tokens = []
    closed = False
    for pos, ttype, value in lexer.get_tokens_unprocessed(line + _SENTINEL):
        if pos >= end:
            closed = pos == end and value == "\n"
            break
        tokens.append((ttype, value))
    closed = closed and not _OPENS_NEXT_LINE.search(line)
    module_end = bool(tokens) and tokens[-1][0] is Name.Namespace
    tokens.append((Text, "\n"))
    html = _format(_canonical(tokens), _FORMATTER)
    if len(known) >= _LINE_CACHE_MAX:
        known.clear()
    known[line] = hit = (html, closed, module_end)
    return hit


BACKGROUNDS = {
    "light": ("#f6f8fa", "#ffebe9", "#e6ffec"),
    "dark": ("#161b22", "#3c1e23", "#15331f"),
}
"""What code is drawn on in each scheme: the code background and the removed and added lines of
a diff (`--code-bg`, `--diff-del`, `--diff-ins` in theme/static/site.css; keep them equal)."""
MIN_CONTRAST = 4.6
"""WCAG AA asks 4.5:1 for text; Pygments' light colours are at 4.5 to 4.8 on the code background
alone, so a tinted diff line took them under (axe-core's colour-contrast rule)."""
_HEX = re.compile(r"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")


def _luminance(rgb: tuple[float, ...]) -> float:
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def rgb(hex_colour: str) -> tuple[float, ...]:
    h = hex_colour.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    return tuple(int(h[i : i + 2], 16) / 255 for i in (0, 2, 4))


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """WCAG contrast ratio of two sRGB colours (channels 0 to 1), from 1 to 21."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _readable_match(match: re.Match[str], on: Iterable[str]) -> str:
    return readable(match.group(), on)


def readable(hex_colour: str, backgrounds: Iterable[str]) -> str:
    """`hex_colour`, or the nearest shade of it towards black (on light backgrounds) or white (on
    dark ones) that has MIN_CONTRAST with every background."""
    grounds = [rgb(b) for b in backgrounds]
    colour = rgb(hex_colour)
    target = 0.0 if _luminance(grounds[0]) > 0.18 else 1.0
    step = 0
    shade = colour
    while step < 100 and min(contrast(shade, g) for g in grounds) < MIN_CONTRAST:
        step += 1
        shade = tuple(c + (target - c) * step / 100 for c in colour)
    if shade == colour:
        return hex_colour
    return "#" + "".join(f"{round(c * 255):02x}" for c in shade)


def styles() -> dict[str, str]:
    """Token colour rules for the light and dark schemes; `theme/templates/pygments.css` uses them.

    Only rules for classes `code()` emits: backgrounds and line numbers come from the theme's own
    CSS, and types drawn as text or with another type's class need none. Classes of one look
    share a rule, as `pre :is(.k,.kc){...}`. Colours too faint on one of the scheme's
    BACKGROUNDS are darkened (or lightened) just enough to be read.
    """
    emitted = {STANDARD_TYPES[t] for t in set(_CLASSES.values()) - {Text}}
    out = {}
    for name, style in (("light", LIGHT_STYLE), ("dark", DARK_STYLE)):
        grouped: dict[str, list[str]] = {}
        grounds = BACKGROUNDS[name]
        for cls, (decl, _ttype, _level) in HtmlFormatter(style=style).class2style.items():
            if cls in emitted:
                decl = _HEX.sub(partial(_readable_match, on=grounds), decl)
                grouped.setdefault(decl.replace(": ", ":").replace("; ", ";"), []).append(cls)
        out[name] = "\n".join(
            f"{CSS_SCOPE} .{classes[0]}{{{decl}}}"
            if len(classes) == 1
            else f"{CSS_SCOPE} :is({','.join('.' + c for c in classes)}){{{decl}}}"
            for decl, classes in grouped.items()
        )
    return out
