"""The built site in a real Chromium from file://: navigation works and nothing is blocked or
fetched from elsewhere (no console errors, no failed requests, no CSP violations)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from conftest import FIXTURES
from tools import held, page_types

from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build

PHONE = {"width": 390, "height": 844}
WIDER = """() => {
  const width = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > width + 1 && !e.closest('pre, .table-scroll'))
    .slice(0, 3).map(e => e.tagName.toLowerCase() + ' "' + e.textContent.trim().slice(0, 60) + '"');
}"""
"""What sticks out of the page on the right, outside the blocks that scroll on their own."""


def until(page: Any, expression: str, timeout_s: float = 10.0) -> None:
    """Waits until `expression` is true in the page. Not `wait_for_function`: its polling
    evaluates strings inside the page, which the page's CSP (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout_s} s: {expression}"
        page.wait_for_timeout(50)


def follow(page: Any, selector: str, lands_on: str) -> None:
    """Click a link and wait until the next page has loaded with its styles and scripts.

    Without the wait, a loaded machine lets the next click abort the page's deferred script
    (reported as a failed request) or read styles before the stylesheet arrived.
    """
    page.click(selector)
    page.wait_for_url("**" + lands_on)
    page.wait_for_load_state("load")


def test_home_tag_entry_related_and_back(tmp_path: Path, watched_page: Any) -> None:
    out = tmp_path / "site"
    config = FIXTURES / "build-config" / "nanopedia.toml"
    build(Request(FIXTURES / "corpus", out, config, use_cache=False, jobs=1))
    page = watched_page.page
    page.goto((out / "index.html").as_uri())
    assert page.locator("h1").count() == 1
    follow(page, "text=#FSDP", "/tags/fsdp.html")
    follow(page, "h2 >> text=Alpha failure under FSDP", "/entries/alpha-failure.html")
    assert page.locator("#cause-cast").is_visible()
    follow(page, "#related >> text=Beta failure in NCCL collectives", "/entries/beta-failure.html")
    follow(page, "#referenced-by >> text=Alpha failure under FSDP", "/entries/alpha-failure.html")
    color = page.evaluate("getComputedStyle(document.querySelector('.quick')).borderLeftStyle")
    assert color == "solid", "the stylesheet did not load"
    page.goto((out / "entries" / "alpha-old.html").as_uri())
    page.wait_for_url("**/entries/alpha-failure.html")
    watched_page.assert_clean()


def test_no_page_scrolls_sideways_on_a_phone(repo_site: Path, browser: Any) -> None:
    """Every page of the repository's site at 390 px: long paths, error names and reference
    titles wrap; code blocks and tables scroll inside themselves."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    wide = []
    for path in sorted(repo_site.rglob("*.html")):
        redirect = 'http-equiv="refresh"' in path.read_text(encoding="utf-8")
        with held(path) if redirect else nullcontext(path) as shown:
            page.goto(shown.as_uri(), wait_until="load")
            scroll, client = page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            if scroll > client:
                wide.append(
                    f"{path.relative_to(repo_site)}: {scroll} px wide, {page.evaluate(WIDER)}"
                )
    context.close()
    assert wide == [], "pages wider than a 390 px phone:\n" + "\n".join(wide)


def test_long_entry_toc_stays_beside_and_marks_the_section(repo_site: Path, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(page_types(repo_site)["entry"].as_uri(), wait_until="load")
    toc, article = page.locator(".toc"), page.locator("#symptoms")
    assert toc.bounding_box()["x"] > article.bounding_box()["x"] + article.bounding_box()["width"]
    for section in ("fix", "references"):
        page.evaluate(f"document.getElementById('{section}').scrollIntoView()")
        page.locator(f".toc a[href='#{section}'][aria-current=true]").wait_for()
        assert page.locator(".toc a[aria-current]").count() == 1
        top = toc.bounding_box()["y"]
        assert 0 <= top < 100, f"the contents box scrolled away (top at {top} px)"
    page.click(".toc-top a")
    until(page, "Math.abs(document.getElementById('main').getBoundingClientRect().top) < 2")
    assert page.evaluate("document.activeElement.id") == "main"
    context.close()


def test_every_code_block_has_a_keyboard_copy_button(repo_site: Path, browser: Any) -> None:
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(page_types(repo_site)["entry"].as_uri(), wait_until="load")
    blocks = page.locator("main pre")
    buttons = page.locator(".code-block > button.copy")
    assert blocks.count() > 2 and buttons.count() == blocks.count()
    button = page.locator(".code-block > button.copy").nth(1)
    button.focus()
    page.keyboard.press("Enter")
    until(page, "document.getElementById('copy-status').textContent === 'Copied'")
    code = page.locator(".code-block").nth(1).locator("pre code").text_content()
    assert page.evaluate("navigator.clipboard.readText()") == code
    assert button.text_content() == "Copied"
    context.close()


def test_copy_falls_back_when_the_clipboard_api_is_missing(repo_site: Path, browser: Any) -> None:
    """Some file:// pages get no navigator.clipboard: the button copies through a selection."""
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.add_init_script(
        "window.__clipboard = navigator.clipboard; Object.defineProperty("
        "Navigator.prototype, 'clipboard', {get: () => undefined})"
    )
    page.goto(page_types(repo_site)["entry"].as_uri(), wait_until="load")
    page.locator("button.copy").first.press("Enter")
    until(page, "document.getElementById('copy-status').textContent === 'Copied'")
    code = page.locator(".code-block pre code").first.text_content()
    assert page.evaluate("window.__clipboard.readText()") == code
    assert page.locator("textarea").count() == 0
    context.close()


def test_print_shows_the_whole_entry_without_buttons(repo_site: Path, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(page_types(repo_site)["entry"].as_uri(), wait_until="load")
    page.emulate_media(media="print")
    shown = page.evaluate("""() => [...document.querySelectorAll('.entry > section')]
        .filter(s => getComputedStyle(s).display === 'none').map(s => s.id)""")
    assert shown == []
    for hidden in (".copy", ".to-top", ".toc", ".site-header"):
        assert (
            page.evaluate(f"getComputedStyle(document.querySelector('{hidden}')).display") == "none"
        ), hidden
    assert page.evaluate("getComputedStyle(document.querySelector('.entry')).display") == "block"
    assert page.evaluate("getComputedStyle(document.querySelector('.toc')).position") == "static"
    context.close()


def test_search_code_loads_when_the_box_is_first_used(repo_site: Path, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(page_types(repo_site)["entry"].as_uri(), wait_until="load")
    names = (
        "[...document.querySelectorAll('script[src], link[rel=stylesheet]')]"
        ".map(e => (e.src || e.href).split('/').pop())"
    )
    before = page.evaluate(names)
    assert "search-boot.js" in before and "search.js" not in before and "search.css" not in before
    assert page.locator("#search-q").is_visible()
    page.click("#search-q")
    page.keyboard.type("dtype")
    page.locator("#search-suggestions .search-entry").first.wait_for()
    assert {"search.js", "search.css", "index.js"} <= set(page.evaluate(names))
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.search-suggestions')).position")
        == "absolute"
    ), "search.css did not apply"
    context.close()
