"""Entry markdown re-written for Python-Markdown: what renders is the text the entry says, and the
only structure is the structure CommonMark gives it. Rendered here with Python-Markdown and the
extensions a Material site typically enables, without a MkDocs build.
"""

from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import markdown
import pytest

from nanopedia.mkdocs.markdown import block, code_span, fenced, heading, inline, text, url
from nanopedia.site.markdown import PageEnv
from nanopedia.site.markdown import render as site_render

EXTENSIONS = [
    "toc",
    "tables",
    "fenced_code",
    "attr_list",
    "md_in_html",
    "def_list",
    "admonition",
    "abbr",
    "footnotes",
    "pymdownx.details",
    "pymdownx.snippets",
    "pymdownx.mark",
    "pymdownx.tilde",
    "pymdownx.caret",
    "pymdownx.critic",
    "pymdownx.keys",
]


def resolve(href: str) -> str:
    return (
        href.replace("entry:", "../entries/", 1).replace("#", ".md#", 1)
        if "#" in href
        else href.replace("entry:", "", 1) + ".md"
    )


def render(source: str) -> str:
    return markdown.markdown(source, extensions=EXTENSIONS)


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        " javascript:alert(1)",
        "javascript&#58;alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html,<script>alert(1)</script>",
        "jav&#x09;ascript:alert(1)",
    ],
)
def test_unsafe_links_keep_only_their_text(href: str) -> None:
    html = render(block(f"[click]({href}) and <{href}>", resolve))
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert all(urlsplit(h).scheme in ("", "http", "https", "mailto") for h in hrefs), html
    assert "click" in html


def test_entry_links_resolve_and_others_are_kept_encoded() -> None:
    source = '[a](entry:beta#cause-x) [b](https://x.org/a b) [c](https://x.org/(p)"q)'
    out = inline(source, resolve)
    assert "[a](../entries/beta.md#cause-x)" in out
    html = render(out)
    assert 'href="https://x.org/%28p%29%22q"' in html
    assert "x.org/a b" in html and 'href="https://x.org/a b"' not in html  # not a link at all


@pytest.mark.parametrize(
    "source, shown",
    [
        ('<img src=x onerror="alert(1)">', '<img src=x onerror="alert(1)">'),
        ("<div>\nblock\n</div>", "<div> block </div>"),
        ('text {: onclick="alert(1)" }', 'text {: onclick="alert(1)" }'),
        ('--8<-- "/etc/passwd"', '--8<-- "/etc/passwd"'),
        ("{{ 7*7 }} {% raw %} ${x}", "{{ 7*7 }} {% raw %} ${x}"),
        ("!!! danger\n    body", "!!! danger body"),
        ("Term\n: definition", "Term : definition"),
        (
            "==mark== ~~del~~ ^^ins^^ ++ctrl+alt++ {++add++}",
            "==mark== del ^^ins^^ ++ctrl+alt++ {++add++}",
        ),
        ("*[HTML]: Hyper", "*[HTML]: Hyper"),
        ("a[^1] b", "a[^1] b"),
        ("&lt; &amp; &#60; \\< &amp;lt;", "< & < < &lt;"),
        ("a\u0002klzzwxh:0000\u0003b", "a\ufffdklzzwxh:0000\ufffdb"),
    ],
)
def test_syntax_of_html_and_extensions_renders_as_text(source: str, shown: str) -> None:
    html = render(block(source, resolve))
    assert _text(html).startswith(shown), html
    for tag in (
        "<img",
        "<div",
        "onclick=",
        "<script",
        "<mark",
        "<ins",
        "<kbd",
        "<abbr",
        "<dl",
        "admonition",
        "<sup",
    ):
        assert tag not in html, (tag, html)


