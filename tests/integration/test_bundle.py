"""`nanopedia bundle`: the zip and the single file, opened from `file://` in Chromium.

Each bundle is built once per module (the zip of the repo's entries, the single file of the repo's
entries, and both of the fixture corpus with a hostile entry added); the browser tests then search
a title word, a tag and an exact error string, follow results with the keyboard and the mouse,
and move between tags and entries, with zero console errors, failed requests and CSP violations.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import zipfile
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

from nanopedia import __version__
from nanopedia.commands import bundle

TOP = f"nanopedia-{__version__}"
HOSTILE_TITLE = 'Evil </script><img src=x onerror="window.pwned=1"> title'
HOSTILE = f"""\
id: hostile-entry
title: '{HOSTILE_TITLE}'
summary: |
  A summary with <script>window.pwned=2</script> and <b onclick="window.pwned=3">bold</b> markup.
category: numerics
tags: [bf16]
root_causes:
  - id: evil
    title: "<img src=y onerror=window.pwned=4> cause"
    domain: workload
    action: fix-code
    explanation: |
      Nothing executes.
symptoms:
  - text: "`<img src=z onerror=window.pwned=5>` in the log"
    cause: evil
mechanism: |
  None.
affected_systems:
  - name: Everything
confirm:
  - Look.
fix:
  - title: Escape
    detail: |
      Always.
prevention:
  - Test it.
references:
  - title: OWASP
    url: https://owasp.org/
    kind: docs
"""
ERROR = "Must flatten tensors with uniform dtype"
UNIFORM = """\
id: fsdp-uniform-dtype
title: FSDP refuses to flatten parameters of mixed dtypes
summary: |
  One FSDP unit holds parameters stored in different dtypes, so its flat parameter cannot be built.
category: mixed-precision
tags: [fsdp, bf16]
root_causes:
  - id: mixed
    title: Adapters in fp32 on a bf16 base model
    domain: workload
    action: fix-code
    explanation: |
      PEFT upcasts adapter weights.
symptoms:
  - text: >-
      `ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and
      torch.float32`
    cause: mixed
mechanism: |
  FSDP1 flattens every parameter of a unit into one tensor.
affected_systems:
  - name: PyTorch FSDP1
confirm:
  - List the dtypes of each unit's parameters.
fix:
  - title: Cast each unit to one dtype before wrapping
    detail: |
      Call `model.to(torch.float32)` first.
prevention:
  - Assert one dtype per unit in CI.
references:
  - title: FSDP docs
    url: https://docs.pytorch.org/docs/stable/fsdp.html
    kind: docs
fingerprints:
  - id: flat-param
    pattern: 'Must flatten tensors with uniform dtype but got'
    indicates: decisive
    cause: mixed
    must_match:
      - "[rank0]: ValueError: Must flatten tensors with uniform dtype but got torch.float32"
    must_not_match:
      - "ValueError: Cannot flatten integer dtype tensors"
"""
DECOY = """\
id: decoy-dtype-tensors
title: Tensors with a uniform dtype must still be flattened with care
summary: |
  Must flatten tensors? Uniform dtype tensors, uniform dtype flatten, must flatten, must flatten: a
  summary that repeats every word of the error to tempt a ranking that ignores fields.
category: numerics
tags: [nccl]
root_causes:
  - id: words
    title: Words repeated
    domain: workload
    action: fix-code
    explanation: |
      Repetition.
symptoms:
  - text: Nothing in particular.
    cause: words
mechanism: |
  None.
affected_systems:
  - name: Nothing
confirm:
  - Nothing.
fix:
  - title: Nothing
    detail: |
      Nothing.
prevention:
  - Nothing.
references:
  - title: Nothing
    url: https://example.org/
    kind: docs
