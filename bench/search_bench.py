"""Benchmark search at scale in Chromium from `file://` (not part of the tests).

    .venv/bin/python bench/search_bench.py --n 10000 --runs 5 [--single-n 1000] [--work DIR]

For N entries of the shared synthetic corpus (`../shared/bench/corpus.py`, converted by
`make_corpus.py`): build the site, print the size of the search index scripts (raw and gzipped),
then open `search.html` from `file://` in Chromium, type a query and time the first result (the
index is loaded and indexed on that first use), the moment the full index (every text shard)
replaces the first one, and a query once everything is indexed. With `--single-n`, also build the
single-file bundle of that many entries and print its size and its time to first result.

Measured on the 2-core machine of issue 5 (figures in its closing note): this is what chose the
layout of `generator/search.py`; indexing every field of 10,000 entries at once took 2 to 3 s in
Chromium, the short fields alone about 0.5 s.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT.parent / "shared" / "bench" / "corpus.py"
NANOPEDIA = [sys.executable, "-m", "generator"]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu"]


def corpus(n: int, work: Path) -> Path:
    """The entry files of the N-entry benchmark corpus (generated once per work folder)."""
    base = work / f"n{n}"
    entries = base / "entries"
    if not (entries / "tags.yaml").exists():
        subprocess.run([sys.executable, str(CORPUS), "--n", str(n), "--out", str(base)],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, str(HERE / "make_corpus.py"),
                        str(base / "entries.jsonl"), str(entries)],
                       check=True, stdout=subprocess.DEVNULL)
    return entries


def run(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def sizes(site: Path) -> dict[str, int]:
    files = sorted((site / "search").glob("*.js"))
    raw = {p.name: p.read_bytes() for p in files}
    text = [b for name, b in raw.items() if name != "index.js"]
    return {
        "index.js": len(raw["index.js"]),
        "index.js gzip": len(gzip.compress(raw["index.js"], 9)),
        "text shards": len(text),
        "text total": sum(map(len, text)),
        "text total gzip": sum(len(gzip.compress(b, 9)) for b in text),
        "largest shard": max(map(len, text), default=0),
    }


def first_words(entries: Path) -> tuple[str, str]:
    """A title and a symptom of one entry, as a reader would type or paste them."""
    jsonl = entries.parent / "entries.jsonl"
    with jsonl.open(encoding="utf-8") as lines:
        raw = json.loads(next(lines))
    return raw["title"].split(" (")[0], raw["symptoms"][0]["symptom"]


def time_page(browser: Any, url: str, box: str, queries: tuple[str, str]) -> dict[str, float]:
    """Milliseconds to the first result (cold), to the full index, and per query once warm."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    results = f"{box} ~ [role=listbox] .search-entry, {box} ~ * .search-entry"
    start = time.perf_counter()
    page.fill(box, queries[0])
    page.locator(results).first.wait_for(timeout=120_000)
    first = time.perf_counter() - start
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached",
                                                                   timeout=120_000)
    complete = time.perf_counter() - start
    warm = []
    for query in queries * 2:
        page.fill(box, "")
        start = time.perf_counter()
        page.fill(box, query)
        page.locator(results).first.wait_for()
        warm.append(time.perf_counter() - start)
    context.close()
    return {"first result": first * 1000, "full index": complete * 1000,
            "warm query": statistics.median(warm) * 1000}


def report(title: str, rows: list[dict[str, float]]) -> None:
    medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"{title}: " + ", ".join(f"{k} {v:,.0f} ms" for k, v in medians.items())
          + f" (median of {len(rows)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--single-n", type=int, default=0, help="also time a single-file bundle")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "nanopedia-search")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--reuse-site", action="store_true",
                    help="time the site already built in the work folder (built by this code)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    entries = corpus(args.n, args.work)
    site = entries.parent / "site"
    if args.reuse_site and (site / "search" / "index.js").exists():
        print(f"N={args.n}: reusing {site}")
    else:
        # Run in the work folder, so the build cache (.nanopedia-cache) stays there too.
        seconds = run([*NANOPEDIA, "build", "--entries", str(entries), "--out", str(site)],
                      entries.parent)
        print(f"N={args.n}: site built in {seconds:.1f} s")
    for name, value in sizes(site).items():
        print(f"  {name}: {value:,}" + (" bytes" if "shards" not in name else ""))
    queries = first_words(entries)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        url = (site / "search.html").as_uri()
        report("  search.html", [time_page(browser, url, "#search-page-q", queries)
                                 for _ in range(args.runs)])
        entry = next((site / "entries").glob("*.html")).as_uri()
        report("  header box on an entry page", [time_page(browser, entry, "#search-q", queries)
                                                 for _ in range(args.runs)])
        if args.single_n:
            small = corpus(args.single_n, args.work)
            out = small.parent / "dist"
            seconds = run([*NANOPEDIA, "bundle", "--single-file", "--entries", str(small),
                           "--out", str(out)], small.parent)
            single = next(out.glob("*.html"))
            print(f"N={args.single_n} single file: {single.stat().st_size:,} bytes "
                  f"({len(gzip.compress(single.read_bytes(), 9)):,} gzipped), "
                  f"built in {seconds:.1f} s")
            report("  single file", [time_page(browser, single.as_uri(), "#search-q",
                                               first_words(small)) for _ in range(args.runs)])
        browser.close()


if __name__ == "__main__":
    main()
