"""The built site in a real Chromium from file://: navigation works and nothing is blocked or
fetched from elsewhere (no console errors, no failed requests, no CSP violations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import FIXTURES

from generator.build import build


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
    build(FIXTURES / "corpus", out, config, use_cache=False, jobs=1)
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
