"""`nanopedia serve`: what it answers to any request (in-process, raw sockets), how it stops, and
in a real Chromium: edit, break and fix an entry while the page is open, on every kind of page."""

from __future__ import annotations

import json
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
from typing import Any
from urllib.parse import urlsplit

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
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generator")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanopedia",
            "serve",
            "--port",
            "0",
            "--entries",
            "entries",
            "--out",
            "site",
        ],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
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
    watch.page.on(
        "response",
        lambda r: (
            r.status == 404
            and watch.not_found.add(  # type: ignore
                "/" + r.url.split("/", 3)[3]
            )
        ),
    )


def assert_clean_apart_from_reloads(watch: PageWatch) -> None:
    """No CSP violation, no script error; a reload aborts the poll under way, and Chromium
    asks for a /favicon.ico the site does not have: both expected."""
    assert watch.csp_violations == []
    assert [e for e in watch.console_errors if "404" not in e] == []
    assert {urlsplit(r.split()[0]).path for r in watch.failed_requests} <= {"/__live/state.js"}
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
        "error[E014]: id 'beta-failures' does not match the file name", timeout=TIMEOUT_MS
    )
    (served.entries / "notes.txt").write_text("not an entry")  # ignored by the watcher
    edit(served.entries / "beta-failure.yaml", "id: beta-failures\n", "id: beta-failure\n")
    expect(page.locator("#nanopedia-live-overlay")).to_have_count(0, timeout=TIMEOUT_MS)
    assert served.process.poll() is None
    assert_clean_apart_from_reloads(watched_page)


def test_what_serve_built_is_remembered_when_it_stops(served: Served) -> None:
    """Ctrl-C waits for the state of the last rebuild: a build afterwards has nothing to do."""
    edit(
        served.entries / "alpha-failure.yaml",
        "title: Alpha failure under FSDP",
        "title: Alpha failure under FSDP, edited",
    )
    served.printed("alpha-failure.yaml: rebuilt")
    served.process.send_signal(signal.SIGINT)
    assert served.process.wait(timeout=30) == 130
    after = subprocess.run(
        [sys.executable, "-m", "nanopedia", "build", "--entries", "entries", "--out", "site"],
        cwd=served.entries.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "generator")},
        check=True,
    )
    assert "site/ is up to date" in after.stderr, after.stderr


def test_live_reload_works_on_the_diagnosis_page(served: Served, watched_page: PageWatch) -> None:
    """The diagnosis page forbids every connection (`connect-src 'none'`), so live reload comes
    as a same-origin script there as everywhere; the page keeps the published CSP to the byte."""
    from playwright.sync_api import expect

    page = watched_page.page
    record_not_found(watched_page)
    page.goto(served.url + "diagnose.html")
    csp = page.locator("meta[http-equiv='Content-Security-Policy']").get_attribute("content")
    built = (served.entries.parent / "site" / "diagnose.html").read_text(encoding="utf-8")
    assert f'content="{csp}"' in built and "connect-src 'none'" in csp
    page.wait_for_load_state("load")
    page.evaluate("window.beforeTheEdit = true")
    with page.expect_event("load", timeout=TIMEOUT_MS):  # the reload
        edit(
            served.entries / "alpha-failure.yaml",
            "title: Alpha failure under FSDP\n",
            "title: Alpha failure under FSDP, edited\n",
        )
    assert page.evaluate("window.beforeTheEdit") is None
    edit(served.entries / "alpha-failure.yaml", "category: mixed-precision\n", "category: mixed\n")
    expect(page.locator("#nanopedia-live-overlay")).to_contain_text(
        "error[E013]", timeout=TIMEOUT_MS
    )
    assert_clean_apart_from_reloads(watched_page)


# What the server answers, over raw sockets: no browser would send most of these requests.

SECRET = "the secret outside the site\n"


