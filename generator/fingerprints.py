"""Fingerprint patterns: the portable regex subset and the checks `check` runs on them.

Patterns come from strangers and run on logs of hundreds of MB both in Python (RE2) and in the
browser (JavaScript RegExp). The subset below means the same in both engines, matched line by line:
no backreferences, no lookaround, no inline flags or named groups (case-insensitivity is the
`ignore_case` field), ASCII escapes only, no anchors other than `^` and `$`.
"""

from __future__ import annotations

import re2

from .model import Fingerprint

_ESCAPES = frozenset("dDwWsSbBtfv")
_PUNCT = frozenset("\\^$.|?*+()[]{}-/ :#'\"=,<>!@%&~`;_")


def portable_error(pattern: str) -> str | None:
    """Why `pattern` is outside the portable subset, or None when it is inside."""
    i = 0
    in_class = False
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                return "the pattern ends with a lone backslash"
            nxt = pattern[i + 1]
            if nxt == "x":
                if not re2_hex(pattern[i + 2 : i + 4]):
                    return "\\x must be followed by two hex digits (\\x{...} is not portable)"
                i += 4
                continue
            if nxt.isdigit():
                return f"backreference or octal escape '\\{nxt}' is not portable"
            if nxt not in _ESCAPES and nxt not in _PUNCT:
                return f"escape '\\{nxt}' is not in the portable subset"
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern[i + 1 : i + 2] == ":":
                return "POSIX classes like [[:alpha:]] are not portable"
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a literal ']' first in a class
                i += 1
        elif ch == "(" and pattern[i + 1 : i + 2] == "?":
            if pattern[i + 2 : i + 3] != ":":
                return (
                    "only non-capturing groups '(?:...)' are portable"
                    " (no flags, names or lookaround)"
                )
        i += 1
    if in_class:
        return "unterminated character class"
    return None


def re2_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def compile_pattern(fp: Fingerprint) -> re2._Regexp:
    """The RE2 program for one fingerprint, with the same options diagnosis uses."""
    options = re2.Options()
    options.case_sensitive = not fp.ignore_case
    options.never_nl = True
    options.log_errors = False
    return re2.compile(fp.pattern, options)


def pattern_error(fp: Fingerprint) -> str | None:
    """Why the pattern cannot be used (outside the subset, or RE2 refuses it), or None."""
    reason = portable_error(fp.pattern)
    if reason:
        return reason
    try:
        compile_pattern(fp)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return f"RE2 cannot compile it: {detail}"
    return None
