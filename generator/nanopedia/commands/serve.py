"""`nanopedia serve`: build, serve on 127.0.0.1, rebuild on every save and reload open tabs.

The site is built by `build.build` into its own folder (a temporary one unless `--out` is given),
so each rebuild reuses the build cache: entries whose bytes did not change are not parsed,
validated or rendered again. A watcher thread (watchfiles: inotify, no polling) rebuilds after
each burst of saves under `entries/` or `theme/`; a template change clears the compiled templates.

Pages are served as built, except that HTML responses get the snippet `theme/serve/live.html`
before `</head>`: one external script (`/__live.js`), and nothing in the written site. Tabs learn
about rebuilds by loading a script too, `/__live/state.js?seen=N`, which the server holds until
there is news (or `POLL_S` passed): every page's CSP allows same-origin scripts, since it must
allow `live.js` itself, while the diagnosis page forbids every connection (`connect-src 'none'`),
an event stream included. So the preview keeps the published CSP to the byte. A failed build
leaves the last good site in place, prints the located problems to the terminal and sends them to
the browser, which shows them in an overlay; the next good build reloads the tab and the overlay
is gone. The server keeps running through all of it.

Only the built site is served, and only as files (`files.py`: strict decoding, no symlinks, no
listings); a missing page gives the site's own `404.html`. Requests must name the server by its
loopback address or `localhost` with its port (421 otherwise), so a page of another site cannot
reach it by pointing a DNS name at 127.0.0.1.
"""

from __future__ import annotations

import http.server
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jinja2
from watchfiles import Change, DefaultFilter, watch

from nanopedia.commands.files import MAX_TARGET, BadTarget, content_type, read_inside, segments
from nanopedia.errors import NanopediaError, Problem
from nanopedia.incremental import pipeline
from nanopedia.incremental.context import Context, Request
from nanopedia.site import render

SERVE_THEME = render.THEME / "serve"
LIVE_STATE = "/__live/state.js"
"""The long-poll script a tab loads to hear of the next build (see the module docstring)."""
LIVE_FILES = {"/__live.js": ("live.js", "text/javascript"), "/__live.css": ("live.css", "text/css")}
"""Served from `theme/serve/`, outside the site's own paths."""
POLL_S = 15.0
"""How long a poll waits for news before the tab asks again."""
BACKLOG = 1024
"""Connections the kernel queues before the server accepts them (the standard library's 5 made
200 simultaneous requests wait 12.6 s for SYN retries)."""
HOSTS = ("127.0.0.1", "localhost")
"""The names a request may give in its Host header, each with the server's port."""
CONNECTIONS = 256
"""Connections served at once (a thread each); past them, one that has sent no request for
`IDLE_GRACE_S` is dropped to make room, or else the new one is."""
IDLE_GRACE_S = 1.0
IDLE_S = 20.0
"""Seconds a connection may stay silent while the server reads from it (a half-sent request, a
kept-alive connection); then it is closed."""


@dataclass
class Live:
    """What every open tab should show: the build number, or the problems of the last build."""

    version: int = 0
    """Number of the last good build; a tab that saw another number reloads."""
    problems: list[dict[str, Any]] = field(default_factory=list)
    """Problems of the last build when it failed, else empty."""
    serial: int = 0
    """Counts every publication, so each poll knows when it has news."""
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

    def snapshot(self) -> dict[str, Any]:
        """What a tab is told: the build, its problems, and the serial to poll with next."""
        return {"version": self.version, "problems": self.problems, "serial": self.serial}


