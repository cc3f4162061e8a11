"""Benchmark search at scale in Chromium from `file://` (not part of the tests).

    .venv/bin/python bench/search_bench.py --n 10000 --runs 5 [--single-n 1000] [--work DIR]

For N entries of the shared synthetic corpus (`../shared/bench/corpus.py`, converted by
`make_corpus.py`): build the site, print the size of the search scripts (raw and gzipped), then
open `search.html` and an entry page from `file://` in Chromium, type a query and time the first
result and the moment the form says the whole index is usable (`data-index-state="complete"`):
inside the page from the first key's time stamp, from the box's focus and from the `input`
event (Playwright's own clock would add the round trip of each typed key);
also the bytes of the scripts the page loaded by then, and a query once everything is loaded.
With `--single-n`, also build the single-file bundle of that many entries and time it the same.

This is what chose the layout of `nanopedia/site/search.py` (issue 5, then issue 20: indexing every
field in the page took 2.3 s at 10,000 entries; loading the serialized index shards a quarter;
a first file of one short string per entry, without tags and with compact ids, and the rest
asked for once the first results are drawn, took the first result from about 240 ms to about
100 ms in the header box of an entry page).
The machine's load moves these figures by tens of percent: compare two versions in turns, on
the same machine, and quote medians.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "bench" / "corpus.py"
NANOPEDIA = [sys.executable, "-m", "nanopedia"]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Notes, inside the page, when the box got the focus, when the first key went down (the
#: event's own time stamp, taken when the browser got the key: a key that waits behind the
#: page's work counts that wait), when the last key before the first result went down (one
#: letter finds nothing in the whole index: MiniSearch matches prefixes of two letters or more),
#: when the first `input` event ran, when the first result showed and when the form said the
#: index is complete (a MutationObserver sees each as it happens).
TIMER = """
window.__search = {};
document.addEventListener('focusin', function () {
  if (!window.__search.focus) window.__search.focus = performance.now();
}, true);
document.addEventListener('keydown', function (ev) {
  var t = window.__search;
  if (!t.key) t.key = ev.timeStamp;
  if (!t.first) t.last = ev.timeStamp;
}, true);
document.addEventListener('input', function () {
  if (!window.__search.input) window.__search.input = performance.now();
}, true);
new MutationObserver(function () {
  var t = window.__search;
  if (!t.input) return;
  if (!t.first && document.querySelector('.search-entry')) t.first = performance.now();
  if (!t.complete && document.querySelector('form[data-index-state=complete]')) {
    t.complete = performance.now();
  }
}).observe(document, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ['data-index-state']});
"""


def corpus(n: int, work: Path) -> Path:
    """The entry files of the N-entry benchmark corpus (generated once per work folder)."""
    base = work / f"n{n}"
    entries = base / "entries"
    if not (entries / "tags.yaml").exists():
        subprocess.run(
            [sys.executable, str(CORPUS), "--n", str(n), "--out", str(base)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_corpus.py"),
                str(base / "entries.jsonl"),
                str(entries),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return entries


def run(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def sizes(site: Path) -> dict[str, int]:
    files = sorted((site / "search").glob("*.js"))
    raw = {p.name: p.read_bytes() for p in files}
    found = {
        "index.js": len(raw["index.js"]),
        "index.js gzip": len(gzip.compress(raw["index.js"], 9)),
    }
    for kind in ("terms", "text"):
        shards = [b for name, b in raw.items() if name.startswith(f"{kind}-")]
        found |= {
            f"{kind} shards": len(shards),
            f"{kind} total": sum(map(len, shards)),
            f"{kind} total gzip": sum(len(gzip.compress(b, 9)) for b in shards),
            f"largest {kind} shard": max(map(len, shards), default=0),
        }
    return found


def first_words(entries: Path) -> tuple[str, str]:
    """A title and a symptom of one entry, as a reader would type or paste them."""
    jsonl = entries.parent / "entries.jsonl"
    with jsonl.open(encoding="utf-8") as lines:
        raw = json.loads(next(lines))
    return raw["title"].split(" (")[0], raw["symptoms"][0]["symptom"]


def time_page(browser: Any, url: str, box: str, queries: tuple[str, str]) -> dict[str, float]:
    """Milliseconds to the first result and to the whole index, bytes loaded by then, and per
    query once everything is loaded."""
    context = browser.new_context()
    page = context.new_page()
    page.add_init_script(TIMER)
    page.goto(url)
    loaded: list[str] = []
    page.on("requestfinished", lambda r: loaded.append(r.url))
    results = f"{box} ~ [role=listbox] .search-entry, {box} ~ * .search-entry"
    # Typed a key at a time, 50 ms apart, right after the focus, as a quick reader types.
    page.focus(box)
    page.keyboard.type(queries[0], delay=50)
    page.locator(results).first.wait_for(timeout=120_000)
    page.locator("form[data-index-state=complete]").first.wait_for(
        state="attached", timeout=120_000
    )
    marks = page.evaluate("window.__search")
    size = sum(
        Path(url2pathname(urlparse(u).path)).stat().st_size
        for u in loaded
        if u.startswith("file://")
    )
    warm = []
    for query in queries * 2:
        page.fill(box, "")
        start = time.perf_counter()
        page.fill(box, query)
        page.locator(results).first.wait_for()
        warm.append(time.perf_counter() - start)
    context.close()
    return {
        "first result (from its key)": marks["first"] - marks["last"],
        "first result (from keydown)": marks["first"] - marks["key"],
        "complete (from keydown)": marks["complete"] - marks["key"],
        "first result (from input)": marks["first"] - marks["input"],
        "complete (from input)": marks["complete"] - marks["input"],
        "first result (from focus)": marks["first"] - marks["focus"],
        "complete (from focus)": marks["complete"] - marks["focus"],
        "warm query": statistics.median(warm) * 1000,
        "bytes loaded": size,
    }


def report(title: str, rows: list[dict[str, float]]) -> None:
    medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(
        f"{title} (median of {len(rows)}): "
        + ", ".join(
            f"{k} {v:,.0f}" + ("" if k.startswith("bytes") else " ms") for k, v in medians.items()
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--single-n", type=int, default=0, help="also time a single-file bundle")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "nanopedia-search")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument(
        "--reuse-site",
        action="store_true",
        help="time the site already built in the work folder (built by this code)",
    )
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    entries = corpus(args.n, args.work)
    site = entries.parent / "site"
    if args.reuse_site and (site / "search" / "index.js").exists():
        print(f"N={args.n}: reusing {site}")
    else:
        # Run in the work folder, so the build cache (.nanopedia-cache) stays there too.
        seconds = run(
            [*NANOPEDIA, "build", "--entries", str(entries), "--out", str(site)], entries.parent
        )
        print(f"N={args.n}: site built in {seconds:.1f} s")
    for name, value in sizes(site).items():
        print(f"  {name}: {value:,}" + (" bytes" if "shards" not in name else ""))
    queries = first_words(entries)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        url = (site / "search.html").as_uri()
        report(
            "  search.html",
            [time_page(browser, url, "#search-page-q", queries) for _ in range(args.runs)],
        )
        entry = next((site / "entries").glob("*.html")).as_uri()
        report(
            "  header box on an entry page",
            [time_page(browser, entry, "#search-q", queries) for _ in range(args.runs)],
        )
        if args.single_n:
            small = corpus(args.single_n, args.work)
            out = small.parent / "dist"
            seconds = run(
                [*NANOPEDIA, "bundle", "--single-file", "--entries", str(small), "--out", str(out)],
                small.parent,
            )
            single = next(out.glob("*.html"))
            print(
                f"N={args.single_n} single file: {single.stat().st_size:,} bytes "
                f"({len(gzip.compress(single.read_bytes(), 9)):,} gzipped), "
                f"built in {seconds:.1f} s"
            )
            report(
                "  single file",
                [
                    time_page(browser, single.as_uri(), "#search-q", first_words(small))
                    for _ in range(args.runs)
                ],
            )
        browser.close()


if __name__ == "__main__":
    main()
