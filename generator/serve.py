"""`nanopedia serve`: build, serve on 127.0.0.1, rebuild on every save and reload open tabs.

The site is built by `build.build` into its own folder (a temporary one unless `--out` is given),
so each rebuild reuses the build cache: entries whose bytes did not change are not parsed,
validated or rendered again. A watcher thread (watchfiles: inotify, no polling) rebuilds after
each burst of saves under `entries/` or `theme/`; a template change clears the compiled templates.

Browsers learn about rebuilds from a Server-Sent Events stream (`/__live`). Pages are served as
built, except that HTML responses get the snippet `theme/serve/live.html` before `</head>`: one
external script (`/__live.js`), which the pages' CSP (`script-src 'self'`) already allows, and
nothing in the written site. A failed build leaves the last good site in place, prints the located
problems to the terminal and sends them to the browser, which shows them in an overlay; the next
good build reloads the tab and the overlay is gone. The server keeps running through all of it.
"""

from __future__ import annotations

import http.server
import json
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchfiles import Change, DefaultFilter, watch

from . import build, cache, render
from .errors import NanopediaError, Problem

SERVE_THEME = render.THEME / "serve"
LIVE_PATH = "/__live"
LIVE_FILES = {"/__live.js": ("live.js", "text/javascript"), "/__live.css": ("live.css", "text/css")}
"""Served from `theme/serve/`, outside the site's own paths."""
KEEPALIVE_S = 15.0
"""An SSE comment this often keeps proxies and the browser from closing an idle stream."""


@dataclass
class State:
    """What every open tab should show: the build number, or the problems of the last build."""

    version: int = 0
    """Number of the last good build; a tab that saw another number reloads."""
    problems: list[dict[str, Any]] = field(default_factory=list)
    """Problems of the last build when it failed, else empty."""
    serial: int = 0
    """Counts every publication, so each event stream knows when it has news."""
    changed: threading.Condition = field(default_factory=threading.Condition)

    def publish(self, problems: list[Problem]) -> None:
        with self.changed:
            if problems:
                self.problems = [p.as_dict() | {"text": str(p)} for p in problems]
            else:
                self.version += 1
                self.problems = []
            self.serial += 1
            self.changed.notify_all()

    def event(self) -> bytes:
        data = json.dumps({"version": self.version, "problems": self.problems}, sort_keys=True)
        return f"event: state\ndata: {data}\n\n".encode()


class Server:
    """One served site: a builder, an HTTP server and a watcher, all stopped by `close()`."""

    def __init__(self, entries: Path, out: Path, config: Path | None, port: int,
                 log: Callable[[str], None]) -> None:
        self.entries, self.out, self.config, self.log = entries, out, config, log
        self.state = State()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.snippet = (SERVE_THEME / "live.html").read_bytes()
        self.httpd = _HTTPServer(("127.0.0.1", port), _handler(self))
        self.port = self.httpd.server_address[1]

    def rebuild(self, reason: str, changed: set[Path] | None = None) -> None:
        """Build once; never raises, because the server must outlive any broken entry.
        `changed` lists the entry files the watcher saw change (None: look at all)."""
        with self._lock:
            start = time.perf_counter()
            try:
                report = build.build(self.entries, self.out, self.config, changed=changed)
            except NanopediaError as err:
                self.log(f"{err}\n{len(err.problems)} problem(s); the last good site is served")
                self.state.publish(err.problems)
                return
            except Exception as err:  # noqa: BLE001 - a bug must not take the server down
                self.log(f"build failed: {type(err).__name__}: {err}")
                return
            seconds = time.perf_counter() - start
            self.log(f"{reason}: rebuilt {report.entries} entries in {seconds:.2f}s "
                     f"({report.reused} from cache)")
            self.state.publish([])

    def watch(self) -> None:
        """Rebuild after each burst of changes until `stop` is set."""
        theme = render.THEME
        editor_files = DefaultFilter()  # swap files, backups, VCS folders

        def relevant(change: Change, path: str) -> bool:
            where = Path(path)
            return editor_files(change, path) and (theme in where.parents
                                                   or where.suffix == ".yaml")

        for changes in watch(self.entries, theme, watch_filter=relevant, stop_event=self.stop,
                             step=20, debounce=400, raise_interrupt=False):
            paths = sorted({Path(p) for _, p in changes})
            entries: set[Path] | None = set(paths)
            if any(theme in p.parents for p in paths):  # templates compile once per process
                render.environment.cache_clear()
                cache.code_version.cache_clear()
                entries = None
            names = ", ".join(p.name for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
            self.rebuild(f"changed {names}", entries)

    def start(self) -> None:
        """Serve and watch in background threads (the first build has already run)."""
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        threading.Thread(target=self.watch, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        with self.state.changed:
            self.state.changed.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()


class _HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True  # open event streams must not keep the process alive
    allow_reuse_address = True


def _handler(server: Server) -> type[http.server.SimpleHTTPRequestHandler]:
    """A static file handler on the built site, plus the live-reload stream and script."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(server.out), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            """Requests are not news; the terminal is for builds and problems."""

        def end_headers(self) -> None:
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            path = self.path.split("?", 1)[0]
            if path == LIVE_PATH:
                self._stream()
            elif path in LIVE_FILES:
                name, kind = LIVE_FILES[path]
                self._send((SERVE_THEME / name).read_bytes(), kind)
            else:
                local = Path(self.translate_path(path))
                if local.is_dir():
                    local = local / "index.html"
                if local.suffix == ".html" and not local.is_file() \
                        and not (server.out / "index.html").is_file():
                    local = SERVE_THEME / "waiting.html"  # no good build yet
                if local.suffix == ".html" and local.is_file():
                    self._send(_inject(local.read_bytes(), server.snippet),
                               "text/html; charset=utf-8")
                else:
                    super().do_GET()

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _stream(self) -> None:
            """Send the state now and after every build, until the tab or the server goes."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            state = server.state
            seen = -1
            try:
                while not server.stop.is_set():
                    with state.changed:
                        if state.serial == seen:
                            state.changed.wait(KEEPALIVE_S)
                        message = state.event() if state.serial != seen else b": keep-alive\n\n"
                        seen = state.serial
                    self.wfile.write(message)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler


def _inject(page: bytes, snippet: bytes) -> bytes:
    """The page with the live-reload snippet before `</head>` (or unchanged without one)."""
    head, found, rest = page.partition(b"</head>")
    return head + snippet + found + rest if found else page


def serve(entries: Path, out: Path, config: Path | None, port: int,
          log: Callable[[str], None], ready: Callable[[int], None]) -> None:
    """Build, then serve and rebuild until interrupted (Ctrl-C ends it with KeyboardInterrupt)."""
    server = Server(entries, out, config, port, log)
    server.rebuild("first build")
    server.start()
    ready(server.port)
    try:
        # Short waits: a Ctrl-C the kernel hands to another thread (the watcher's, say) only
        # sets a flag, which this thread sees when it next wakes; a long wait did not notice it.
        while not server.stop.wait(0.5):
            pass
    finally:
        server.close()
