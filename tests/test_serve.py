"""`nanopedia serve` in a real Chromium: edit, break and fix an entry while the page is open."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, PageWatch

TIMEOUT_MS = 15_000


@dataclass
class Served:
    """A running `nanopedia serve` process, its URL and everything it printed so far."""

    process: subprocess.Popen[str]
    url: str
    lines: queue.Queue[str]
    entries: Path

    def printed(self, pattern: str, timeout: float = TIMEOUT_MS / 1000) -> str:
        """Wait for a line of the terminal output matching `pattern`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if re.search(pattern, line):
                return line
        raise AssertionError(f"serve never printed {pattern!r}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "corpus", entries)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", "serve", "--port", "0", "--entries", "entries",
         "--out", "site"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        # A runner started in the background by a shell ignores SIGINT, and so would serve:
        # Ctrl-C is what this test sends, so serve gets the default disposition back.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stream = process.stderr
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True)
    reader.start()
    served = Served(process, "", lines, entries)
    try:
        served.url = re.search(r"http://127\.0\.0\.1:\d+/", served.printed("^serving "))[0]
        yield served
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            printed = "".join(lines.get() for _ in range(lines.qsize()))
            pytest.fail(f"serve did not stop within 30 s of Ctrl-C; it printed:\n{printed}")
        reader.join(timeout=5)
        stream.close()
    assert code == 130


def record_not_found(watch: PageWatch) -> None:
    watch.not_found = set()  # type: ignore[attr-defined]
    watch.page.on("response", lambda r: r.status == 404 and watch.not_found.add(  # type: ignore
        "/" + r.url.split("/", 3)[3]))


def assert_clean_apart_from_reloads(watch: PageWatch) -> None:
    """No CSP violation, no script error; a reload aborts the open event stream, and Chromium
    asks for a /favicon.ico the site does not have: both expected."""
    assert watch.csp_violations == []
    assert [e for e in watch.console_errors if "404" not in e] == []
    assert {r.split()[0].rsplit("/", 1)[-1] for r in watch.failed_requests} <= {"__live"}
    assert watch.not_found <= {"/favicon.ico"}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_edit_break_fix_while_the_page_is_open(served: Served, watched_page: PageWatch) -> None:
    from playwright.sync_api import expect

    page = watched_page.page
    record_not_found(watched_page)
    page.goto(served.url + "entries/alpha-failure.html")
    heading = page.locator("h1")
    expect(heading).to_have_text("Alpha failure under FSDP")
    alpha = served.entries / "alpha-failure.yaml"

    # 1. An edit reloads the page with the new text.
    edit(alpha, "title: Alpha failure under FSDP\n", "title: Alpha failure under FSDP, edited\n")
    expect(heading).to_have_text("Alpha failure under FSDP, edited", timeout=TIMEOUT_MS)

    # 2. A broken entry: located errors in the terminal and in an overlay; the page stays.
    edit(alpha, "category: mixed-precision\n", "category: mixed\n")
    located = "entries/alpha-failure.yaml:6:11: error[E013]: 'mixed' is not an allowed value"
    overlay = page.locator("#nanopedia-live-overlay")
    expect(overlay).to_be_visible(timeout=TIMEOUT_MS)
    expect(overlay).to_contain_text(located)
    assert located in served.printed(r"error\[E013\]")
    assert served.process.poll() is None
    expect(heading).to_have_text("Alpha failure under FSDP, edited")

    # 3. Fixing it clears the overlay and the server is still serving.
    edit(alpha, "category: mixed\n", "category: numerics\n")
    expect(overlay).to_have_count(0, timeout=TIMEOUT_MS)
    expect(page.locator(".crumbs")).to_have_text("Numerics", timeout=TIMEOUT_MS)
    assert served.process.poll() is None
    assert_clean_apart_from_reloads(watched_page)


def test_live_script_is_served_not_built(served: Served, watched_page: PageWatch) -> None:
    """The live script is injected by the server only: the built files never contain it."""
    from playwright.sync_api import expect

    page = watched_page.page
    record_not_found(watched_page)
    page.goto(served.url)
    expect(page.locator("script[src='/__live.js']")).to_have_count(1)
    assert b"__live" not in (served.entries.parent / "site" / "index.html").read_bytes()
    edit(served.entries / "beta-failure.yaml", "id: beta-failure\n", "id: beta-failures\n")
    expect(page.locator("#nanopedia-live-overlay")).to_contain_text(
        "error[E014]: id 'beta-failures' does not match the file name", timeout=TIMEOUT_MS)
    (served.entries / "notes.txt").write_text("not an entry")  # ignored by the watcher
    edit(served.entries / "beta-failure.yaml", "id: beta-failures\n", "id: beta-failure\n")
    expect(page.locator("#nanopedia-live-overlay")).to_have_count(0, timeout=TIMEOUT_MS)
    assert served.process.poll() is None
    assert_clean_apart_from_reloads(watched_page)


def test_what_serve_built_is_remembered_when_it_stops(served: Served) -> None:
    """Ctrl-C waits for the state of the last rebuild: a build afterwards has nothing to do."""
    edit(served.entries / "alpha-failure.yaml", "title: Alpha failure under FSDP",
         "title: Alpha failure under FSDP, edited")
    served.printed("alpha-failure.yaml: rebuilt")
    served.process.send_signal(signal.SIGINT)
    assert served.process.wait(timeout=30) == 130
    after = subprocess.run([sys.executable, "-m", "generator", "build", "--entries", "entries",
                            "--out", "site"], cwd=served.entries.parent, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert "site/ is up to date" in after.stderr, after.stderr