@dataclass
class Site:
    """A served site with symlinks, a FIFO and a file outside it planted, and its server."""

    server: Any
    out: Path

    @property
    def port(self) -> int:
        return int(self.server.port)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus as serve builds it, with symlinks, a FIFO and a file outside it
    planted."""
    from nanopedia.commands import serve

    root = tmp_path_factory.mktemp("served")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    out = root / "site"
    server = serve.Server(FIXTURES / "corpus", out, None, 0, lambda message: None)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the build cache goes there
        server.rebuild("first build")
    server.close()
    assert (out / "index.html").is_file()
    (out / "passwd").symlink_to("/etc/passwd")
    (out / "secret.txt").symlink_to(outside / "secret.txt")
    (out / "outside").symlink_to(outside)
    (out / "entries" / "same.html").symlink_to(out / "index.html")  # a link inside, too
    (out / "docs").symlink_to(out / "tags")
    os.mkfifo(out / "pipe.html")
    return out


@pytest.fixture
def site(planted: Path) -> Iterator[Site]:
    """A server of its own for each test over the planted site, in the state of one good build
    (what `rebuild` publishes): connections a test leaves open or limits it lowers reach no
    other test."""
    from nanopedia.commands import serve

    server = serve.Server(FIXTURES / "corpus", planted, None, 0, lambda message: None)
    server.state.publish([])
    server.start(watching=False)
    yield Site(server, planted)
    server.close()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def ask(
    port: int, target: str, host: str | None = "", method: str = "GET", raw: bytes | None = None
) -> Answer:
    """One request as written (`host` None: no Host header; "": the server's own address)."""
    import socket

    lines = [f"{method} {target} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host or f'127.0.0.1:{port}'}")
    request = raw or ("\r\n".join([*lines, "Connection: close", "", ""])).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    assert data, f"no answer at all to {request[:60]!r}"
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return Answer(int(status_line.split()[1]), {k.lower(): v for k, v in headers.items()}, body)


def not_found_page(site: Site) -> bytes:
    return (site.out / "404.html").read_bytes()


@pytest.mark.parametrize(
    "target",
    [
        "/passwd",
        "/secret.txt",
        "/outside/secret.txt",
        "/entries/same.html",
        "/docs/",
        "/docs/index.html",
        "/pipe.html",
    ],
)
def test_symlinks_and_special_files_are_never_served(site: Site, target: str) -> None:
    answer = ask(site.port, target)
    assert answer.status == 404
    assert SECRET.encode() not in answer.body and b"root:" not in answer.body
    assert b"Page not found" in answer.body


@pytest.mark.parametrize(
    ("target", "status"),
    [
        ("/" + "a" * 8192, 414),
        ("/entries/" + "%41" * 3000, 414),
        ("/%00", 400),
        ("/index.html%00.txt", 400),
        ("/a%zz", 400),
        ("/a%4", 400),
        ("/%ff%fe", 400),
        ("/%0d%0aSet-Cookie:x", 400),
        ("/../../etc/passwd", 400),
        ("/tags/../../etc/passwd", 400),
        ("/%2e%2e/%2e%2e/etc/passwd", 400),
        ("/./index.html", 400),
        ("http://127.0.0.1/index.html", 400),
    ],
)
def test_hostile_targets_get_an_error_page(site: Site, target: str, status: int) -> None:
    """Every hostile address gets a status and a page, never a dropped connection, never
    Python's own error page; the server answers the next request as before."""
    answer = ask(site.port, target)
    assert answer.status == status
    assert b"nanopedia serve" in answer.body and b"Error response" not in answer.body
    assert ask(site.port, "/").status == 200


def test_what_the_standard_library_refuses_gets_the_error_page_too(site: Site) -> None:
    huge = ask(site.port, "", raw=b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n")
    assert huge.status == 414 and b"nanopedia serve" in huge.body
    post = ask(site.port, "/", method="POST")
    assert post.status == 501 and b"Error response" not in post.body


def test_folders_give_their_index_and_never_a_listing(site: Site) -> None:
    assert ask(site.port, "/static/").status == 404  # a folder without index.html
    assert b"diagnose-worker.js" not in ask(site.port, "/static/").body
    moved = ask(site.port, "/tags?x=1")
    assert (moved.status, moved.headers["location"]) == (301, "/tags/?x=1")
    index = ask(site.port, "/tags/")
    assert index.status == 200
    assert (
        index.body.replace(site.server.snippet, b"")
        == (site.out / "tags" / "index.html").read_bytes()
    )
    css = ask(site.port, "/static/site.css")
    assert css.headers["content-type"] == "text/css; charset=utf-8"
    assert css.body == (site.out / "static" / "site.css").read_bytes()
    head = ask(site.port, "/index.html", method="HEAD")
    assert head.status == 200 and head.body == b""


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("evil.example", 421),
        ("evil.example:{port}", 421),
        ("127.0.0.1", 421),
        ("127.0.0.1:1", 421),
        ("127.0.0.2:{port}", 421),
        (None, 400),
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("LOCALHOST:{port}", 200),
    ],
)
def test_only_its_own_loopback_address_is_answered(
    site: Site, host: str | None, status: int
) -> None:
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends
    `Host: evil.example`; the server must not hand it the site or the live state."""
    named = None if host is None else host.format(port=site.port)
    assert ask(site.port, "/index.html", host=named).status == status
    if status != 200:
        assert ask(site.port, "/__live/state.js?seen=-1", host=named).status == status


def test_unknown_paths_get_the_sites_own_404_page(site: Site) -> None:
    page = not_found_page(site).replace(b"</head>", site.server.snippet + b"</head>", 1)
    for target in (
        "/no-such-page.html",
        "/entries/renamed.html",
        "/nothing/here/",
        "/.nanopedia-site",
    ):
        answer = ask(site.port, target)
        assert answer.status == 404, target
        assert answer.headers["content-type"] == "text/html; charset=utf-8"
        assert answer.body == page, target


def test_two_hundred_simultaneous_requests_all_succeed(site: Site) -> None:
    """The listen backlog holds them all (the standard library's 5 dropped the rest, which
    waited for the kernel's SYN retries); bench/serve_concurrency.py times it."""
    import socket
    import struct

    listening = site.server.httpd.socket
    if sys.platform == "linux":  # TCP_INFO of a listening socket: tcpi_sacked is the backlog
        info = listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        assert struct.unpack_from("I", info, 28)[0] >= 200
    barrier = threading.Barrier(200)
    statuses: list[int] = []

    def one() -> None:
        barrier.wait()
        statuses.append(ask(site.port, "/index.html").status)

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 200


def test_the_poll_answers_with_the_state(site: Site) -> None:
    first = ask(site.port, "/__live/state.js?seen=-1")
    assert first.status == 200 and first.headers["content-type"].startswith("text/javascript")
    state = json.loads(re.search(rb"window\.nanopediaLive\((.*)\);", first.body)[1])
    assert state == {"problems": [], "serial": 1, "version": 1}
    assert ask(site.port, "/__live/state.js?seen=x").status == 400


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_serve_leaves_no_temporary_site(tmp_path: Path, sig: signal.Signals) -> None:
    """Without `--out` the site is built in a temporary folder; SIGTERM (a service manager,
    `kill`) and SIGHUP (a closed terminal) delete it as Ctrl-C does."""
    shutil.copytree(FIXTURES / "corpus", tmp_path / "entries")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generator"), "TMPDIR": str(scratch)}
    process = subprocess.Popen(
        [sys.executable, "-m", "nanopedia", "serve", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if line.startswith("serving "):
                break
        else:
            pytest.fail("serve never started")
        assert [p.name[:16] for p in scratch.iterdir()] == ["nanopedia-serve-"]
        process.send_signal(sig)
        assert process.wait(timeout=30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert list(scratch.iterdir()) == []


# --- #38: what another site's page may read, and connections that never send a request --------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Sec-Fetch-Site": "cross-site"}, 403),
        ({"Sec-Fetch-Site": "same-site"}, 403),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Referer": "http://127.0.0.2:{port}/page.html"}, 403),
        ({"Sec-Fetch-Site": "same-origin", "Referer": "http://127.0.0.1:{port}/index.html"}, 200),
        ({"Sec-Fetch-Site": "none"}, 200),
        ({}, 200),
    ],
)
def test_the_build_state_is_refused_to_other_sites(
    site: Site, headers: dict[str, str], status: int
) -> None:
    """S04: a page of another origin including `/__live/state.js` as a script would read the
    build's problems (file paths, messages)."""
    extra = "".join(f"{k}: {v.format(port=site.port)}\r\n" for k, v in headers.items())
    raw = (
        f"GET /__live/state.js?seen=-1 HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n{extra}"
        "Connection: close\r\n\r\n"
    ).encode()
    answer = ask(site.port, "", raw=raw)
    assert answer.status == status
    assert (b"nanopediaLive" in answer.body) is (status == 200)


def test_connections_are_bounded_and_idle_ones_dropped(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S05: half-sent requests (slowloris) hold no more than `CONNECTIONS` threads, a silent
    connection is closed after `IDLE_S`, and a normal request is still answered at once."""
    import socket

    from nanopedia.commands import serve

    monkeypatch.setattr(serve, "CONNECTIONS", 40)
    monkeypatch.setattr(serve, "IDLE_GRACE_S", 0.2)
    before = threading.active_count()
    half = f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n".encode()
    held = []
    try:
        for _ in range(120):
            conn = socket.create_connection(("127.0.0.1", site.port), timeout=10)
            conn.sendall(half)
            held.append(conn)
        time.sleep(0.5)
        assert threading.active_count() - before <= 45
        start = time.monotonic()
        assert ask(site.port, "/index.html").status == 200
        assert time.monotonic() - start < 2
    finally:
        for conn in held:
            conn.close()


def test_a_silent_connection_is_closed(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from nanopedia.commands import serve

    handler = site.server.httpd.RequestHandlerClass
    monkeypatch.setattr(handler, "timeout", 0.5)
    assert serve.IDLE_S <= 60
    with socket.create_connection(("127.0.0.1", site.port), timeout=10) as conn:
        conn.sendall(b"GET /index.html HTTP/1.1\r\n")  # and nothing more
        start = time.monotonic()
        assert conn.recv(100) == b""  # closed by the server, without an answer
        assert time.monotonic() - start < 5


def _until(found: Any, what: str, timeout: float = 60) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if value := found():
            return value
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def test_serve_in_process_rebuilds_an_edited_entry_and_a_theme_change_until_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """`nanopedia serve` as a user runs it, in this process: the first build in a temporary
    folder, an entry edited and a theme file touched while it serves (each rebuilt, the theme
    with fresh templates), then SIGTERM, which ends it as Ctrl-C does (exit 130, the temporary
    site deleted). SIGTERM is delivered with `interrupt_main`, to this thread only."""
    import _thread
    import tempfile

    from nanopedia.cli import main
    from nanopedia.commands import serve  # noqa: F401 - its own files found before THEME is set
    from nanopedia.site import render

    entries = tmp_path / "entries"
    shutil.copytree(FIXTURES / "corpus", entries)
    theme = tmp_path / "theme"  # watched in place of the real one, which the test must not touch
    (theme / "templates").mkdir(parents=True)
    (theme / "templates" / "extra.html").write_text("<p>one</p>\n")
    monkeypatch.setattr(render, "THEME", theme)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)  # the build cache goes there
    failed: list[BaseException] = []
    printed: list[str] = []  # stderr, as the driving thread read it

    def drive() -> None:
        try:
            page = _until(
                lambda: next(scratch.glob("nanopedia-serve-*/site/entries/alpha-failure.html"), 0),
                "the first build",
            )
            alpha = entries / "alpha-failure.yaml"
            text = alpha.read_text()
            for n in range(20):  # the watcher may not be watching yet: edit until it sees one
                title = f"Edited while served {n}"
                alpha.write_text(text.replace("Alpha failure under FSDP", title))
                try:
                    _until(lambda t=title: t in page.read_text(), "the edit", timeout=3)  # type: ignore[misc]
                    break
                except AssertionError:
                    continue
            (entries / "notes.txt").write_text("not an entry")  # not watched
            (theme / "templates" / "extra.html").write_text("<p>two</p>\n")
            _until(
                lambda: (
                    printed.append(capfd.readouterr().err) or "changed extra" in "".join(printed)
                ),
                "the theme",
            )
        except BaseException as err:  # noqa: BLE001 - reported by the test's own thread
            failed.append(err)
        finally:
            _thread.interrupt_main(signal.SIGTERM)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    code = main(["serve", "--entries", str(entries), "--port", "0"])
    driver.join(30)
    assert not failed, failed
    assert code == 130
    assert list(scratch.iterdir()) == []  # the temporary site is gone
    err = "".join(printed) + capfd.readouterr().err
    said = [line for line in err.splitlines() if line]
    assert re.fullmatch(
        r"serving http://127\.0\.0\.1:\d+/ \(watching .*/entries/ and theme/; Ctrl-C stops\)",
        said[1],
    )
    rebuilt = r": rebuilt 2 entries in \d+\.\d\ds \(\d+ from cache\)"
    assert re.fullmatch("first build" + rebuilt, said[0])
    assert any(re.fullmatch("changed alpha-failure.yaml" + rebuilt, line) for line in said)
    # the build's own theme is the real one, unchanged: nothing to render again
    assert re.fullmatch("changed extra.html" + rebuilt.replace(" 2 ", r" \d+ "), said[-2])
    assert said[-1] == "nanopedia: interrupted"
    assert "notes.txt" not in err
