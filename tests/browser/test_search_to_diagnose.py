"""A log pasted into a search box is offered for diagnosis, in a real Chromium: the offer, or Enter,
carries the text to diagnose.html in the tab's sessionStorage, and the page diagnoses it at once.

Served over http://127.0.0.1 and opened from file:// (the offline bundles), the search page, the
header box and the header box of the single-file bundle: a real clipboard paste of a multi-line
log, a click on "Diagnose this log" or Enter, the verdict on the diagnose page, and no request, no
address the tab went to and no link offered that carries a byte of the log (a results page's
address holds its query). A pasted line, or a query edited after the paste, gets no offer."""

from __future__ import annotations

import functools
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest
from conftest import ROOT

LOG = (ROOT / "tests" / "logs" / "first-failure-oom" / "torchrun-4rank.log").read_text()
LINES = sum(1 for line in LOG.splitlines() if line.strip())
#: Text of the log that no request or address may carry (its error line, a clock time of it).
SECRETS = ("OutOfMemoryError", "14:02:12", "Tried to allocate")
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
    the box's search code is ready (a header box asks for it when first focused)."""
    page.focus(box)
    page.wait_for_selector(f"form[data-ready]:has({box})", state="attached")
    page.wait_for_selector("form[data-index-state=complete]", state="attached")
    page.evaluate("text => navigator.clipboard.writeText(text)", text)
    page.keyboard.press("Control+V")


def leaks(urls: list[str]) -> list[str]:
    """The URLs that carry text of the log, encoded or not."""
    return [u for u in urls if any(s in unquote_plus(u) for s in SECRETS)]


def watch_addresses(page: Any) -> list[str]:
    """Every URL the page asks for and every address its tab goes to (fragments included), from
    now on."""
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    page.on("framenavigated", lambda f: seen.append(f.url) if f == page.main_frame else None)
    return seen


def diagnosed(watched: Any, url: str, box: str, by: str) -> Any:
    """Open `url`, paste the log into `box`, follow the offer (`by`: "click" on it, or "Enter" in
    the box); the diagnose page when done."""
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    seen = watch_addresses(page)
    page.goto(url)
    paste(page, box, LOG)
    offer = page.locator(OFFER)
    offer.wait_for()
    assert offer.text_content().startswith(f"Diagnose this log ({LINES} lines)")
    status = page.locator(f"form:has({box}) .search-status").text_content()
    assert status.startswith("A pasted log: the first option diagnoses it.")  # said aloud too
    links = page.eval_on_selector_all("[role=option]", "options => options.map(a => a.href)")
    assert leaks(links) == []  # no "Open the results page" for it: its address holds the query
    if by == "click":
        offer.click()
    else:
        page.keyboard.press(by)
    page.wait_for_selector("#status[data-state=done]", state="attached")
    assert page.input_value("#log-text") == LOG  # every line, as pasted
    assert page.get_attribute("#verdict", "data-id") == "cuda-out-of-memory"
    assert page.get_attribute("#first-failure", "data-rank") == "3"
    assert page.evaluate("key => sessionStorage.getItem(key)", CARRIED) is None  # taken once
    assert leaks(seen + [page.url]) == []
    watched.assert_clean()
    return page


@pytest.mark.parametrize("where", ["http", "file"])
def test_a_log_pasted_into_search_is_diagnosed_on_the_diagnose_page(
    where: str, repo_site: Path, served: str, watched_page: Any
) -> None:
    base = served if where == "http" else repo_site.as_uri() + "/"
    page = diagnosed(watched_page, base + "search.html", "#search-page-q", "click")
    assert page.url == base + "diagnose.html"  # nothing in the address: no query, no fragment
    page.reload()  # the log was taken once: a reload does not diagnose it again
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    assert page.input_value("#log-text") in ("", LOG) and page.locator("#results").is_hidden()


@pytest.mark.parametrize("where", ["http", "file"])
@pytest.mark.parametrize("start", ["index.html", "search.html"])
def test_enter_on_a_pasted_log_diagnoses_it_and_puts_it_in_no_address(
    where: str, start: str, repo_site: Path, served: str, watched_page: Any
) -> None:
    base = served if where == "http" else repo_site.as_uri() + "/"
    box = "#search-page-q" if start == "search.html" else "#search-q"
    page = diagnosed(watched_page, base + start, box, "Enter")
    assert page.url == base + "diagnose.html"


def test_enter_before_the_search_code_came_submits_nothing_and_the_paste_is_kept(
    served: str, watched_page: Any
) -> None:
    """On a slow site the reader may paste and press Enter before search.js has come: the form
    is not submitted (its text would be in the address, and the CSP's refusal of it in a report
    a host may collect), and search.js, once there, offers the log that was pasted, every line
    of it (the box keeps none of its line breaks: search-boot.js keeps the paste)."""
    page = watched_page.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    held: list[Any] = []
    page.route("**/static/search.js", lambda route: held.append(route))
    seen = watch_addresses(page)
    page.goto(served + "index.html")
    page.focus("#search-q")
    page.evaluate("text => navigator.clipboard.writeText(text)", LOG)
    page.keyboard.press("Control+V")
    page.keyboard.press("Enter")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "search.js was never asked for"
    page.wait_for_timeout(300)  # time for a submission to go, were it to
    assert page.url == served + "index.html"
    assert watched_page.csp_violations == []  # no submission for form-action 'none' to refuse
    assert not page.locator("form[data-ready]").count()
    held[0].continue_()
    page.locator(OFFER).wait_for()
    # Leaving before the index is in would abort its requests, which the watch counts.
    page.wait_for_selector("form[data-index-state=complete]", state="attached")
    assert page.locator(OFFER).text_content().startswith(f"Diagnose this log ({LINES} lines)")
    page.keyboard.press("Enter")
    page.wait_for_selector("#status[data-state=done]", state="attached")
    assert page.input_value("#log-text") == LOG
    assert page.get_attribute("#verdict", "data-id") == "cuda-out-of-memory"
    assert leaks(seen + [page.url]) == []
    watched_page.assert_clean()


def test_a_pasted_log_is_offered_and_diagnosed_without_the_search_index(
    served: str, watched_page: Any
) -> None:
    """The offer needs no index: it is there while the index loads, and when it cannot."""
    page = watched_page.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.route("**/search/index.js", lambda route: route.abort())
    seen = watch_addresses(page)
    page.goto(served + "index.html")
    page.focus("#search-q")
    page.wait_for_selector("form[data-ready]:has(#search-q)", state="attached")
    page.evaluate("text => navigator.clipboard.writeText(text)", LOG)
    page.keyboard.press("Control+V")
    page.locator(OFFER).wait_for()
    page.wait_for_function(
        "() => document.querySelector('#search-q ~ .search-status').textContent"
        ".startsWith('Search is unavailable')"
    )
    page.keyboard.press("Enter")
    page.wait_for_selector("#status[data-state=done]", state="attached")
    assert page.get_attribute("#verdict", "data-id") == "cuda-out-of-memory"
    assert leaks(seen + [page.url]) == []
    failed = watched_page.failed_requests
    assert failed and all("/search/index.js" in f for f in failed), failed


@pytest.mark.parametrize("by", ["click", "Enter"])
def test_the_single_file_bundles_header_box_carries_the_log_too(
    by: str, repo_single: Path, watched_page: Any
) -> None:
    page = diagnosed(watched_page, repo_single.as_uri() + "#/index.html", "#search-q", by)
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
