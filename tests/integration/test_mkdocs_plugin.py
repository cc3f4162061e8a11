"""The MkDocs plugin, tested as a team would use it: a small MkDocs project in a temp dir, built by
MkDocs's own `build` command with the default theme and with Material, then read back (pages, links,
anchors, nav, search index) and opened in Chromium.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, built_once
from mkdocs.__main__ import cli as mkdocs_cli

from nanopedia.content.corpus import gather
from nanopedia.site.views import ACTION_TITLES, DOMAIN_TITLES

CORPUS = FIXTURES / "corpus"
STRICT_VALIDATION = """\
validation:
  omitted_files: warn
  absolute_links: warn
  unrecognized_links: warn
  anchors: warn
"""
THEMES = {
    # Offline on purpose: no highlight.js or Google Fonts from a CDN, so the browser test can
    # insist on zero outside requests. Each theme highlights code the way its users configure it.
    "mkdocs": """\
theme:
  name: mkdocs
  highlightjs: false
markdown_extensions:
  - codehilite
nav:
  - Home: index.md
  - Failures: failures/index.md
  - About: about.md
""",
    "material": """\
theme:
  name: material
  font: false
markdown_extensions:
  - pymdownx.highlight
  - pymdownx.superfences
""",
}
HOSTILE_EXTENSIONS = """\
markdown_extensions:
  - attr_list
  - md_in_html
  - admonition
  - def_list
  - pymdownx.details
  - pymdownx.snippets
  - pymdownx.superfences
  - toc:
      permalink: true
"""


@dataclass
class Built:
    root: Path
    code: int
    log: str

    @property
    def site(self) -> Path:
        return self.root / "site"

    def page(self, path: str) -> str:
        return (self.site / path / "index.html").read_text(encoding="utf-8")


def make_project(root: Path, entries: Path, config: str) -> Path:
    """A team's MkDocs project: its own pages, the two plugin lines, and the entries beside it."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Team docs\n\nOur own page.\n", encoding="utf-8")
    (root / "docs" / "about.md").write_text("# About\n\nWho we are.\n", encoding="utf-8")
    if entries != root / "entries":
        shutil.copytree(entries, root / "entries")
    (root / "mkdocs.yml").write_text(
        "site_name: Team docs\n"
        + config
        + STRICT_VALIDATION
        + "plugins:\n  - search\n  - nanopedia:\n      entries: entries\n      section: failures\n",
        encoding="utf-8",
    )
    return root


def build(root: Path, *args: str) -> Built:
    """`mkdocs build` run in this process through MkDocs's own command (click's runner, as
    MkDocs tests its CLI), so the plugin runs where coverage and mutation testing see it; the
    installed command runs in a process of its own in test_packaging.py."""
    old = Path.cwd()
    os.chdir(root)
    try:
        run = CliRunner().invoke(mkdocs_cli, ["build", *args], env={"NO_MKDOCS_2_WARNING": "1"})
    finally:
        os.chdir(old)
    # A crash prints its traceback, as Python does where the command runs alone.
    crash = run.exception
    if isinstance(crash, SystemExit | None):
        return Built(root, run.exit_code, run.output)
    return Built(root, run.exit_code, run.output + "".join(traceback.format_exception(crash)))


def shared_build(
    factory: pytest.TempPathFactory, name: str, setup: Callable[[Path], Path], *args: str
) -> Built:
    """Build a project once per test run, even with several xdist workers (conftest's
    `built_once`), and read its result back."""

    def make(out: Path) -> None:
        out.mkdir()
        result = build(setup(out / "project"), *args)
        (out / "result.json").write_text(json.dumps([result.code, result.log]), encoding="utf-8")

    made = built_once(factory, f"mkdocs-plugin-{name}", make)
    code, log = json.loads((made / "result.json").read_text(encoding="utf-8"))
    return Built(made / "project", code, log)


