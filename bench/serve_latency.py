"""Save-to-reload latency of `nanopedia serve` in a real Chromium (not part of the tests).

    .venv/bin/python bench/serve_latency.py DIR [--runs 5]

DIR holds `entries/` (e.g. made by `make_corpus.py`). Starts `nanopedia serve` there, opens one
entry page, then repeatedly edits that entry and times from the write to the moment the page shows
the edit (watcher, rebuild, event stream, reload and render all included). `--edit title` (the
default) renames the entry, which every page showing it must follow (index, tag pages, related
pages, search index); `--edit body` adds a line to its "How to confirm" list, which only its own
page and entries.json show. Prints the time of the first build and the median and worst
save-to-reload time.
"""

from __future__ import annotations

import argparse
import queue
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--edit", choices=("title", "body"), default="title")
    args = ap.parse_args()
    entry = sorted((args.dir / "entries").glob("*.yaml"))[0]
    if entry.name == "tags.yaml":
        entry = sorted((args.dir / "entries").glob("*.yaml"))[1]
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "nanopedia", "serve", "--port", "0", "--out", "site"],
        cwd=args.dir,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stream = process.stderr
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    while True:
        line = lines.get(timeout=3600)
        print(line, end="", file=sys.stderr)
        if line.startswith("serving "):
            url = re.search(r"http://127\.0\.0\.1:\d+/", line)[0]  # type: ignore[index]
            break
    print(f"first build and start: {time.perf_counter() - start:.1f}s")
    original = entry.read_text(encoding="utf-8")
    times = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"{url}entries/{entry.stem}.html")
            page.wait_for_timeout(500)
            for run in range(args.runs):
                title = f"Edited title number {run} for the latency benchmark"
                if args.edit == "title":
                    text = re.sub(r"^title: .*$", f"title: {title}", original, count=1, flags=re.M)
                    shown = page.locator("h1", has_text=title)
                else:
                    text = original.replace("\nconfirm:\n", f"\nconfirm:\n- {title}.\n", 1)
                    shown = page.locator("#confirm li", has_text=title)
                t0 = time.perf_counter()
                entry.write_text(text, encoding="utf-8")
                # Each reload's `load` event, until the page shows the edit: a locator's wait
                # would poll, and after a navigation its polls are up to 500 ms apart.
                while True:
                    page.wait_for_event("load", timeout=120_000)
                    if shown.count():
                        break
                times.append(time.perf_counter() - t0)
                page.wait_for_timeout(300)
            browser.close()
    finally:
        entry.write_text(original, encoding="utf-8")
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    while not lines.empty():
        print(lines.get(), end="", file=sys.stderr)
    shown = ", ".join(f"{t:.2f}" for t in times)
    print(
        f"save-to-reload: median {statistics.median(times):.2f}s, worst {max(times):.2f}s ({shown})"
    )


if __name__ == "__main__":
    main()
