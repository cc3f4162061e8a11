"""A log pasted into a search box is offered for diagnosis, in a real Chromium: the offer carries
the text to diagnose.html in the tab's sessionStorage, and the page diagnoses it at once.

Served over http://127.0.0.1 and opened from file:// (the offline bundles), the search page and
the header box of the single-file bundle: a real clipboard paste of a multi-line log, a click on
"Diagnose this log", the verdict on the diagnose page, and no request that carries a byte of the
log. A pasted line, or a query edited after the paste, gets no offer."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from tools import repo_site

from nanopedia.commands import bundle

__all__ = ["repo_site"]

LOG = (ROOT / "tests" / "logs" / "first-failure-oom" / "torchrun-4rank.log").read_text()
LINES = sum(1 for line in LOG.splitlines() if line.strip())
#: Text of the log that no request may carry (its error line, a clock time of it).
SECRETS = ("OutOfMemoryError", "14:02:12", "Tried%20to%20allocate", "Tried+to+allocate")
OFFER = ".search-diagnose > a"
CARRIED = "nanopedia:diagnose-log"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """A static server of the built site; the icon Chromium asks for is empty, not a 404."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


@pytest.fixture(scope="module")
def served(repo_site: Path) -> Iterator[str]:
    """The built site over http://127.0.0.1 (a port of its own)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(repo_site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def paste(page: Any, box: str, text: str) -> None:
    """`text` pasted into `box` through the system clipboard, as a reader pastes (Ctrl+V), once
    the box's search code is ready."""
    page.wait_for_selector("form[data-ready]", state="attached")
    page.focus(box)
    page.wait_for_selector("form[data-index-state=complete]", state="attached")
    page.evaluate("text => navigator.clipboard.writeText(text)", text)
    page.keyboard.press("Control+V")


def diagnosed_after_the_offer(watched: Any, url: str, box: str) -> Any:
    """Open `url`, paste the log into `box`, follow the offer; the diagnose page when done."""
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    paste(page, box, LOG)
    offer = page.locator(OFFER)
    offer.wait_for()
    assert offer.text_content().startswith(f"Diagnose this log ({LINES} lines)")
    status = page.locator(f"form:has({box}) .search-status").text_content()
    assert status.startswith("A pasted log: the first option diagnoses it.")  # said aloud too
    offer.click()
    page.wait_for_selector("#status[data-state=done]", state="attached")
    assert page.input_value("#log-text") == LOG  # every line, as pasted
    assert page.get_attribute("#verdict", "data-id") == "cuda-out-of-memory"
    assert page.get_attribute("#first-failure", "data-rank") == "3"
    assert page.evaluate("key => sessionStorage.getItem(key)", CARRIED) is None  # taken once
    assert [u for u in requests if any(s in u for s in SECRETS)] == []
    watched.assert_clean()
    return page


@pytest.mark.parametrize("where", ["http", "file"])
def test_a_log_pasted_into_search_is_diagnosed_on_the_diagnose_page(
    where: str, repo_site: Path, served: str, watched_page: Any
) -> None:
    base = served if where == "http" else repo_site.as_uri() + "/"
    page = diagnosed_after_the_offer(watched_page, base + "search.html", "#search-page-q")
    assert page.url == base + "diagnose.html"  # nothing in the address: no query, no fragment
    page.reload()  # the log was taken once: a reload does not diagnose it again
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    assert page.input_value("#log-text") in ("", LOG) and page.locator("#results").is_hidden()


def test_the_single_file_bundles_header_box_carries_the_log_too(
    tmp_path: Path, watched_page: Any
) -> None:
    made = bundle.single_file(ROOT / "entries", tmp_path / "dist", use_cache=False)
    page = diagnosed_after_the_offer(watched_page, made.path.as_uri() + "#/index.html", "#search-q")
    assert page.url.endswith("#/diagnose.html")


def test_a_pasted_line_or_an_edited_paste_gets_no_offer(repo_site: Path, watched_page: Any) -> None:
    page = watched_page.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(repo_site.as_uri() + "/search.html")
    line = next(line for line in LOG.splitlines() if "OutOfMemoryError" in line)
    paste(page, "#search-page-q", line)
    page.locator("#search-results .search-entry").first.wait_for()
    assert page.locator(OFFER).count() == 0  # one line is a query, not a log
    page.fill("#search-page-q", "")
    paste(page, "#search-page-q", LOG)
    page.locator(OFFER).wait_for()
    page.keyboard.type(" nccl")  # the box no longer holds the log alone
    page.wait_for_function(
        "() => document.querySelector('#search-results').textContent.length > 0"
        " && !document.querySelector('.search-diagnose')"
    )
    watched_page.assert_clean()