"""


def _unzip(archive: Path, dest: Path) -> Path:
    with zipfile.ZipFile(archive) as z:
        z.extractall(dest)
    return dest / TOP


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus plus an entry with an exact error string, a decoy and a hostile one."""
    dest = tmp_path_factory.mktemp("corpus") / "entries"
    shutil.copytree(FIXTURES / "corpus", dest)
    for name, text in (
        ("hostile-entry", HOSTILE),
        ("fsdp-uniform-dtype", UNIFORM),
        ("decoy-dtype-tensors", DECOY),
    ):
        (dest / f"{name}.yaml").write_text(text, encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def site_zip(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zip bundle, unzipped."""
    out = tmp_path_factory.mktemp("zip")
    made = bundle.zip_bundle(corpus, out / "dist", use_cache=False)
    return _unzip(made.path, out / "unzipped")


@pytest.fixture(scope="module")
def single(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundle.single_file(corpus, tmp_path_factory.mktemp("single"), use_cache=False).path


def _type(page: Any, selector: str, text: str) -> Any:
    """Types into a search box and returns its first suggested entry once it shows, from the
    whole index (and no script still loading when the test goes to another page)."""
    page.fill(selector, text)
    first = page.locator(f"{selector} ~ [role=listbox] .search-entry").first
    first.wait_for()
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    return first


def _arrive(page: Any, fragment: str) -> None:
    """Waits until the location is `fragment` and the router has shown that page: the hash
    changes at once, the page only on the `hashchange` event that follows it."""
    page.wait_for_function(
        """f => location.hash === f && document.title ===
            document.getElementById('page:' + f.slice(2).split(/[?#]/)[0]).dataset.title""",
        arg=fragment,
    )


# Determinism and layout of the zip -------------------------------------------------------------


def test_two_zip_bundles_are_byte_identical(
    cli: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    runs = []
    for n in (1, 2):
        out = tmp_path / f"dist{n}"
        run = cli("bundle", "--entries", str(corpus), "--out", str(out), "--no-cache")
        assert run.code == 0, run.out + run.err
        runs.append((out / f"{TOP}.zip").read_bytes())
        digest = hashlib.sha256(runs[-1]).hexdigest()
        assert (out / f"{TOP}.zip.sha256").read_text() == f"{digest}  {TOP}.zip\n"
    assert runs[0] == runs[1]
    with zipfile.ZipFile(tmp_path / "dist1" / f"{TOP}.zip") as z:
        infos = z.infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names)
    assert all(n.startswith(f"{TOP}/") and ".." not in n.split("/") for n in names)
    assert {i.date_time for i in infos} == {(2023, 11, 14, 22, 13, 20)}
    modes = {i.filename: i.external_attr >> 16 for i in infos}
    assert {oct(m) for n, m in modes.items() if not n.endswith("/")} == {"0o100644"}
    assert {oct(m) for n, m in modes.items() if n.endswith("/")} == {"0o40755"}
    assert f"{TOP}/index.html" in names and f"{TOP}/search/index.js" in names
    assert f"{TOP}/.nanopedia-site" not in names


class Killed(BaseException):
    """A kill -9 at a chosen write: nothing after it runs."""


def _kill_at(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file-system write from now on (create, open for writing, replace, unlink) counts;
    the `step`-th one raises `Killed` instead of happening."""
    import io
    import os

    done = [0]

    def counted(real: Any, writes: Any = lambda *a, **k: True) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if writes(*args, **kwargs):
                done[0] += 1
                if done[0] > step:
                    raise Killed
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(os, "replace", counted(os.replace))
    monkeypatch.setattr(os, "unlink", counted(os.unlink))
    monkeypatch.setattr(
        os,
        "open",
        counted(os.open, lambda path, flags, *a, **k: bool(flags & (os.O_WRONLY | os.O_RDWR))),
    )
    monkeypatch.setattr(
        io,
        "open",
        counted(
            io.open, lambda f, mode="r", *a, **k: isinstance(f, (str, Path)) and mode[:1] in "wxa"
        ),
    )


@pytest.mark.parametrize("step", range(6))
def test_a_killed_publish_never_pairs_a_zip_with_another_checksum(
    step: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F03: killed at any write while publishing, the zip beside its `.sha256` is the old pair,
    the new pair, or a zip without a checksum; never a zip with another zip's checksum."""
    dist = tmp_path / "dist"
    (tmp_path / "old.zip").write_bytes(b"the old zip")
    bundle._publish(tmp_path / "old.zip", dist / "n.zip")
    (tmp_path / "new.zip").write_bytes(b"the new zip")
    with monkeypatch.context() as patched:
        _kill_at(step, patched)
        try:
            bundle._publish(tmp_path / "new.zip", dist / "n.zip")
        except Killed:
            pass
    checksum = dist / "n.zip.sha256"
    if checksum.exists():
        digest = hashlib.sha256((dist / "n.zip").read_bytes()).hexdigest()
        assert checksum.read_text() == f"{digest}  n.zip\n"


def test_a_killed_bundle_s_scratch_is_swept(corpus: Path, tmp_path: Path) -> None:
    """F02: a kill -9 leaves `dist/.nanopedia-bundle-<pid>-*` (a whole site); the next bundle
    removes it when its process is gone, and leaves a running one's alone."""
    import os

    dead = tmp_path / f"{bundle.SCRATCH_PREFIX}999999999-abc"  # above any pid_max
    (dead / "site").mkdir(parents=True)
    (dead / "site" / "index.html").write_text("left by a killed run")
    alive = tmp_path / f"{bundle.SCRATCH_PREFIX}{os.getpid()}-def"
    alive.mkdir()
    bundle.zip_bundle(corpus, tmp_path, use_cache=False)
    assert not dead.exists() and alive.is_dir()


def test_zip_timestamps_default_to_a_fixed_date(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    made = bundle.zip_bundle(corpus, tmp_path, use_cache=False)
    with zipfile.ZipFile(made.path) as z:
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_bundle_refuses_a_bad_source_date_epoch(
    cli: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    run = cli("bundle", "--entries", str(corpus), "--out", str(tmp_path), "--no-cache")
    assert run.code == 1
    assert "SOURCE_DATE_EPOCH must be whole seconds, not 'yesterday'" in run.out
    assert not (tmp_path / f"{TOP}.zip").exists()


def test_single_file_is_reproducible(single: Path, corpus: Path, tmp_path: Path) -> None:
    again = bundle.single_file(corpus, tmp_path, use_cache=False)
    assert again.path.read_bytes() == single.read_bytes()
    assert (tmp_path / f"{again.path.name}.sha256").read_text() == (
        f"{again.sha256}  {again.path.name}\n"
    )


def test_single_file_allows_inline_code_only_by_hash(single: Path) -> None:
    html = single.read_text(encoding="utf-8")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = html_unescape(csp.group(1))
    assert "unsafe-inline" not in policy and "'self'" not in policy
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert scripts and styles
    for code in scripts + styles:
        assert bundle.csp_hash(code) in policy
    assert "<script src" not in html and '<link rel="stylesheet"' not in html


# In the browser: the zip -----------------------------------------------------------------------


def test_zip_search_from_file_url(site_zip: Path, watched_page: Any) -> None:
    page = watched_page.page
    page.goto((site_zip / "index.html").as_uri())
    box = "#search-q"
    # A title word: the title is shown with the word marked.
    first = _type(page, box, "alpha")
    assert first.locator(".search-title mark").first.inner_text() == "Alpha"
    assert first.locator("a").get_attribute("href") == "entries/alpha-failure.html"
    # A tag: the tag itself is offered, and the entries carrying it.
    _type(page, box, "nccl")
    tag = page.locator("#search-suggestions .search-tag a").first
    assert tag.inner_text() == "#NCCL (2 entries)"
    assert tag.get_attribute("href") == "tags/nccl.html"
    # The exact error string: the entry that documents it comes first, above a decoy that repeats
    # the words in its summary, with the error line shown.
    _type(page, box, ERROR)
    page.locator("form[data-index-state=complete]").wait_for(state="attached")
    page.fill(box, "")
    first = _type(page, box, ERROR)
    assert first.locator("a").get_attribute("href") == "entries/fsdp-uniform-dtype.html"
    assert ERROR in first.locator(".search-field-errors code").inner_text()
    entries = page.locator("#search-suggestions .search-entry a")
    assert entries.nth(1).get_attribute("href") == "entries/decoy-dtype-tensors.html"
    # Keyboard: Escape closes, arrows select, Enter follows the selected result.
    page.keyboard.press("Escape")
    assert page.locator("#search-suggestions").is_hidden()
    page.keyboard.press("ArrowDown")
    assert page.get_attribute(box, "aria-activedescendant") == "search-suggestions-0"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/entries/fsdp-uniform-dtype.html")
    # One folder down, links still resolve: a suggestion, then a tag page, then an entry.
    first = _type(page, box, "watchdog")
    assert first.locator("a").get_attribute("href") == "../entries/beta-failure.html"
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.locator("main a[href='../tags/fsdp.html']").first.click()
    assert page.url.endswith("/tags/fsdp.html")
    with page.expect_navigation():
        page.locator("main a[href$='alpha-failure.html']").first.click()
    assert page.url.endswith("/entries/alpha-failure.html")
    # Enter without a selection opens the results page, with the query in the address.
    _type(page, box, "bf16 fsdp")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/search.html?q=bf16%20fsdp")
    results = page.locator("#search-results .search-entry")
    results.first.wait_for()
    assert page.input_value("#search-page-q") == "bf16 fsdp"
    hrefs = {results.nth(i).locator("a").get_attribute("href") for i in range(results.count())}
    assert {"entries/alpha-failure.html", "entries/fsdp-uniform-dtype.html"} <= hrefs
    # One typo is forgiven.
    page.fill("#search-page-q", "watchdgo")
    page.locator("#search-results a[href='entries/beta-failure.html']").wait_for()
    watched_page.assert_clean()


def test_hostile_entry_text_is_shown_as_text(
    corpus: Path, tmp_path: Path, watched_page: Any
) -> None:
    made = bundle.zip_bundle(corpus, tmp_path, use_cache=False)
    site = _unzip(made.path, tmp_path / "unzipped")
    page = watched_page.page
    page.goto((site / "index.html").as_uri())
    assert HOSTILE_TITLE in page.inner_text("main")
    first = _type(page, "#search-q", "evil")
    assert first.locator(".search-title").inner_text() == HOSTILE_TITLE
    page.fill("#search-q", "onerror")
    page.locator("#search-suggestions .search-field").first.wait_for()
    assert page.locator("#search-suggestions img, #search-suggestions script").count() == 0
    page.goto((site / "search.html").as_uri() + "?q=pwned")
    page.locator("#search-results .search-entry").first.wait_for()
    assert page.locator("main img, main b").count() == 0
    assert page.evaluate("window.pwned") is None
    watched_page.assert_clean()


# In the browser: the single file ---------------------------------------------------------------


def test_single_file_pages_tags_and_search(single: Path, watched_page: Any) -> None:
    page = watched_page.page
    page.goto(single.as_uri())
    assert page.locator("main h1").count() == 1
    first = _type(page, "#search-q", ERROR)
    assert first.locator("a").get_attribute("href") == "#/entries/fsdp-uniform-dtype.html"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    _arrive(page, "#/entries/fsdp-uniform-dtype.html")
    assert page.title().startswith("FSDP refuses to flatten")
    # The pages' own relative links work: a tag, an entry of that tag, the tag list, a tag.
    page.locator("main a[href='../tags/bf16.html']").first.click()
    _arrive(page, "#/tags/bf16.html")
    assert page.locator("main h1").inner_text() == "#bf16"
    page.locator("main a[href$='alpha-failure.html']").first.click()
    _arrive(page, "#/entries/alpha-failure.html")
    page.locator("header a[href='#/tags/index.html']").click()
    page.locator("main a[href='fsdp.html']").first.click()
    _arrive(page, "#/tags/fsdp.html")
    # A tag, then a title word and the results page.
    _type(page, "#search-q", "nccl")
    tag = page.locator("#search-suggestions .search-tag a").first
    assert tag.get_attribute("href") == "#/tags/nccl.html"
    _type(page, "#search-q", "beta")
    page.keyboard.press("Enter")
    _arrive(page, "#/search.html?q=beta")
    result = page.locator("#search-results .search-entry a").first
    result.wait_for()
    result.click()
    _arrive(page, "#/entries/beta-failure.html")
    watched_page.assert_clean()


def test_single_file_shows_hostile_text_as_text(
    corpus: Path, tmp_path: Path, watched_page: Any
) -> None:
    made = bundle.single_file(corpus, tmp_path, use_cache=False)
    page = watched_page.page
    page.goto(made.path.as_uri() + "#/entries/hostile-entry.html")
    assert page.locator("main h1").inner_text() == HOSTILE_TITLE
    first = _type(page, "#search-q", "evil")
    assert first.locator(".search-title").inner_text() == HOSTILE_TITLE
    assert page.locator("img, main b").count() == 0
    assert page.evaluate("window.pwned") is None
    watched_page.assert_clean()
