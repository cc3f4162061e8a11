"""`nanopedia/content/portable.py`: the portable subset's checker refuses what the browser's engine
and RE2 would read differently, and admits what both read alike."""

from __future__ import annotations

import pytest

from nanopedia.content.portable import (
    class_end,
    class_members,
    fold_ascii,
    is_count,
    is_open_count,
    literal_length,
    portable_error,
)


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
        r"x[]^]y",  # ... so the class goes on past it: this '^' is in the class, no anchor
        r"[^]a]+",
        r"[a-z:]+ \(rank \d+\) ends$",
    ],
)
def test_a_portable_pattern_is_admitted(pattern: str) -> None:
    assert portable_error(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "end"),
    [
        ("[abc]x", 5),
        ("[^a]x", 4),
        ("[]a]x", 4),  # a `]` first in a class is a member
        ("[^]a]x", 5),  # and after `^` too
        ("[a\\]b]x", 6),  # an escaped `]` is a member
        ("[\\\\]x", 4),  # an escaped backslash ends nothing
        ("[\\x41-\\x43]x", 11),
        ("x[ab]", 5),
        ("[abc", 5),  # unclosed (RE2 refuses it before): past the end, no error
    ],
)
def test_a_class_ends_past_its_closing_bracket(pattern: str, end: int) -> None:
    assert class_end(pattern, pattern.index("[")) == end


@pytest.mark.parametrize(
    ("pattern", "negated", "members", "end"),
    [
        ("[abc]x", False, [(97, 97), (98, 98), (99, 99)], 5),
        ("[^]a]x", True, [(93, 93), (97, 97)], 5),
        ("[]a]", False, [(93, 93), (97, 97)], 4),
        ("[a\\]b]", False, [(97, 97), (93, 93), (98, 98)], 6),
        ("[a-cx]", False, [(97, 99), (120, 120)], 6),
        ("[\\x41-\\x43]", False, [(65, 67)], 11),
        ("[\\x4]", False, [(120, 120), (52, 52)], 5),  # `\x` without two hex digits: an x
        ("[\\t\\f\\v]", False, [(9, 9), (12, 12), (11, 11)], 8),
        ("[\\t-\\v]", False, [(9, 11)], 7),
        ("[\\d\\S.]", False, ["\\d", "\\S", (46, 46)], 7),
        ("[\\d-z]", False, ["\\d", (45, 45), (122, 122)], 6),  # no range from a class escape
        ("[a-]", False, [(97, 97), (45, 45)], 4),  # a `-` last is a member
        ("[\\.\\-]", False, [(46, 46), (45, 45)], 6),
    ],
)
def test_a_class_reads_as_its_members(
    pattern: str, negated: bool, members: list[object], end: int
) -> None:
    assert class_members(pattern, 0) == (negated, members, end)


@pytest.mark.parametrize(
    ("pattern", "folded"),
    [
        ("k", "[kK]"),
        ("K9", "[Kk]9"),
        ("[a-c]", "[a-cA-C]"),
        ("[X-Z]", "[X-Zx-z]"),
        ("[^x]", "[^xX]"),
        ("[A-Z0-9_]", "[A-Z0-9\\_a-z]"),
        ("[Y-b]", "[Y-by-zA-B]"),  # a range across the two cases folds each part
        ("\\x41", "[\\x41a]"),
        ("\\x4g", "\\x4g"),
        ("\\d\\.", "\\d\\."),
        ("[\\t-\\x7e]", "[\\x09-\\~a-zA-Z]"),
        ("[ -#]", "[ -#]"),  # a class without letters is kept as written
    ],
)
def test_ascii_letters_fold_to_both_cases(pattern: str, folded: str) -> None:
    assert fold_ascii(pattern) == folded


@pytest.mark.parametrize(
    ("pattern", "length"),
    [
        ("abc", 3),
        ("a\\.b", 3),
        ("[abc]d", 1),
        ("[^]a]d", 1),
        ("x{2,3}y", 2),
        ("\\x41\\tz", 3),
        ("\\d+\\s", 0),
        ("(ab|c)", 3),
    ],
)
def test_the_literal_length_counts_fixed_text_only(pattern: str, length: int) -> None:
    assert literal_length(pattern) == length


@pytest.mark.parametrize(
    ("pattern", "at", "count", "open_count"),
    [
        ("a{2}", 1, True, False),
        ("a{2,}", 1, True, True),
        ("a{12,}", 1, True, True),
        ("a{2,5}", 1, True, False),
        ("a{,5}", 1, False, False),  # RE2 reads it as text
        ("a{x}", 1, False, False),
        ("a{2,x}", 1, False, False),
        ("a{2x,}", 1, False, False),
        ("a{}", 1, False, False),
        ("a{2", 1, False, False),  # never closed
        ("{x}a{3,}", 4, True, True),  # its own `}`, not an earlier one
        ("a{2}x{y}", 1, True, False),  # and not a later one
        ("a{y}x{2}", 1, False, False),
    ],
)
def test_a_brace_opens_a_count_only_with_digits_before_its_comma(
    pattern: str, at: int, count: bool, open_count: bool
) -> None:
    assert pattern[at] == "{"
    assert (is_count(pattern, at), is_open_count(pattern, at)) == (count, open_count)
