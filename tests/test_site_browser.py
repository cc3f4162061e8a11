"""The built site in a real Chromium from file://: navigation works and nothing is blocked or
fetched from elsewhere (no console errors, no failed requests, no CSP violations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import FIXTURES

from generator.build import build


def test_home_tag_entry_related_and_back(tmp_path: Path, watched_page: Any) -> None:
    out = tmp_path / "site"
    config = FIXTURES / "build-config" / "nanopedia.toml"
    build(FIXTURES / "corpus", out, config, use_cache=False, jobs=1)
    page = watched_page.page
    page.goto((out / "index.html").as_uri())
    assert page.locator("h1").count() == 1
    page.click("text=#FSDP")
    assert page.url.endswith("/tags/fsdp.html")
    page.click("h2 >> text=Alpha failure under FSDP")
    assert page.url.endswith("/entries/alpha-failure.html")
    assert page.locator("#cause-cast").is_visible()
    page.click("#related >> text=Beta failure in NCCL collectives")
    assert page.url.endswith("/entries/beta-failure.html")
    page.click("#referenced-by >> text=Alpha failure under FSDP")
    assert page.url.endswith("/entries/alpha-failure.html")
    color = page.evaluate("getComputedStyle(document.querySelector('.quick')).borderLeftStyle")
    assert color == "solid", "the stylesheet did not load"
    page.goto((out / "entries" / "alpha-old.html").as_uri())
    page.wait_for_url("**/entries/alpha-failure.html")
    watched_page.assert_clean()
