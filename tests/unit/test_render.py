"""`nanopedia/site/render.py` and the theme: pages rendered from view data, escaped, and each page
kind carrying the Content Security Policy it needs, asserted on the built pages themselves."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES
from tools import page_types

from nanopedia.errors import NanopediaError
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.site import markdown
from nanopedia.site.render import render, static_files
from nanopedia.site.views import Page

BASE_POLICY = {
    "default-src": ["'none'"],
    "style-src": ["'self'"],
    "img-src": ["'self'"],
    "script-src": ["'self'"],
    "connect-src": ["'self'"],
    "base-uri": ["'none'"],
    "form-action": ["'none'"],
}
POLICIES = {
    kind: BASE_POLICY for kind in ("entry", "tag", "tags", "index", "search", "404", "redirect")
}
POLICIES["diagnose"] = {**BASE_POLICY, "connect-src": ["'none'"], "worker-src": ["blob:"]}
"""The diagnosis page fetches nothing (the log never leaves the browser) and runs its matcher
in a worker made from a blob."""


class Head(HTMLParser):
    """The CSP meta tags of a page, and what loads or runs before and after them."""

    def __init__(self) -> None:
        super().__init__()
        self.policies: list[str] = []
        self.before: list[str] = []  # scripts and styles before the first policy
        self.inline: list[str] = []  # what a policy without 'unsafe-inline' would block
        self.in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "head":
            self.in_head = True
        if tag == "meta" and (found.get("http-equiv") or "").lower() == "content-security-policy":
            assert self.in_head, "a CSP meta outside <head> is ignored"
            self.policies.append(found.get("content") or "")
        elif tag in ("script", "style") or (tag == "link" and found.get("rel") == "stylesheet"):
            if not self.policies:
                self.before.append(tag)
            if tag == "style" or (tag == "script" and not found.get("src")):
                self.inline.append(tag)
        self.inline += [
            f"{tag} {name}" for name, _ in attrs if name.startswith("on") or name == "style"
        ]

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.in_head = False


def policy(text: str) -> dict[str, list[str]]:
    directives = [d.split() for d in text.split(";") if d.strip()]
    return {d[0]: d[1:] for d in directives}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    site = tmp_path_factory.mktemp("render") / "site"
    build(
        Request(
            FIXTURES / "corpus",
            site,
            FIXTURES / "build-config" / "nanopedia.toml",
            use_cache=False,
            jobs=1,
        )
    )
    return page_types(site)


def test_every_page_kind_is_built(pages: dict[str, Path]) -> None:
    assert sorted(pages) == sorted(POLICIES)


@pytest.mark.parametrize("kind", sorted(POLICIES))
def test_each_page_kind_states_its_policy_before_anything_loads(
    pages: dict[str, Path], kind: str
) -> None:
    head = Head()
    head.feed(pages[kind].read_text(encoding="utf-8"))
    assert len(head.policies) == 1, head.policies
    assert policy(head.policies[0]) == POLICIES[kind]
    assert head.before == []  # a policy applies only to what follows it
    assert head.inline == []  # nothing the policy would block


def theme_with(tmp_path: Path, name: str, template: str) -> Path:
    (tmp_path / "templates").mkdir(parents=True)
    (tmp_path / "templates" / name).write_text(template, encoding="utf-8")
    return tmp_path


def test_a_template_syntax_error_is_located_at_its_line(tmp_path: Path) -> None:
    theme = theme_with(tmp_path, "bad.html", "<p>fine</p>\n{% if %}\n")
    with pytest.raises(NanopediaError) as caught:
        render(Page("x.html", "bad.html", {}), theme)
    [found] = caught.value.problems
    assert (found.code, str(found.location)) == ("E040", "theme/templates/bad.html:2:1")


def test_a_missing_value_names_the_template_its_line_and_the_page(tmp_path: Path) -> None:
    theme = theme_with(tmp_path, "page.html", "<p>fine</p>\n\n{{ missing.title }}\n")
    with pytest.raises(NanopediaError) as caught:
        render(Page("entries/x.html", "page.html", {}), theme)
    [found] = caught.value.problems
    assert (found.code, str(found.location)) == ("E040", "theme/templates/page.html:3:1")
    assert found.message.endswith("(while rendering entries/x.html)")


def test_a_mistake_in_an_included_template_is_located_there(tmp_path: Path) -> None:
    theme = theme_with(tmp_path, "page.html", '<main>\n{% include "part.html" %}\n</main>\n')
    (theme / "templates" / "part.html").write_text("<p>{{ nothing.here }}</p>\n")
    with pytest.raises(NanopediaError) as caught:
        render(Page("index.html", "page.html", {}), theme)
    [found] = caught.value.problems
    assert str(found.location) == "theme/templates/part.html:1:1"


def test_entry_text_is_escaped_and_never_run_as_a_template(tmp_path: Path) -> None:
    theme = theme_with(tmp_path, "page.html", "<p>{{ text }}</p>\n")
    out = render(Page("x.html", "page.html", {"text": "<script>{{ 7*7 }}</script>"}), theme)
    assert out == b"<p>&lt;script&gt;{{ 7*7 }}&lt;/script&gt;</p>\n"


def test_static_files_are_the_theme_s_own_in_order(tmp_path: Path) -> None:
    theme = theme_with(tmp_path, "page.html", "")
    (theme / "static" / "js").mkdir(parents=True)
    (theme / "static" / "site.css").write_bytes(b"a{}")
    (theme / "static" / "js" / "a.js").write_bytes(b"1;")
    assert list(static_files(theme)) == [("static/js/a.js", b"1;"), ("static/site.css", b"a{}")]


#: Entry text: the HTML of the entry page that shows it (one folder below the site's root).
LINKS = {
    "an image becomes a link to it": (
        "![a chart](https://x.example/c.png)",
        '<p><a href="https://x.example/c.png">a chart</a></p>\n',
    ),
    "an entry link with and without its fragment": (
        "see [beta](entry:beta-failure#fix-1) and [b](entry:beta-failure)",
        '<p>see <a href="../entries/beta-failure.html#fix-1">beta</a> and '
        '<a href="../entries/beta-failure.html">b</a></p>\n',
    ),
    "an image of an entry keeps its alt text's markup": (
        "![**bold** alt](entry:beta-failure)",
        '<p><a href="../entries/beta-failure.html"><strong>bold</strong> alt</a></p>\n',
    ),
    "fenced code is highlighted": (
        "```python\nx = 1\n```",
        '<pre><code class="language-python">x = <span class="m">1</span>\n</code></pre>\n',
    ),
}


@pytest.mark.parametrize("text, html", LINKS.values(), ids=LINKS)
def test_links_images_and_code_render_as_the_page_shows_them(text: str, html: str) -> None:
    assert markdown.render(text, markdown.PageEnv("../entries/")) == html
