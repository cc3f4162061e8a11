"""Shared fixtures: paths, a CLI runner, and a real Chromium driven by Playwright.

Browser tests run against Debian's Chromium (`/usr/bin/chromium`, installed by `.ci/run`, or
`NANOPEDIA_CHROMIUM`). Where they are required they never skip: `.ci/run` and the tests workflow
set `NANOPEDIA_REQUIRE_BROWSER=1` (and `CI`, which GitHub sets, counts too), and a missing
Chromium is then an error. Only elsewhere, on a contributor's machine, do they skip, saying why.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nanopedia import __version__
from nanopedia.cli import main
from nanopedia.commands.bundle import single_file, zip_bundle
from nanopedia.content.catalog import Catalog
from nanopedia.content.corpus import gather
from nanopedia.errors import Problem
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = os.environ.get("NANOPEDIA_CHROMIUM", "/usr/bin/chromium")
SANDBOX_REQUIRED = bool(os.environ.get("NANOPEDIA_REQUIRE_SANDBOX") or os.environ.get("CI"))
"""Whether a missing bwrap fails the tests that run repro scripts instead of skipping them (CI
installs bubblewrap: .ci/run)."""
BROWSER_REQUIRED = bool(os.environ.get("NANOPEDIA_REQUIRE_BROWSER") or os.environ.get("CI"))
"""Whether a missing Chromium fails the browser tests instead of skipping them."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@functools.cache
def gathered_entries() -> tuple[Catalog, list[Problem]]:
    """`gather(ROOT / "entries")` once per test process: loading, validating (the fingerprints'
    slowness checks included) and linking the repository's entries take 2 s of CPU, and a
    dozen modules read them. The models are frozen; a test that changes entries copies them."""
    return gather(ROOT / "entries")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite golden files from the current output instead of comparing",
    )


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run, which every xdist worker's own folder is in."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def catalogue_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The compiled catalogues `diagnose` keeps (`incremental/catalogue.py`) go to a folder of
    the test run, for the commands run in-process and in subprocesses alike, never to the
    user's cache. The xdist workers share it, as processes on one machine share the user's
    (the store replaces a file in one rename): the repository's entries are compiled once."""
    folder = shared_folder(tmp_path_factory) / "catalogue-cache"
    folder.mkdir(exist_ok=True)
    before = os.environ.get("NANOPEDIA_CACHE")
    os.environ["NANOPEDIA_CACHE"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("NANOPEDIA_CACHE", None)
    else:
        os.environ["NANOPEDIA_CACHE"] = before


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True under `pytest --update-golden`: golden tests then write what they would compare."""
    return bool(request.config.getoption("--update-golden"))


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run `nanopedia ARGS...` in-process and return its exit code and output."""

    def run(*args: str) -> Run:
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def bwrap() -> None:
    """The repro sandbox's tools: a test that runs repro scripts needs them. Required in CI;
    elsewhere, without them, such a test skips, saying why."""
    from nanopedia.commands import sandbox

    if sandbox.find() is None:
        if SANDBOX_REQUIRED:
            pytest.fail(
                "bwrap (bubblewrap) is required to run repro scripts (CI or "
                "NANOPEDIA_REQUIRE_SANDBOX): apt-get install bubblewrap (.ci/run does)"
            )
        pytest.skip("bwrap not found: apt-get install bubblewrap to run the repro tests")


def built_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """What `make` writes into a new folder, made once per test run and copied for this worker:
    the first xdist worker that needs it makes it under a lock in the run's shared folder, and
    each worker gets a copy of its own (a few MB, milliseconds), so a file a test adds is seen by
    no other. For the fixtures below, defined here only: a fixture imported into several modules
    is set up once per module and per worker."""
    shared = shared_folder(factory)
    built = shared / f"{name}-built"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            fresh = shared / f"{name}-making"
            shutil.rmtree(fresh, ignore_errors=True)
            make(fresh)
            fresh.rename(built)
    mine = factory.mktemp(name) / name
    shutil.copytree(built, mine)
    return mine


@pytest.fixture(scope="session")
def repo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's entries built into a site (a page a test adds: `tools.held`)."""

    def make(out: Path) -> None:
        build(Request(ROOT / "entries", out, ROOT / "nanopedia.toml", use_cache=False, jobs=1))

    return built_once(tmp_path_factory, "repo-site", make)


@pytest.fixture(scope="session")
def repo_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's zip bundle, unpacked: the one folder it holds, with its `index.html`."""

    def make(out: Path) -> None:
        made = zip_bundle(ROOT / "entries", out.parent / f"{out.name}-dist", use_cache=False)
        with zipfile.ZipFile(made.path) as archive:
            archive.extractall(out)

    return built_once(tmp_path_factory, "repo-zip", make) / f"nanopedia-{__version__}"


@pytest.fixture(scope="session")
def repo_single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's single-file bundle: one HTML file that carries the whole site."""

    def make(out: Path) -> None:
        single_file(ROOT / "entries", out, use_cache=False)

    return built_once(tmp_path_factory, "repo-single", make) / f"nanopedia-{__version__}.html"


@pytest.fixture(scope="session")
def slurm_cluster(catalogue_cache: Path) -> Iterator[Any]:
    """A real Slurm on 127.0.0.1 (tests/slurmtools.py) for the whole test session, with
    contrib/slurm/epilog.sh as its Epilog. Required in CI; elsewhere, without Slurm, a test
    that needs it skips, saying why."""
    import slurmtools

    why = slurmtools.missing()
    if why:
        if slurmtools.REQUIRED:
            pytest.fail(f"{why} (CI or NANOPEDIA_REQUIRE_SLURM: .ci/run installs Slurm)")
        pytest.skip(why)
    with slurmtools.running(catalogue_cache) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the whole test session."""
    if not Path(CHROMIUM).exists():
        if BROWSER_REQUIRED:
            pytest.fail(
                f"Chromium not found at {CHROMIUM}, and browser tests are required "
                "(NANOPEDIA_REQUIRE_BROWSER or CI): install it (.ci/run does) or point "
                "NANOPEDIA_CHROMIUM at it"
            )
        pytest.skip(f"Chromium not found at {CHROMIUM} (set NANOPEDIA_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class PageWatch:
    """Everything a page did wrong: console errors, failed requests, CSP violations."""

    page: Any
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.console_errors == [], self.console_errors
        assert self.failed_requests == [], self.failed_requests
        assert self.csp_violations == [], self.csp_violations

    def paste(self, selector: str, text: str) -> None:
        """`text` into a box as a reader puts it there: copied, the box's text selected, then
        Ctrl+V (the page's paste handler runs). Playwright's `fill` inserts it as typed text
        instead, which Chromium's editor takes 9 s for 250 kB that a paste takes in 0.1 s."""
        self.page.evaluate(
            """async ([selector, text]) => {
              await navigator.clipboard.writeText(text);
              const box = document.querySelector(selector);
              box.focus();
              box.select();
            }""",
            [selector, text],
        )
        self.page.keyboard.press("ControlOrMeta+V")


@pytest.fixture
def watched_page(browser: Any) -> Iterator[PageWatch]:
    """A fresh page whose console errors, failed and external requests and CSP reports are kept."""
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    watch = PageWatch(page)

    def on_console(msg: Any) -> None:
        if msg.type == "error":
            watch.console_errors.append(msg.text)
            if "Content Security Policy" in msg.text or "Content-Security-Policy" in msg.text:
                watch.csp_violations.append(msg.text)

    def on_request(request: Any) -> None:
        url = request.url
        if not url.startswith(("file://", "data:", "blob:", "about:", "http://127.0.0.1")):
            watch.failed_requests.append(f"external request: {url}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: watch.console_errors.append(f"pageerror: {exc}"))
    page.on("requestfailed", lambda r: watch.failed_requests.append(f"{r.url} {r.failure}"))
    page.on("request", on_request)
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "console.error('Content Security Policy violation: ' + e.violatedDirective"
        " + ' ' + e.blockedURI));"
    )
    yield watch
    context.close()


@pytest.fixture(scope="session")
def bench_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmarks' 1,000 synthetic entries as JSON lines (`bench/corpus.py`, deterministic):
    realistic text for tests that check a fast path against the general one."""
    out = tmp_path_factory.mktemp("bench-corpus")
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "corpus.py"), "--n", "1000", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out / "entries.jsonl"


@pytest.fixture
def count_compiles(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Call it to count from then on: the names of the entry files the compiled catalogue
    compiles, in order."""
    from nanopedia.diagnosis import catalogue

    def start() -> list[str]:
        names: list[str] = []
        real = catalogue.compile_file

        def counted(path: Path, value: str) -> object:
            names.append(path.name)
            return real(path, value)

        monkeypatch.setattr(catalogue, "compile_file", counted)
        return names

    return start


@pytest.fixture
def tmp_corpus(tmp_path: Path) -> Path:
    """A copy of the small fixture corpus that a test may break."""
    dest = tmp_path / "entries"
    shutil.copytree(FIXTURES / "corpus", dest)
    return dest