def _text(html: str) -> str:
    """The visible text of rendered HTML (tags dropped, references decoded, spaces collapsed)."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


HOSTILE_MARKDOWN = {
    "a raw block at a line start": "<div markdown>\n\n*inside*\n\n</div>",
    "a raw block with markdown=1": '<div markdown="1">\n*inside*\n</div>',
    "an unclosed script in text": "before <script\n\nafter",
    "an unclosed script in a code span": "see `<script` then [b](entry:beta)",
    "a block tag in a code span": "`<div markdown>` and `</div>`",
    "a list item that starts with code": "-     <script>window.pwned=1</script>\n- next",
    "an ordered item that starts with code": "1.      <div markdown>\n        *x*",
    "an item that starts with a fence": "- ```\n  <img src=x onerror=alert(1)>\n  ```\n- b",
    "a nested item that starts with code": "- a\n  -     <script>alert(3)</script>",
}
"""Entry markdown whose `<` the MkDocs rewrite once handed to Python-Markdown as a tag."""
_INERT = {
    "p", "em", "strong", "del", "code", "pre", "a", "br", "ul", "ol", "li", "blockquote",
    "span", "div", "h4",
}  # fmt: skip
"""Elements both renderers may make of entry markdown (`div` and `span` only the highlighter's)."""


class _Elements(HTMLParser):
    """Each element with its attributes, and every comment's text."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _unsafe(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return [
        (tag, attrs)
        for tag, attrs in parser.found
        if tag not in _INERT
        or any(name.startswith("on") or name == "markdown" for name in attrs)
        or (tag == "div" and attrs.get("class") != "highlight")
    ]


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN.values(), ids=HOSTILE_MARKDOWN.keys())
def test_hostile_entry_markdown_is_text_in_the_site_and_in_mkdocs(source: str) -> None:
    """The site's renderer and the MkDocs rewrite, read by Python-Markdown with `md_in_html` on,
    give the same inert elements, and every `<` of the entry is a character on both pages."""
    site = site_render(source, PageEnv())
    for page in (render(block(source, resolve)), render(block(source, resolve, nested=True))):
        assert _unsafe(page) == [], page
        assert page.count("&lt;") + page.count("&#60;") == site.count("&lt;"), (page, site)
    assert _unsafe(site) == [], site


def test_an_item_that_starts_with_code_shows_the_code_as_code() -> None:
    html = render(block("- first\n-     <b>x</b>\n- last", resolve))
    items = re.findall(r"<li>(.*?)</li>", html, re.S)
    assert len(items) == 3, html
    assert "<pre><code>&lt;b&gt;x&lt;/b&gt;" in items[1]
    assert "last" in items[2]


def test_inline_code_keeps_anchors_after_it_visible_to_mkdocs() -> None:
    """MkDocs finds a page's anchors by reading its Markdown as HTML: an unclosed `<script` in a
    code span would hide every anchor after it, and `--strict` would fail on a good link."""
    source = inline("run `<script` now", resolve) + '\n\n## <a id="cause-x"></a>Cause\n'
    finder = _Elements()
    finder.feed(source)
    assert ("a", {"id": "cause-x"}) in finder.found, source


def test_structure_survives() -> None:
    source = """\
Para with `code`, *em*, **strong** and ~~gone~~.

- one
- two
  - nested

1. step

   ```python
   x = 1
   ```

2. after

> quote

| a | b |
|---|---|
| `x` | y |

```bash
echo "</code><script>"
```

# Heading
"""
    html = render(block(source, resolve))
    for part in (
        "<code>code</code>",
        "<em>em</em>",
        "<strong>strong</strong>",
        "<del>gone</del>",
        "<li>two<ul>\n<li>nested</li>",
        "<ol>",
        "<pre><code>x = 1",
        "<blockquote>",
        "<td><code>x</code></td>",
        "<h4",
        'class="language-bash"',
        "echo &quot;&lt;/code&gt;&lt;script&gt;&quot;",
    ):
        assert part in html, (part, html)
    assert html.index("</ul>") < html.index("<ol>")  # two lists stay two lists


@pytest.mark.parametrize("code", ["a`b", "``x``", "`", " lead", "a\\", "<b>"])
def test_code_spans_hold_any_text(code: str) -> None:
    html = render(f"x {code_span(code)} y")
    assert "<code>" in html
    assert _text(html) == f"x {code.strip()} y"


def test_fenced_code_outlasts_backticks_inside() -> None:
    code = "a = '''\n```\n````\n'''"
    html = render(fenced(code, 'python" onload=x'))
    assert _text(html).replace(" ", "") == code.replace("\n", "").replace(" ", "")
    assert "onload=" not in html


def test_text_and_heading_escape_everything_that_could_be_syntax() -> None:
    value = "# <b>*x*</b> [y](z) {: a } | = : ~ & </title>"
    assert _text(render(text(value))) == value
    html = render("# " + heading(value))
    assert _text(html) == value.replace("</", "<\u200b/")
    assert "<b>" not in html


def test_headings_carry_the_sites_prefixed_ids() -> None:
    """A heading "Search" is `md-search` on the site; MkDocs' toc would call it `search`, an id
    the theme uses. The site's ids ride along as the heading's first child, unique on the page
    across every field rendered onto it (the plugin moves them onto the heading)."""
    from nanopedia.site.markdown import PageEnv
    from nanopedia.site.markdown import render as site_render

    ids: set[str] = set()
    first = block("# Search\n\ntext\n\n## Search *now*", resolve, ids=ids)
    second = block("> # Search", resolve, nested=True, ids=ids)
    assert first.splitlines()[0] == '#### <a id="md-search"></a>Search'
    assert '##### <a id="md-search-now"></a>Search <em>now</em>' in first
    assert '> #### <a id="md-search-2"></a>Search' in second
    assert ids == {"md-search", "md-search-now", "md-search-2"}
    env = PageEnv()
    site = site_render("# Search\n\ntext\n\n## Search *now*", env) + site_render("> # Search", env)
    assert re.findall(r'<h\d id="([^"]+)"', site) == ["md-search", "md-search-now", "md-search-2"]
    html = render(first)
    assert '<a id="md-search"></a>' in html and '<a id="md-search-now"></a>' in html


REWRITES = [
    (
        "a table's alignment",
        "| l | r | c | n |\n|:--|--:|:-:|---|\n| 1 | 2 | 3 | 4 |",
        "| l | r | c | n |\n| :--- | ---: | :---: | --- |\n| 1 | 2 | 3 | 4 |",
    ),
    ("an ordered list keeps its start", "3. three\n4. four", "3.  three\n4.  four"),
    ("a rule", "a\n\n---\n\nb", "a\n\n* * *\n\nb"),
    ("a hard break", "one  \ntwo", "one<br>two"),
    ("a soft break is a space", "one\ntwo", "one two"),
    ("a quote of two paragraphs", "> one\n>\n> two", "> one\n>\n> two"),
    ("a quote holding code", "> text\n>\n>     code <b>", "> text\n>\n>     code <b>"),
    (
        "a heading below h6 stays h6",
        "### deep\n\n#### deeper",
        '###### <a id="md-deep"></a>deep\n\n###### <a id="md-deeper"></a>deeper',
    ),
    (
        "a fence's language is its first word",
        "```python title=x\nx = 1\n```",
        "```python\nx = 1\n```",
    ),
    ("an indented block has no language", "    x = 1\n    y = 2", "```\nx = 1\ny = 2\n```"),
    ("two lists stay two lists", "- a\n\n1. b", "-   a\n\n<!-- -->\n\n1.  b"),
    ("a loose list", "- a\n\n- b", "-   a\n\n-   b"),
    ("a tight list with a nested list", "- a\n  - b\n- c", "-   a\n    -   b\n-   c"),
    ("a second paragraph in an item", "- a\n\n  more", "-   a\n\n    more"),
    ("an empty item", "-\n- b", "-\n-   b"),
    (
        "emphasis, strong and strike",
        "*e* **s** ~~d~~",
        "<em>e</em> <strong>s</strong> <del>d</del>",
    ),
    (
        "an image is a link to it",
        "![alt](https://x.example/i.png)",
        "[alt](https://x.example/i.png)",
    ),
    (
        "an image without alt text",
        "![](https://x.example/i.png)",
        "[https&#58;//x\\.example/i\\.png](https://x.example/i.png)",
    ),
    ("a link to an entry", "[b](entry:beta#cause-x)", "[b](beta.md#cause-x)"),
    ("a blank fence", "```\n```", "```\n\n```"),
    ("html block", "<div>\nx\n</div>", "&#60;div\\> x &#60;/div\\>"),
    (
        "an entry link in a heading",
        "# See [b](entry:beta)",
        '#### <a id="md-see-b-entry-beta"></a>See [b](beta.md)',
    ),
    (
        "an entry link in a table",
        "| a |\n|---|\n| [b](entry:beta) |",
        "| a |\n| --- |\n| [b](beta.md) |",
    ),
    ("an entry link in a list", "- [b](entry:beta)", "-   [b](beta.md)"),
    ("an entry link in a quote", "> [b](entry:beta)", "> [b](beta.md)"),
    ("an entry link in emphasis", "*[b](entry:beta)*", "<em>[b](beta.md)</em>"),
    ("a heading in a list item", "- # h", '-   #### <a id="md-h"></a>h'),
    (
        "an item that starts with code goes on after it",
        "-     code\n\n  more",
        "-   <!-- -->\n\n        code\n\n    more",
    ),
    ("a loose list with a nested list", "- a\n\n- b\n  - c", "-   a\n\n-   b\n\n    -   c"),
    (
        "code with a blank line in a list",
        "- a\n\n  ```\n  x\n\n  y\n  ```",
        "-   a\n\n        x\n\n        y",
    ),
    ("nested code keeps trailing spaces", "> ```\n> x  \n> ```", ">     x  "),
    ("nested code shows control characters", "> ```\n> a\x01b\n> ```", ">     a�b"),
    ("a fence's info of three words", "```python linenums 1\nx\n```", "```python\nx\n```"),
    (
        "an entry image inside a link",
        "[![a](entry:beta)](https://x.example)",
        "[[a](beta.md)](https://x.example)",
    ),
    ("nested code ending in a letter", "> ```\n> X\n> ```", ">     X"),
]
"""Entry markdown and exactly the Markdown the MkDocs pages carry for it."""


@pytest.mark.parametrize(
    "source, markdown", [r[1:] for r in REWRITES], ids=[r[0] for r in REWRITES]
)
def test_entry_markdown_is_rewritten_as_exactly_this_markdown(source: str, markdown: str) -> None:
    assert block(source, resolve_here) == markdown


def resolve_here(href: str) -> str:
    """`entry:beta#x` as `beta.md#x`, the shape the plugin's resolver gives."""
    target = href.removeprefix("entry:")
    return target.replace("#", ".md#", 1) if "#" in target else target + ".md"


ESCAPES = [
    ("!", "\\!", "\\!"),
    ('"', "&#34;", '"'),
    ("#", "\\#", "\\#"),
    ("$", "&#36;", "$"),
    ("%", "&#37;", "%"),
    ("&", "&#38;", "&amp;"),
    ("'", "&#39;", "'"),
    ("(", "\\(", "\\("),
    (")", "\\)", "\\)"),
    ("*", "\\*", "\\*"),
    ("+", "\\+", "\\+"),
    ("-", "\\-", "\\-"),
    (".", "\\.", "\\."),
    (":", "&#58;", ":"),
    ("<", "&#60;", "&lt;"),
    ("=", "&#61;", "="),
    (">", "\\>", "\\>"),
    ("?", "&#63;", "?"),
    ("@", "&#64;", "@"),
    ("[", "\\[", "\\["),
    ("\\", "\\\\", "\\\\"),
    ("]", "\\]", "\\]"),
    ("^", "&#94;", "^"),
    ("_", "\\_", "\\_"),
    ("`", "\\`", "\\`"),
    ("{", "\\{", "\\{"),
    ("|", "&#124;", "|"),
    ("}", "\\}", "\\}"),
    ("~", "&#126;", "~"),
    ("a", "a", "a"),
    (" ", " ", " "),
    ("\x01", "�", "�"),
    ("\t", " ", " "),
]
"""Each character Python-Markdown or an extension reads as syntax, as text and in a heading."""


@pytest.mark.parametrize(
    "char, as_text, in_heading", ESCAPES, ids=[f"U+{ord(c):04X}" for c, _, _ in ESCAPES]
)
def test_every_syntax_character_is_escaped_as_text_and_in_a_heading(
    char: str, as_text: str, in_heading: str
) -> None:
    assert text(char) == as_text
    assert heading(char) == in_heading


def test_a_heading_cannot_close_an_element_or_carry_a_control_character() -> None:
    assert heading("a\x01</b>") == "a\ufffd&lt;\u200b/b\\>"


@pytest.mark.parametrize(
    "code, language, markdown",
    [
        ("x  \n\n", "py", "```py\nx  \n```"),
        ("\nx", "py", "```py\n\nx\n```"),
        ("a ``` b", "", "````\na ``` b\n````"),
        ("x", 'py" on\x01', "```pyon\nx\n```"),
        ("a\x01b", "", "```\na\ufffdb\n```"),
        ("aX\n", "", "```\naX\n```"),
    ],
    ids=[
        "trailing spaces",
        "leading blank line",
        "a longer fence",
        "language",
        "control",
        "last letter",
    ],
)
def test_a_fenced_block_keeps_the_code_as_typed_inside_a_long_enough_fence(
    code: str, language: str, markdown: str
) -> None:
    assert fenced(code, language) == markdown


def test_a_link_target_loses_control_characters_and_encodes_spaces() -> None:
    assert url("https://x\x01y z") == "https://xy%20z"
