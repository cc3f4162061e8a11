"""`nanopedia/content/portable.py`: the portable subset's checker refuses what the browser's engine
and RE2 would read differently, and admits what both read alike."""

from __future__ import annotations

import pytest

from nanopedia.content.portable import portable_error


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("[[:alpha:]]+ failed", "POSIX classes like [[:alpha:]] are not portable"),
        ("rank [0-9[:digit:]]", "POSIX classes like [[:alpha:]] are not portable"),
        ("[^[:space:]]+", "POSIX classes like [[:alpha:]] are not portable"),
        (r"\x{41}BC", r"\x must be followed by two hex digits (\x{...} is not portable)"),
        (r"byte \x4", r"\x must be followed by two hex digits (\x{...} is not portable)"),
        (r"a\qb", r"escape '\q' is not in the portable subset"),
        (r"\p{L}+", r"escape '\p' is not in the portable subset"),
        (r"\A start", r"escape '\A' is not in the portable subset"),
        (r"\z", r"escape '\z' is not in the portable subset"),
        (r"(a)\1", r"backreference or octal escape '\1' is not portable"),
        (r"\0", r"backreference or octal escape '\0' is not portable"),
        ("trailing \\", "the pattern ends with a lone backslash"),
        (
            "(?i)error",
            "only non-capturing groups '(?:...)' are portable (no flags, names or lookaround)",
        ),
        (
            "(?P<n>x)",
            "only non-capturing groups '(?:...)' are portable (no flags, names or lookaround)",
        ),
        (
            "a(?=b)",
            "only non-capturing groups '(?:...)' are portable (no flags, names or lookaround)",
        ),
        ("[abc", "unterminated character class"),
    ],
)
def test_a_pattern_outside_the_subset_is_refused_with_its_reason(pattern: str, reason: str) -> None:
    assert portable_error(pattern) == reason


def test_a_start_anchor_is_refused_and_the_escaped_caret_is_not() -> None:
    assert "'^' anchors the pattern to the start of a line" in (portable_error("^Error") or "")
    assert portable_error(r"\^Error") is None


@pytest.mark.parametrize(
    "pattern",
    [
        r"expected scalar type (?:BFloat16|Half) but found Float",
        r"\x41\x7e \d+\s\w \t\.",
        r"[\[:alpha:]]",  # an escaped '[' is a character, not a POSIX class
        r"[]a]",  # a ']' first in a class is a character
        r"[^]a]+",
        r"[a-z:]+ \(rank \d+\) ends$",
    ],
)
def test_a_portable_pattern_is_admitted(pattern: str) -> None:
    assert portable_error(pattern) is None
