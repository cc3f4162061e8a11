"""Entry markdown re-written for Python-Markdown: what renders is the text the entry says, and the
only structure is the structure CommonMark gives it. Rendered here with Python-Markdown and the
extensions a Material site typically enables, without a MkDocs build.
"""

from __future__ import annotations

import html as html_lib
import re
from urllib.parse import urlsplit

import markdown
import pytest

from nanopedia.mkdocs.markdown import block, code_span, fenced, heading, inline, text

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
