"""Which link targets entry text may carry (`content/links.py`): the scheme a browser would see,
whatever spaces, controls or case hide it, as a table."""

from __future__ import annotations

import pytest

from nanopedia.content.links import (
    LABEL_BUDGET,
    entry_target,
    is_protocol_relative,
    is_safe_link,
    label_cost,
    link_scheme,
    links,
)

SCHEMES = [
    ("https://example.org/a", "https", True),
    ("http://example.org", "http", True),
    ("mailto:a@example.org", "mailto", True),
    ("entry:nccl-timeout#cause-x", "entry", True),
    ("HTTPS://EXAMPLE.ORG", "https", True),
    ("javascript:alert(1)", "javascript", False),
    ("JaVaScRiPt:alert(1)", "javascript", False),
    (" javascript:alert(1)", "javascript", False),
    ("\tjavascript:alert(1)", "javascript", False),
    ("\njavascript:alert(1)", "javascript", False),
    ("java\tscript:alert(1)", "javascript", False),
    ("java\x00script:alert(1)", "javascript", False),
    ("java script:alert(1)", "javascript", False),
    ("\x7fjavascript:alert(1)", "javascript", False),
    ("vbscript:msgbox(1)", "vbscript", False),
    ("data:text/html,<script>", "data", False),
    ("file:///etc/passwd", "file", False),
    ("ftp://example.org", "ftp", False),
    ("web+app:x", "web+app", False),
    ("x-y.z:thing", "x-y.z", False),
    ("page.html", None, True),
    ("../entries/a.html#x", None, True),
    ("#fragment", None, True),
    ("?q=1", None, True),
    ("", None, True),
    ("1http:x", None, True),
    ("//evil.example/p", None, False),
    (" //evil.example/p", None, False),
    ("\\\\evil.example\\p", None, False),
    ("/\\evil.example/p", None, False),
    ("\\/evil.example/p", None, False),
    ("/path/on/this/host", None, True),
]


@pytest.mark.parametrize(
    "href, scheme, safe", SCHEMES, ids=[repr(h)[1:-1] or "empty" for h, _, _ in SCHEMES]
)
def test_a_links_scheme_is_what_a_browser_would_see_and_only_safe_ones_pass(
    href: str, scheme: str | None, safe: bool
) -> None:
    assert link_scheme(href) == scheme
    assert is_safe_link(href) is safe


@pytest.mark.parametrize("href", ["//h", "\\\\h", "/\\h", "\\/h", "\x01//h"])
def test_two_slashes_of_any_kind_point_at_another_host(href: str) -> None:
    assert is_protocol_relative(href)


@pytest.mark.parametrize("href", ["/h", "./h", "h//x", "https://h"])
def test_a_path_is_not_another_host(href: str) -> None:
    assert not is_protocol_relative(href)


@pytest.mark.parametrize(
    "href, target",
    [
        ("entry:a", "a"),
        ("entry:a#cause-b", "a"),
        ("ENTRY:a", "a"),
        ("https://x/entry:a", None),
        ("a.html", None),
    ],
)
def test_an_entry_link_names_its_entry(href: str, target: str | None) -> None:
    assert entry_target(href) == target


def test_links_are_found_with_their_line() -> None:
    text = "intro\n\nSee [a](https://a.example) and\n![i](img.png)\n\n<javascript:x>"
    found = [(link.href, link.line) for link in links(text)]
    assert found == [("https://a.example", 2), ("img.png", 3), ("javascript:x", 5)]


def test_text_without_brackets_has_no_links() -> None:
    assert list(links("plain https://example.org text")) == []


COSTS = [
    ("no bracket", "plain", (0, -1)),
    ("closed", "[a](b)", (2, -1)),
    ("escaped", "\\[ not a bracket", (0, -1)),
    ("open to the end", "[abc", (4, -1)),
    ("two open", "[[ab", (7, -1)),
    ("a blank line ends the scan", "[ab\n\nxyz", (3, -1)),
]


@pytest.mark.parametrize("text, cost", [c[1:] for c in COSTS], ids=[c[0] for c in COSTS])
def test_the_label_scan_costs_the_open_brackets_depth_summed_over_the_text(
    text: str, cost: tuple[int, int]
) -> None:
    assert label_cost(text) == cost


def test_too_many_open_brackets_name_the_first() -> None:
    text = "ok " + "[" * 400 + "x" * 200
    cost, first = label_cost(text)
    assert cost > LABEL_BUDGET and first == 3
