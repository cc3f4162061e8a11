"""Which link targets entry text may carry (`content/links.py`): the scheme a browser would see,
whatever spaces, controls or case hide it, as a table."""

from __future__ import annotations

import pytest

from nanopedia.content import links as links_module
from nanopedia.content.links import (
    LABEL_BUDGET,
    entry_target,
    is_protocol_relative,
    is_safe_link,
    label_cost,
    label_problem,
    link_problems,
    link_scheme,
    links,
)
from nanopedia.content.load import parse

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
    "href, scheme, safe",
    SCHEMES,
    ids=[
        f"{i:02d} {s or 'no scheme'} {'safe' if ok else 'unsafe'}"
        for i, (_, s, ok) in enumerate(SCHEMES)
    ],
)
def test_a_links_scheme_is_what_a_browser_would_see_and_only_safe_ones_pass(
    href: str, scheme: str | None, safe: bool
) -> None:
    assert link_scheme(href) == scheme
    assert is_safe_link(href) is safe


@pytest.mark.parametrize(
    "href",
    ["//h", "\\\\h", "/\\h", "\\/h", "\x01//h"],
    ids=["slashes", "backslashes", "slash-back", "back-slash", "control"],
)
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


ENTRY = """\
id: x
summary: |
  line one [a](https://ok.example)
  two [b](javascript:alert(1)) and

  [c](//evil.example/p)
confirm:
  - "see [d](vbscript:x) now"
  - "first\\nthen [e](data:x)"
  - 'x [[[[ y'
"""


def problems(where: tuple[str | int, ...]) -> list[str]:
    doc = parse(ENTRY, "x.yaml")
    value = doc.data
    for key in where:
        value = value[key]
    return [str(p) for p in link_problems(doc, where, value)]


def test_each_unsafe_link_is_reported_at_its_own_line_of_a_block() -> None:
    assert problems(("summary",)) == [
        "x.yaml:4:1: error[E016]: link scheme 'javascript:' is not allowed in 'summary'\n"
        "    hint: use https://, mailto:, a #fragment or entry:<id>",
        "x.yaml:6:1: error[E016]: protocol-relative link '//evil.example/p' is not allowed in "
        "'summary': it points at another host (a file:// one from a bundle)\n"
        "    hint: write the https:// address in full, or a path without a leading '//'",
    ]


def test_an_unsafe_link_in_a_quoted_line_is_reported_where_the_value_starts() -> None:
    assert problems(("confirm", 0)) == [
        "x.yaml:8:5: error[E016]: link scheme 'vbscript:' is not allowed in 'confirm[0]'\n"
        "    hint: use https://, mailto:, a #fragment or entry:<id>"
    ]
    assert problems(("confirm", 1))[0].startswith("x.yaml:10:5: error[E016]: link scheme 'data:'")


def test_a_link_is_located_by_its_whole_target() -> None:
    text = "mentions b here\n[x](javascript:a:zz:b)"
    assert [link.line for link in links(text)] == [1]


def test_an_autolink_is_a_link_too() -> None:
    assert [link.href for link in links("see <https://x.example/a>")] == ["https://x.example/a"]


def test_a_long_protocol_relative_link_is_named_by_its_first_60_characters() -> None:
    doc = parse(ENTRY, "x.yaml")
    href = "//evil.example/" + "p" * 80
    [found] = link_problems(doc, ("summary",), f"[x]({href})")
    assert f"protocol-relative link '{href[:60]}' is not" in str(found)


def test_too_many_open_brackets_are_reported_where_the_first_is() -> None:
    doc = parse(ENTRY, "x.yaml")
    flow = label_problem(doc, ("confirm", 2), "x " + "[" * 400 + "y" * 10)
    assert flow is not None and str(flow) == (
        "x.yaml:10:7: error[E013]: 'confirm[2]' leaves too many '[' open: markdown looks for "
        "the ']' of each to the end of its paragraph (50,086 characters scanned, at most "
        "50,000); 400 more '[' than ']'\n"
        "    hint: close each '[' with ']', or write '\\[' for a bracket that is text"
    )
    block = label_problem(doc, ("summary",), "ok\n\n" + "[" * 400 + "y" * 10 + "]" * 400 + "\n\nz")
    assert block is not None and str(block).split("\n")[0] == (
        "x.yaml:5:1: error[E013]: 'summary' leaves too many '[' open: markdown looks for the ']' "
        "of each to the end of its paragraph (50,086 characters scanned, at most 50,000)"
    )
    first_line = label_problem(doc, ("summary",), "ok " + "[" * 400 + "]" * 399)
    assert first_line is not None
    assert str(first_line).startswith("x.yaml:3:1: ")
    assert "; 1 more '[' than ']'" in str(first_line)
    at_start = label_problem(doc, ("confirm", 2), "[" * 400)
    assert at_start is not None and str(at_start).startswith("x.yaml:10:5: ")
    assert label_problem(doc, ("summary",), "[ok]") is None


def test_entry_targets_stop_at_the_first_colon_and_hash() -> None:
    assert entry_target("entry:a#cause:x") == "a"
    assert entry_target("entry:a:b#c") == "a:b"
    assert entry_target("entry:a#b#c") == "a"


def test_the_label_scan_adds_up_every_bracket() -> None:
    assert label_cost("[a] [b]") == (4, -1)


def test_a_scan_of_exactly_the_budget_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links_module, "LABEL_BUDGET", 4)
    assert label_cost("[abc") == (4, -1)
    assert label_cost("[abc]x") == (4, -1)
    assert label_cost("[abcdef") == (7, 0)
    assert label_cost("x[[abcdef") == (15, 1)