@pytest.fixture(scope="module", params=sorted(THEMES))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The fixture corpus in a strict build, once per theme."""
    theme = THEMES[request.param]
    result = shared_build(
        tmp_path_factory, request.param, lambda root: make_project(root, CORPUS, theme), "--strict"
    )
    assert result.code == 0, result.log
    return result


@pytest.fixture(scope="module")
def catalog() -> Any:
    found, problems = gather(CORPUS)
    assert problems == []
    return found


def test_strict_build_has_no_warnings(built: Built) -> None:
    assert "WARNING" not in built.log
    assert "ERROR" not in built.log


def test_every_entry_and_tag_has_a_page(built: Built, catalog: Any) -> None:
    for entry in catalog.entries:
        page = built.page(f"failures/entries/{entry.id}")
        assert f">{entry.title}<" in page.replace('<a class="headerlink"', "<")
    for slug, tag in catalog.tags.items():
        assert f"#{tag.title}" in built.page(f"failures/tags/{slug}")
    assert "Tags" in built.page("failures/tags")
    assert "Mixed precision" in built.page("failures")


def test_entry_pages_say_what_to_do_and_how_far_the_entry_was_checked(
    built: Built, catalog: Any
) -> None:
    for entry in catalog.entries:
        page = built.page(f"failures/entries/{entry.id}")
        for cause in entry.root_causes:
            answer = f"{DOMAIN_TITLES[cause.domain]} · {ACTION_TITLES[cause.action]}"
            assert page.count(answer) >= 2  # in the quick answer and at the cause
        assert ("Reproduced in CI" if entry.repro else "No CPU repro") in page
        assert "Not yet reviewed by a second engineer" in page
        for system in entry.affected_systems:
            for span in system.affected:
                assert span.words() in page


def test_entry_and_tag_pages_show_each_text_of_the_entry(built: Built, catalog: Any) -> None:
    """The lists a reader acts on (symptoms, confirm, prevention) and each tag page's summary of
    its entries, as Markdown rendered: `code` as code, no Markdown left over."""
    alpha = html.unescape(built.page("failures/entries/alpha-failure"))
    assert "<code>RuntimeError: expected scalar type BFloat16 but found Float</code>" in alpha
    assert "Print the dtype of inputs and weights." in alpha
    assert "Run one bf16 step in CI." in alpha
    for slug in catalog.tags:
        page = built.page(f"failures/tags/{slug}")
        for entry in catalog.entries:
            if slug in entry.tags:
                first = entry.summary.split(".")[0]
                assert first in page, (slug, entry.id)
    assert "weights meet fp32 inputs" in built.page("failures/tags/fsdp")


class _Links(HTMLParser):
    """Every `href` and every `id` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "href" and value:
                self.hrefs.append(value)
            if name == "id" and value:
                self.ids.add(value)
            if name.startswith("on"):
                self.handlers.append(f"<{tag} {name}={value!r}>")


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_links_and_anchors_between_generated_pages_resolve(built: Built) -> None:
    """Related, back links, tags, symptom → cause anchors and in-text entry links all land."""
    pages = sorted((built.site / "failures").rglob("index.html"))
    assert len(pages) > 4
    checked = set()
    for page in pages:
        for href in _parse(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("/"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            assert target.is_file(), f"{page}: {href}"
            if parts.fragment:
                assert parts.fragment in _parse(target).ids, f"{page}: {href}"
            checked.add(href)
    assert "#cause-cast" in checked
    assert "../beta-failure/" in checked  # in-text `entry:beta-failure` and `related`
    assert "../alpha-failure/" in checked  # the back link on beta


def test_no_id_appears_twice(built: Built) -> None:
    page = built.site / "failures" / "entries" / "alpha-failure" / "index.html"
    text = page.read_text(encoding="utf-8")
    for ident in _parse(page).ids:
        assert text.count(f'id="{ident}"') == 1, ident


def test_search_index_contains_every_entry(built: Built, catalog: Any) -> None:
    index = json.loads((built.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    by_location = {doc["location"]: doc for doc in index["docs"]}
    for entry in catalog.entries:
        doc = by_location[f"failures/entries/{entry.id}/"]
        assert doc["title"] == entry.title
    assert any("watchdog timeout" in doc["text"] for doc in index["docs"])


def test_nav_has_the_section(built: Built) -> None:
    home = (built.site / "index.html").read_text(encoding="utf-8")
    for title in ("Failures", "Mixed precision", "Distributed training", "Tags", "#FSDP"):
        assert title in home, title
    if "md-nav" not in home:  # default theme: the hand-written nav placed it before "About"
        assert home.index("Home") < home.index("Failures") < home.index("About")


def test_code_examples_go_through_the_sites_highlighter(built: Built) -> None:
    page = built.page("failures/entries/alpha-failure")
    assert 'class="codehilite"' in page or 'class="highlight"' in page
    assert '<span class="n">mask</span>' in page


def test_invalid_entry_fails_the_build_at_its_location(tmp_corpus: Path, tmp_path: Path) -> None:
    path = tmp_corpus / "alpha-failure.yaml"
    text = path.read_text(encoding="utf-8").replace("tags: [fsdp, bf16]", "tags: [fsdp, bfl6]")
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index("tags: [fsdp, bfl6]") + 1
    col = len("tags: [fsdp, ") + 1
    result = build(make_project(tmp_path / "project", tmp_corpus, THEMES["mkdocs"]))
    assert result.code == 1
    assert (
        f"nanopedia: entries/alpha-failure.yaml:{line}:{col}: error[E023]: unknown tag 'bfl6'"
        in result.log
    ), result.log
    assert "did you mean 'bf16'?" in result.log
    assert "Traceback" not in result.log
    assert not (result.site / "failures").exists()


def test_a_docs_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", CORPUS, THEMES["material"])
    (root / "docs" / "failures").mkdir()
    (root / "docs" / "failures" / "index.md").write_text("# Ours\n", encoding="utf-8")
    result = build(root)
    assert result.code == 1
    assert "failures/index.md already exist(s)" in result.log
    assert "Traceback" not in result.log


SUMMARY = (
    "  The alpha failure happens when bf16 weights meet fp32 inputs. "
    "See [beta](entry:beta-failure)."
)
HOSTILE = {
    "title: Alpha failure under FSDP": (
        "title: '</title><script>window.pwned=1</script> Alpha {{ 7*7 }}'"
    ),
    SUMMARY: """\
  The alpha <img src=x onerror="window.pwned=2"> failure {: onclick="window.pwned=3" }

  <div onmouseover="window.pwned=4">raw block</div>

  --8<-- "mkdocs.yml"

  !!! danger "injected"
      admonition

  | a | b |
  |---|---|
  | <b onclick=x>cell</b> | `<i>code</i>` |""",
    "      The visible parameters are fp32 shards.": (
        "      Shards. <script>window.pwned=5</script> {% raw %} ${x} &lt; [b](entry:beta-failure)"
    ),
    "    answer: No.": "    answer: '[ok](https://example.com/a(b)\"c)'",
    "  FSDP casts parameters at module boundaries.": """\
  FSDP casts `<script` parameters.

  <div markdown>

  *inside* <script

  </div>

  -     <script>window.pwned=6</script>
  -     <div markdown>""",
    "    title: Model code casts to self.dtype": (
        "    title: 'Casts to `self.dtype` <b onclick=x>b</b> [x](https://evil.example) *e*'"
    ),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """An entry full of HTML, template syntax and extension syntax, in Material with the usual
    extensions (attr_list, md_in_html, snippets...) switched on to give it every chance."""

    def setup(root: Path) -> Path:
        shutil.copytree(CORPUS, root / "entries")
        path = root / "entries" / "alpha-failure.yaml"
        text = path.read_text(encoding="utf-8")
        for old, new in HOSTILE.items():
            assert old in text, old
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
        config = "theme:\n  name: material\n  font: false\n" + HOSTILE_EXTENSIONS
        return make_project(root, root / "entries", config)

    result = shared_build(tmp_path_factory, "hostile", setup)
    assert result.code == 0, result.log
    return result


def test_hostile_entry_text_stays_text(hostile: Built) -> None:
    page = hostile.site / "failures" / "entries" / "alpha-failure" / "index.html"
    html = page.read_text(encoding="utf-8")
    parsed = _parse(page)
    assert parsed.handlers == []
    assert "<div markdown" not in html and "<script>window.pwned=6" not in html
    assert "&lt;script&gt;window.pwned=6&lt;/script&gt;" in html  # the item's code, as code
    assert "no such anchor" not in hostile.log  # `<script` in code hid no anchor from MkDocs
    # Material prints the title decoded into <title>, where only `</title` could end it.
    title = html[html.index("<title>") : html.index("</title>")]
    assert title.startswith("<title><\u200b/title><script>window.pwned=1<\u200b/script> Alpha")
    body = html.replace(title, "")
    assert "<script>window" not in body and "<div onmouseover" not in body
    assert "{{ 7*7 }}" in html and "49" not in html
    assert "site_name" not in html  # the snippet was not included
    assert 'class="admonition' not in html
    assert not [h for h in parsed.hrefs if "javascript" in h.lower()]
    assert "https://example.com/a%28b%29%22c" in parsed.hrefs
    assert "../beta-failure/" in parsed.hrefs
    # A cause title's code span is code (the quick answer's link, the symptom table, the
    # heading, the fix step that names the cause), the rest text: no tag, no link, no emphasis.
    assert html.count("Casts to <code>self.dtype</code> ") == 4
    assert html.count("</b> [x](https://evil.example) *e*") == 0
    assert "https://evil.example" not in parsed.hrefs


@pytest.fixture
def serve(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Serve a site directory on a free localhost port; returns the base URL."""
    servers = []

    def start(root: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(root))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not test output."""


def test_generated_page_in_a_real_browser(built: Built, watched_page: Any, serve: Any) -> None:
    base = serve(built.site)
    page = watched_page.page
    # The themes fetch their search index after load; navigating before it arrives aborts the
    # request, which would count as a failed one. Let each page go quiet first.
    page.goto(base + "failures/entries/alpha-failure/", wait_until="networkidle")
    assert page.locator("h1").first.inner_text().startswith("Alpha failure under FSDP")
    page.locator("table a[href='#cause-cast']").click()
    assert page.evaluate("location.hash") == "#cause-cast"
    assert page.locator("#cause-cast").count() == 1
    page.locator(
        "article a[href='../beta-failure/'], div[role=main] a[href='../beta-failure/']"
    ).last.click()
    page.wait_for_url("**/failures/entries/beta-failure/")
    page.wait_for_load_state("networkidle")
    assert page.locator("h1").first.inner_text().startswith("Beta failure in NCCL collectives")
    page.locator("a[href='../alpha-failure/']").last.click()  # the back link
    page.wait_for_url("**/failures/entries/alpha-failure/")
    page.wait_for_load_state("networkidle")
    watched_page.assert_clean()


def test_hostile_page_runs_nothing_in_a_real_browser(
    hostile: Built, watched_page: Any, serve: Any
) -> None:
    page = watched_page.page
    page.goto(serve(hostile.site) + "failures/entries/alpha-failure/")
    assert page.evaluate("window.pwned") is None
    title = page.title().replace("\u200b", "")
    assert title.startswith("</title><script>window.pwned=1</script> Alpha {{ 7*7 }}")
    assert "<img src=x onerror=" in page.locator("blockquote").first.inner_text()
    for link in page.locator("a").all():
        assert "javascript" not in (link.get_attribute("href") or "").lower()
    watched_page.assert_clean()


def test_a_former_id_sends_the_reader_to_the_entry(built: Built) -> None:
    """`alpha-failure` was once `alpha-old`: that address still leads to it."""
    moved = built.site / "failures" / "entries" / "alpha-old" / "index.html"
    text = moved.read_text(encoding="utf-8")
    assert text.startswith('<!doctype html>\n<html lang="en">')  # theme/templates/moved.html
    assert '<meta http-equiv="refresh" content="0; url=../alpha-failure/">' in text
    assert '<a href="../alpha-failure/">Alpha failure under FSDP</a>' in text
    target = (moved.parent / "../alpha-failure/index.html").resolve()
    assert "Alpha failure under FSDP" in target.read_text(encoding="utf-8")


def test_a_hostile_title_stays_text_on_the_former_id_page(hostile: Built) -> None:
    text = (hostile.site / "failures" / "entries" / "alpha-old" / "index.html").read_text()
    assert "<script>" not in text and "&lt;/title&gt;&lt;script&gt;window.pwned=1" in text


def test_repros_and_checked_with_are_on_the_mkdocs_page(built: Built) -> None:
    page = built.page("failures/entries/alpha-failure")
    assert 'id="reproduce"' in page and "Checked with torch 2.13.0" in page
    assert "Reproduced with PyTorch" in page and "nanopedia verify alpha-failure" in page
    assert 'id="repro-float-input"' in page and "sys.exit" in page  # the broken script


HEADINGS = (
    "mechanism: |\n  FSDP casts parameters at module boundaries.\n",
    "mechanism: |\n  FSDP casts parameters at module boundaries.\n\n  # Search\n\n"
    "  The first.\n\n  ## Search\n\n  The second, under the first.\n",
)


@pytest.fixture(scope="module")
def headings(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Entry text with headings named "Search", in Material with permalinks on the headings."""

    def setup(root: Path) -> Path:
        shutil.copytree(CORPUS, root / "entries")
        path = root / "entries" / "alpha-failure.yaml"
        text = path.read_text(encoding="utf-8")
        assert HEADINGS[0] in text
        path.write_text(text.replace(HEADINGS[0], HEADINGS[1]), encoding="utf-8")
        config = (
            "theme:\n  name: material\n  font: false\n"
            "markdown_extensions:\n  - toc:\n      permalink: true\n"
        )
        return make_project(root, root / "entries", config)

    result = shared_build(tmp_path_factory, "headings", setup, "--strict")
    assert result.code == 0, result.log
    return result


def test_entry_headings_get_the_sites_prefixed_ids(headings: Built) -> None:
    """As on the site, `md-search` and `md-search-2`, never the theme's `search`: in the
    heading, its permalink, the table of contents and the search index."""
    page = headings.site / "failures" / "entries" / "alpha-failure" / "index.html"
    html = page.read_text(encoding="utf-8")
    found = re.findall(r'<(h[4-6]) id="([^"]+)">Search<a class="headerlink" href="#([^"]+)"', html)
    assert found == [("h4", "md-search", "md-search"), ("h5", "md-search-2", "md-search-2")]
    parsed = _parse(page)
    assert not {"search", "search_1"} & parsed.ids
    assert "#md-search" in parsed.hrefs and "#md-search-2" in parsed.hrefs  # the toc
    assert "#search" not in parsed.hrefs and '<a id="md-' not in html
    for ident in parsed.ids:
        assert html.count(f'id="{ident}"') == 1, ident
    index = json.loads((headings.site / "search" / "search_index.json").read_text("utf-8"))
    locations = {doc["location"] for doc in index["docs"]}
    assert "failures/entries/alpha-failure/#md-search-2" in locations
