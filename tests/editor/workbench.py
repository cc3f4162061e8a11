"""A real VS Code for the extension's tests: code-server (the VS Code workbench served over HTTP)
on 127.0.0.1 with no authentication, a fresh user-data, extensions and home folder, the built
.vsix installed with `--install-extension`, and Chromium driven by Playwright.

code-server, Node 24 and vsce are npm packages pinned in editors/vscode/vsix.py and installed into
`.cache/editor/` (git-ignored) the first time they are needed; code-server compiles native modules
and needs Debian's libkrb5-dev, libx11-dev, libxkbfile-dev, libsecret-1-dev and a compiler
(.ci/run installs them). Everything this module starts is stopped by the process group of the pid
it started, never by name. `bench/editor.py` uses it too (the screenshot, the 100 MB timing).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "editors" / "vscode"))

import vsix  # noqa: E402

CHROMIUM = os.environ.get("NANOPEDIA_CHROMIUM", "/usr/bin/chromium")
#: The editor's settings for a quiet, deterministic window (no welcome page, tips or updates).
SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "chat.disableAIFeatures": True,
    "terminal.integrated.shellIntegration.enabled": True,
    "terminal.integrated.defaultProfile.linux": "bash",
    "editor.minimap.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
}


@dataclass(frozen=True)
class Server:
    url: str
    """The workbench with the workspace folder open."""
    folder: Path
    """Where code-server's own files (home, user data, extensions, log) are."""
    pid: int


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def code_server(
    extension: Path, workspace: Path, folder: Path, machine: dict[str, Any] | None = None
) -> Iterator[Server]:
    """code-server serving `workspace` with `extension` (.vsix) installed, its files in `folder`;
    `machine`: settings of the machine code-server runs on (its Remote settings, where a
    machine-scoped setting such as the extension's extra entries folder belongs)."""
    entry = vsix.tool("code-server") / "out" / "node" / "entry.js"
    node = vsix.node()
    home = folder / "home"
    user = folder / "user-data"
    (user / "User").mkdir(parents=True)
    home.mkdir()
    (user / "User" / "settings.json").write_text(json.dumps(SETTINGS))
    (user / "Machine").mkdir()
    (user / "Machine" / "settings.json").write_text(json.dumps(machine or {}))
    config = folder / "config.yaml"
    config.write_text("auth: none\ncert: false\n")
    env = {
        "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    base = [str(node), str(entry), "--config", str(config), "--user-data-dir", str(user)]
    base += ["--extensions-dir", str(folder / "extensions")]
    installed = subprocess.run(
        [*base, "--install-extension", str(extension)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if installed.returncode or "successfully installed" not in installed.stdout:
        raise RuntimeError(
            f"code-server could not install {extension}: {installed.stdout}{installed.stderr}"
        )
    port = _free_port()
    log = (folder / "code-server.log").open("w")
    process = subprocess.Popen(
        [
            *base,
            "--bind-addr",
            f"127.0.0.1:{port}",
            "--auth",
            "none",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            "--disable-getting-started-override",
            "--ignore-last-opened",
            str(workspace),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    # A SIGTERM (a CI time limit, `timeout`) ends Python without running `finally`, which would
    # leave code-server running: it is turned into SystemExit while code-server runs.
    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _exit) if main else None
    try:
        _wait_healthy(port, process, folder / "code-server.log")
        yield Server(f"http://127.0.0.1:{port}/?folder={workspace}", folder, process.pid)
    finally:
        if main:
            signal.signal(signal.SIGTERM, before)
        # code-server's extension host, pty host and file watcher are in its process group.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _wait_healthy(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"code-server exited with {process.returncode}: {log.read_text()[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(
        f"code-server did not answer on 127.0.0.1:{port} in 120 s: {log.read_text()[-2000:]}"
    )


class Workbench:
    """The VS Code window in Chromium, driven as a person would: the Explorer, the command
    palette, the terminal; and what is on the screen (the answer view is a webview, an iframe
    inside an iframe)."""

    def __init__(self, page: Any, folder: Path) -> None:
        self.page = page
        self.folder = folder
        """Where a failed wait leaves a screenshot of the window."""

    def failed(self, message: str) -> AssertionError:
        shot = self.folder / f"failed-{time.monotonic_ns()}.png"
        self.page.screenshot(path=str(shot))
        return AssertionError(f"{message} (the window: {shot})")

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_selector(".monaco-workbench .part.editor", timeout=180_000)
        self.page.wait_for_selector(".monaco-workbench .explorer-folders-view", timeout=180_000)

    def open_file(self, name: str) -> None:
        self.page.get_by_role("treeitem", name=name).first.click(timeout=60_000)
        self.page.wait_for_selector(f'.tab.active[aria-label^="{name}"]', timeout=60_000)
        self.page.wait_for_selector(".monaco-editor .view-lines .view-line", timeout=60_000)

    def command(self, title: str, timeout: float = 120) -> None:
        """Runs a command from the palette by its title, as typed by a person. The palette lists
        what is registered when it opens: until the extension host has read the extensions it
        lacks theirs, so it is opened again until the command is there."""
        deadline = time.monotonic() + timeout
        while True:
            self.page.keyboard.press("F1")
            box = self.page.wait_for_selector(
                ".quick-input-widget .quick-input-box input", timeout=30_000
            )
            box.fill(f">{title}")
            row = self.page.locator(".quick-input-widget .monaco-list-row", has_text=title).first
            try:
                row.wait_for(timeout=5_000)
                break
            except Exception:
                self.page.keyboard.press("Escape")
                if time.monotonic() > deadline:
                    raise self.failed(f"the command palette has no command {title!r}") from None
        self.page.keyboard.press("Enter")

    def answer(self, entry: str | None = None, timeout: float = 120) -> Any:
        """The frame of the answer view once it shows a verdict (on `entry`, when given). The
        view is rewritten by each diagnosis, which detaches the frame a test may hold."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            for frame in self.page.frames:
                try:
                    found = frame.query_selector("#verdict")
                    seen = found.get_attribute("data-id") if found else seen
                except Exception:  # a frame detached or navigated while it was looked at
                    continue
                if found and (entry is None or seen == entry):
                    return frame
            time.sleep(0.2)
        raise self.failed(f"the answer view did not show a verdict on {entry} (last: {seen})")

    def status_bar(self) -> str:
        return str(self.page.inner_text(".part.statusbar"))