class Server:
    """One served site: a builder, an HTTP server and a watcher, all stopped by `close()`."""

    def __init__(
        self, entries: Path, out: Path, config: Path | None, port: int, log: Callable[[str], None]
    ) -> None:
        self.entries, self.out, self.config, self.log = entries, out, config, log
        self.context = Context()
        """What the rebuilds reuse: templates compiled, texts rendered, the state saved."""
        self.state = Live()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.snippet = (SERVE_THEME / "live.html").read_bytes()
        self.httpd = _HTTPServer(("127.0.0.1", port), _handler(self))
        self.port = self.httpd.server_address[1]
        self.hosts = frozenset(f"{name}:{self.port}" for name in HOSTS)
        """The Host headers answered."""
        self._serving = False

    def rebuild(self, reason: str, changed: set[Path] | None = None) -> None:
        """Build once; never raises, because the server must outlive any broken entry.
        `changed` lists the entry files the watcher saw change (None: look at all)."""
        with self._lock:
            start = time.perf_counter()
            try:
                report = pipeline.build(
                    Request(
                        self.entries, self.out, self.config, changed=changed, clean_up_later=True
                    ),
                    self.context,
                )
            except NanopediaError as err:
                self.log(f"{err}\n{len(err.problems)} problem(s); the last good site is served")
                self.state.publish(err.problems)
                return
            except Exception as err:  # noqa: BLE001 - a bug must not take the server down
                self.log(f"build failed: {type(err).__name__}: {err}")
                return
            seconds = time.perf_counter() - start
            for warning in report.warnings:  # a `.yml` file not read, as `build` says
                self.log(str(warning))
            self.log(
                f"{reason}: rebuilt {report.entries} entries in {seconds:.2f}s "
                f"({report.reused} from cache)"
            )
            self.state.publish([])

    def watch(self) -> None:
        """Rebuild after each burst of changes until `stop` is set."""
        theme = render.THEME
        editor_files = DefaultFilter()  # swap files, backups, VCS folders

        def relevant(change: Change, path: str) -> bool:
            where = Path(path)
            return editor_files(change, path) and (
                theme in where.parents or where.suffix == ".yaml"
            )

        for changes in watch(
            self.entries,
            theme,
            watch_filter=relevant,
            stop_event=self.stop,
            step=20,
            debounce=400,
            raise_interrupt=False,
        ):
            paths = sorted({Path(p) for _, p in changes})
            entries: set[Path] | None = set(paths)
            if any(theme in p.parents for p in paths):  # templates compile once per process
                self.context = Context()  # no template compiled nor text rendered before
                _pages.cache_clear()
                entries = None
            names = ", ".join(p.name for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
            self.rebuild(f"changed {names}", entries)

    def start(self, watching: bool = True) -> None:
        """Serve and watch in background threads (the first build has already run); without
        `watching`, only serve (a test or a benchmark that must not rebuild)."""
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self._serving = True
        if watching:
            threading.Thread(target=self.watch, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        with self.state.changed:
            self.state.changed.notify_all()
        if self._serving:  # `shutdown` waits for a `serve_forever` that never ran otherwise
            self.httpd.shutdown()
        self.httpd.server_close()


class _HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True  # open polls must not keep the process alive
    allow_reuse_address = True
    request_queue_size = BACKLOG

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self.active = 0
        self.waiting: dict[Any, float] = {}  # connection -> since when it waits for a request

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread per connection, at most `CONNECTIONS` of them: past that, the connection
        idle longest (no request for `IDLE_GRACE_S`: a slowloris) is closed to make room, or,
        when every one is busy, the new one is."""
        with self.lock:
            if self.active >= CONNECTIONS:
                now = time.monotonic()
                idle = next(
                    (c for c, since in self.waiting.items() if now - since > IDLE_GRACE_S), None
                )
                if idle is None:
                    self.shutdown_request(request)
                    return
                del self.waiting[idle]
                _hang_up(idle)
            self.active += 1
        try:
            super().process_request(request, client_address)
        except BaseException:
            with self.lock:
                self.active -= 1
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.lock:
                self.active -= 1
                self.waiting.pop(request, None)

    def waits(self, connection: Any, waiting: bool) -> None:
        """Mark a connection as waiting for its next request (or no longer)."""
        with self.lock:
            if waiting:
                self.waiting[connection] = time.monotonic()
            else:
                self.waiting.pop(connection, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A tab that went away (a reload, a closed window) is not an error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@cache
def _pages() -> jinja2.Environment:
    """The server's own pages and scripts (`theme/serve/`): the error page and the poll's
    answer; compiled once, cleared when the theme changes."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(SERVE_THEME),
        autoescape=jinja2.select_autoescape(("html",)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _handler(server: Server) -> type[http.server.BaseHTTPRequestHandler]:
    """Files of the built site (never a listing, never through a symlink), the site's 404 page,
    and the live-reload poll and script."""

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = IDLE_S  # a silent connection is closed, its thread freed

        def version_string(self) -> str:
            return "nanopedia-serve"

        def handle_one_request(self) -> None:
            self.server.waits(self.connection, True)  # type: ignore[attr-defined]
            try:
                super().handle_one_request()
            finally:
                self.server.waits(self.connection, False)  # type: ignore[attr-defined]

        def parse_request(self) -> bool:
            parsed = super().parse_request()  # reads the headers: a slowloris waits in here
            self.server.waits(self.connection, False)  # type: ignore[attr-defined]
            return parsed

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            """Requests are not news; the terminal is for builds and problems."""

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._answer()

        def do_HEAD(self) -> None:  # noqa: N802 - stdlib name
            self._answer()

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            """Every error the standard library answers itself (a bad request line, too many
            headers, an unknown method) gets the server's page too, never Python's."""
            self.close_connection = True
            self._error(code, message or self.responses.get(code, ("Error",))[0])

        def _answer(self) -> None:
            hosts = self.headers.get_all("Host") or []
            if len(hosts) != 1:
                return self._error(400, "a request must name its host once")
            if hosts[0].lower() not in server.hosts:
                return self._error(
                    421, "this server answers only to " + " or ".join(sorted(server.hosts))
                )
            if len(self.path.encode("utf-8", "surrogateescape")) > MAX_TARGET:
                return self._error(414, f"the address is longer than {MAX_TARGET} bytes")
            path, _, query = self.path.partition("?")
            try:
                parts = segments(path)
            except BadTarget as bad:
                return self._error(bad.status, str(bad))
            if path == LIVE_STATE:
                if self._foreign():
                    return self._error(403, "the build's state is for this site's own pages")
                return self._poll(query)
            if path in LIVE_FILES:
                name, kind = LIVE_FILES[path]
                return self._send(200, (SERVE_THEME / name).read_bytes(), kind)
            # Hidden files are the build's bookkeeping (`.nanopedia-site`), not pages.
            hidden = any(p.startswith(".") for p in parts)
            found = None if hidden else read_inside(server.out, parts)
            if found is not None and found.folder and not path.endswith("/"):
                return self._redirect(path + "/" + (f"?{query}" if query else ""))
            if (
                found is None
                and not (server.out / "index.html").is_file()
                and (not parts or parts[-1].endswith(".html"))
            ):
                waiting = (SERVE_THEME / "waiting.html").read_bytes()  # no good build yet
                return self._send(200, _inject(waiting, server.snippet), content_type("page.html"))
            if found is None:
                return self._error(404, "there is no page at this address")
            body = found.body
            if found.name.endswith(".html"):
                body = _inject(body, server.snippet)
            self._send(200, body, content_type(found.name))

        def _foreign(self) -> bool:
            """A request another site's page made (a `<script src>` of this address): the
            browser says so in `Sec-Fetch-Site`, or names another origin in `Origin` or
            `Referer`. A request without them (curl, an old browser) is not refused."""
            if self.headers.get("Sec-Fetch-Site", "same-origin").lower() not in (
                "same-origin",
                "none",
            ):
                return True
            for name in ("Origin", "Referer"):
                value = self.headers.get(name)
                if value is None:
                    continue
                parts = urlsplit(value)
                if parts.scheme != "http" or parts.netloc.lower() not in server.hosts:
                    return True
            return False

        def _error(self, code: int, reason: str) -> None:
            """The site's `404.html` for a missing page, else the server's error page; both
            with the live snippet, so the tab reloads with the next build."""
            page = read_inside(server.out, ["404.html"]) if code == 404 else None
            body = (
                page.body
                if page is not None
                else _pages()
                .get_template("error.html")
                .render(code=code, title=self.responses.get(code, ("Error",))[0], reason=reason)
                .encode()
            )
            self._send(code, _inject(body, server.snippet), content_type("page.html"))

        def _redirect(self, location: str) -> None:
            self.send_response(301)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self._headers()

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self._headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _headers(self) -> None:
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()

        def _poll(self, query: str) -> None:
            """The state as a script, once it differs from the serial the tab saw (at once for
            a first poll), or after `POLL_S` without news."""
            try:
                seen = int(parse_qs(query).get("seen", ["-1"])[0])
            except ValueError:
                return self._error(400, "'seen' must be a number")
            state = server.state
            with state.changed:
                if state.serial == seen and not server.stop.is_set():
                    state.changed.wait(POLL_S)
                snapshot = state.snapshot()
            body = _pages().get_template("state.js").render(state=snapshot).encode()
            self._send(200, body, content_type("state.js"))

    return Handler


def _hang_up(connection: Any) -> None:
    """End a connection another thread is reading from: its read returns at once."""
    import socket

    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _inject(page: bytes, snippet: bytes) -> bytes:
    """The page with the live-reload snippet before `</head>` (or unchanged without one)."""
    head, found, rest = page.partition(b"</head>")
    return head + snippet + found + rest if found else page


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end `serve` as Ctrl-C does (KeyboardInterrupt), so every `finally`
    and `with` on the way out runs: the server closes and the temporary site is deleted. Only
    the main thread can install handlers; elsewhere (a test) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    before = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def serve(
    entries: Path,
    out: Path,
    config: Path | None,
    port: int,
    log: Callable[[str], None],
    ready: Callable[[int], None],
) -> None:
    """Build, then serve and rebuild until interrupted (Ctrl-C, SIGTERM or SIGHUP end it with
    KeyboardInterrupt)."""
    with _stopped_by_signals():
        server = Server(entries, out, config, port, log)
        try:
            server.rebuild("first build")
            server.start()
            ready(server.port)
            # Short waits: a Ctrl-C the kernel hands to another thread (the watcher's, say) only
            # sets a flag, which this thread sees when it next wakes; a long wait did not notice.
            while not server.stop.wait(0.5):
                pass
        finally:
            server.close()
