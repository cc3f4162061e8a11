"""Throughput of the diagnosis page (site/diagnose.html) in Chromium, next to the CLI's.

Builds the site into a temporary folder, writes a synthetic log of normal training output (the
corpus's `normal_lines`) with one failure at the end, chooses it on the page's file input from
file:// and reports the time the worker took (its own clock, from the first read to the ranked
answer) as MB/s; then `scan.scan` on the same file for comparison. Both must find the same
top entry. Run: `.venv/bin/python bench/diagnose_browser.py [MB]` (default 100).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import LOGS, ROOT, normal_lines  # noqa: E402

from nanopedia.content.corpus import gather  # noqa: E402
from nanopedia.diagnosis import rank, scan  # noqa: E402
from nanopedia.incremental import pipeline  # noqa: E402
from nanopedia.incremental.context import Request  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FAILURE = LOGS / "fsdp-mp-single.log"


def write_log(path: Path, megabytes: int) -> None:
    """`megabytes` MB of normal lines, then a failing traceback."""
    target = megabytes * 1_000_000
    block = "\n".join(line for line, _ in zip(normal_lines(), range(20_000), strict=False)) + "\n"
    data = block.encode()
    with path.open("wb") as out:
        written = 0
        while written < target:
            out.write(data)
            written += len(data)
        out.write(FAILURE.read_bytes())


def main() -> int:
    from playwright.sync_api import sync_playwright

    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        site, log = Path(tmp) / "site", Path(tmp) / "big.log"
        pipeline.build(Request(ROOT / "entries", site, use_cache=False, jobs=1))
        write_log(log, megabytes)
        size = log.stat().st_size
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto((site / "diagnose.html").as_uri())
            page.wait_for_selector("#status[data-state=idle]", state="attached")
            wall = time.perf_counter()
            page.set_input_files("#log-files", str(log))
            page.wait_for_selector("#status[data-state=done]", state="attached", timeout=600_000)
            wall = time.perf_counter() - wall
            seconds = float(page.locator("#status").get_attribute("data-seconds") or "nan")
            top = page.locator("#matches > li").first.get_attribute("data-id")
            browser.close()
        matcher = scan.Matcher(gather(ROOT / "entries")[0].entries)
        start = time.perf_counter()
        with log.open("rb") as stream:
            result = rank.diagnose([scan.scan(stream, log.name, matcher)])
        cli = time.perf_counter() - start
    print(f"log: {size / 1e6:.0f} MB of synthetic training output with one failure at the end")
    print(
        f"browser worker: {seconds:.2f} s, {size / 1e6 / seconds:.0f} MB/s "
        f"(wall clock from choosing the file to the answer: {wall:.2f} s); top: {top}"
    )
    print(
        f"CLI (RE2 set):  {cli:.2f} s, {size / 1e6 / cli:.0f} MB/s; "
        f"top: {result.matches[0].id if result.matches else None}"
    )
    return 0 if result.matches and top == result.matches[0].id else 1


if __name__ == "__main__":
    raise SystemExit(main())
