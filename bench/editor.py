"""The VS Code extension at work in a real editor (code-server, tests/editor/workbench.py): the
screenshot of the READMEs, and the time to diagnose a large log in the editor.

    .venv/bin/python bench/editor.py shot [PNG]   # default editors/vscode/media/screenshot.png
    .venv/bin/python bench/editor.py time [MB]    # default 100

`shot` diagnoses the four-rank OOM log (tests/logs/first-failure-oom/torchrun-4rank.log) from the
command palette and photographs the window: the log with its marks, the answer beside it. `time`
writes MB megabytes of normal training output with that failure at the end (the corpus's
`normal_lines`, as bench/diagnose_browser.py does), runs "Diagnose this log file" on it from the
Explorer's context menu (the file is streamed from disk, never opened in the editor) and reports
the wall time from the click to the verdict on the screen, and the engine's own time. Both build
the .vsix first (editors/vscode/vsix.py).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from editor.workbench import CHROMIUM, Workbench, code_server, vsix  # noqa: E402
from logcorpus import LOGS, ROOT, normal_lines  # noqa: E402

FAILURE = LOGS / "first-failure-oom" / "torchrun-4rank.log"
ARGS = ["--no-sandbox", "--disable-gpu"]


def write_log(path: Path, megabytes: int) -> None:
    """`megabytes` MB of normal lines, then the four-rank failure."""
    block = "\n".join(line for line, _ in zip(normal_lines(), range(20_000), strict=False)) + "\n"
    data = block.encode()
    with path.open("wb") as out:
        written = 0
        while written < megabytes * 1_000_000:
            out.write(data)
            written += len(data)
        out.write(FAILURE.read_bytes())


def shot(target: Path, folder: Path, extension: Path) -> None:
    from playwright.sync_api import sync_playwright

    workspace = folder / "job-4812"
    workspace.mkdir()
    shutil.copyfile(FAILURE, workspace / FAILURE.name)
    with code_server(extension, workspace, folder) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        bench = Workbench(page, folder)
        bench.open(server.url)
        bench.open_file(FAILURE.name)
        bench.command("View: Toggle Primary Side Bar Visibility")
        bench.command("Nanopedia: Diagnose this log file")
        bench.answer("cuda-out-of-memory")
        page.locator(".codelens-decoration").first.wait_for(timeout=30_000)
        time.sleep(1)
        page.screenshot(path=str(target))
        browser.close()
    print(f"wrote {target} ({target.stat().st_size:,} bytes)")


def timing(megabytes: int, folder: Path, extension: Path) -> None:
    from playwright.sync_api import sync_playwright

    workspace = folder / "workspace"
    workspace.mkdir()
    log = workspace / "big.log"
    write_log(log, megabytes)
    with code_server(extension, workspace, folder) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 860})
        bench = Workbench(page, folder)
        bench.open(server.url)
        # The extension's commands are there once the palette lists them (nothing open: it says so).
        bench.command("Nanopedia: Diagnose this log file")
        bench.command("Notifications: Clear All Notifications")
        for _ in range(3):  # a click that the menu missed shows no progress: the menu again
            page.get_by_role("treeitem", name=log.name).first.click(button="right")
            item = page.locator(".monaco-menu .action-item", has_text="Diagnose this log file")
            item.first.wait_for(timeout=30_000)
            began = time.monotonic()
            item.first.click()
            progress = page.locator(".notification-toast", has_text="Nanopedia")
            try:
                progress.first.wait_for(timeout=20_000)
                break
            except Exception:
                page.keyboard.press("Escape")
        frame = bench.answer("cuda-out-of-memory", timeout=900)
        wall = time.monotonic() - began
        summary = frame.locator("#summary").inner_text()
        first = frame.locator("p.first").inner_text()
        slow = frame.locator(".slow li").all_inner_texts()
        browser.close()
    size = log.stat().st_size
    print(f"{size / 1e6:.0f} MB: {wall:.1f} s from the click to the verdict on the screen")
    print(f"  the view says: {summary} {first}")
    for line in slow:
        print(f"  {line}")


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else "shot"
    with tempfile.TemporaryDirectory(prefix="nanopedia-editor-") as tmp:
        folder = Path(tmp)
        extension = vsix.package(out_dir=folder / "dist")
        if what == "shot":
            default = ROOT / "editors" / "vscode" / "media" / "screenshot.png"
            shot(Path(sys.argv[2]) if len(sys.argv) > 2 else default, folder, extension)
        else:
            timing(int(sys.argv[2]) if len(sys.argv) > 2 else 100, folder, extension)
    return 0


if __name__ == "__main__":
    sys.exit(main())
