"""Search over the repository's own entries in Chromium, from `file://`, in the zip and the
single-file bundle: a pasted log line (a fingerprint's example, with its `[rank0]:` prefix)
ranks the entry that documents it first, each result shows its quick answer and the field that
matched, tags are suggested only for tag-like queries, and the form says when the whole index is
usable. The scan of the short fields that answers before the index shards load is tested alone,
with the shards missing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import gathered_entries

from nanopedia.site import search

BOX = "#search-q"
RESULTS = f"{BOX} ~ [role=listbox] .search-entry"


def _normal(line: str) -> str:
    return re.sub(r"\s+", " ", search._LOG_PREFIX.sub("", line)).strip().lower()


def _pasted() -> list[tuple[str, set[str], str]]:
    """Each repository entry's first fingerprint example as pasted from a rank's log, the
    entries that document that very line, and the pasting entry's quick answer."""
    catalog = gathered_entries()[0]
    errors = {
        e.id: {
            _normal(str(x))
            for field in (3, 4)  # errors and mentions
            for x in search.document(e)[0][field]
        }  # type: ignore[union-attr]
        for e in catalog.entries
    }
    cases = []
    for entry in catalog.entries:
        lines = [line for fp in entry.fingerprints for line in fp.must_match]
        if not lines:
            continue
        line = lines[0] if lines[0].startswith("[") else f"[rank0]: {lines[0]}"
        owners = {i for i, found in errors.items() if _normal(line) in found}
        cases.append((line, owners, search.answer(str(search.document(entry)[1][0]))))
    return cases


PASTED = _pasted()

#: Shorter pasted text is too common to say whose error it is (search.js, ERROR_MIN).
ERROR_MIN = 16
#: How a line comes out of other logs than the one quoted: a logging timestamp and level before
#: a rank prefix, a glog header with a path, other sizes and pids (runs of 3 or more digits).
VARIANTS = (
    lambda line: f"2025-03-30 08:24:00,123 - ERROR - [rank3]: {line}",
    lambda line: (
        "E0330 08:24:00.123456 4242 /home/me/train/run.py:12] "
        + line.replace("/opt/conda/", "/home/me/miniconda3/")
    ),
    lambda line: (
        "[rank7]: "
        + re.sub(r"\d{3,}", lambda m: "".join(str((int(d) + 1) % 10) for d in m[0]), line)
    ),
)


def _decisive() -> list[tuple[str, str, list[str]]]:
    """Every entry's decisive error lines: its decisive fingerprints' examples (as quoted, then
    as other logs print them) and the messages its title quotes, each with the entries that may
    come first for it: the entry, and those its fingerprint says own the same text (`overlaps`)."""
    cases = []
    for entry in gathered_entries()[0].entries:
        for fp in entry.fingerprints:
            if fp.indicates != "decisive":
                continue
            firsts = sorted({entry.id, *fp.overlaps})
            for line in fp.must_match:
                cases += [(text, entry.id, firsts) for text in (line, *(v(line) for v in VARIANTS))]
        cases += [
            (quote, entry.id, [entry.id])
            for quote in search.title_quotes(entry.title)
            if len(quote) >= ERROR_MIN
        ]
    return cases


def _results(page: Any, text: str) -> Any:
    page.fill(BOX, "")
    page.fill(BOX, text)
    page.locator(RESULTS).first.wait_for()
    return page.locator(RESULTS)


def _check_pasted_lines(page: Any) -> None:
    for line, owners, answer in PASTED:
        results = _results(page, line)
        first = results.first
        href = first.locator("a").get_attribute("href") or ""
        assert href.rsplit("/", 1)[-1].removesuffix(".html") in owners, (line, href)
        assert first.locator(".search-answer").inner_text() in {answer} | {
            a for _, o, a in PASTED if o & owners
        }
        assert first.locator(".search-label").inner_text() == "Error", line
        # A log line is no tag name, even when it names torch.
        assert page.locator(f"{BOX} ~ [role=listbox] .search-tag").count() == 0, line


def test_the_repository_has_lines_to_paste() -> None:
    assert len(PASTED) >= 5
    assert any("torch" in line for line, _, _ in PASTED)
    assert "torch-compile" in gathered_entries()[0].links.tags


@pytest.mark.parametrize("kind", ["zip", "single"])
def test_pasted_error_lines_rank_their_entry_first(
    kind: str, repo_zip: Path, repo_single: Path, watched_page: Any
) -> None:
    page = watched_page.page
    page.goto((repo_zip / "index.html").as_uri() if kind == "zip" else repo_single.as_uri())
    page.fill(BOX, "nccl")
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    assert {page.get_attribute(f, "data-index-state") for f in ["form[data-search]"]} == {
        "complete"
    }
    _check_pasted_lines(page)
    watched_page.assert_clean()


def test_every_decisive_error_line_puts_its_entry_first(repo_zip: Path, watched_page: Any) -> None:
    """#32, #34: each entry's decisive error lines and the messages its title quotes, pasted into
    the search box, rank that entry first, with the log prefixes, paths and sizes of another log
    around them; an entry that only mentions a line (a symptom's quote, a collateral line) never
    comes above the one that owns it. One page load: the page's own ranking (`search.js`,
    `NanopediaSearchIds`) over every line."""
    cases = _decisive()
    assert len({entry for _, entry, _ in cases}) >= 90  # nearly every entry has one
    page = watched_page.page
    page.goto((repo_zip / "index.html").as_uri())
    page.fill(BOX, "nccl")
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    firsts = page.evaluate(
        "texts => texts.map(t => (window.NanopediaSearchIds(t) || [])[0])",
        [text for text, _, _ in cases],
    )
    wrong = [
        f"{entry}: {text[:100]!r} puts {got} first"
        for (text, entry, allowed), got in zip(cases, firsts, strict=True)
        if got not in allowed
    ]
    assert wrong == [], "\n".join(wrong)
    for text, entry in (
        ("CUDA out of memory", "cuda-out-of-memory"),
        ("Watchdog caught collective operation timeout", "nccl-watchdog-timeout"),
        ("Expected all tensors to be on the same device", "device-mismatch"),
        ("NaN or Inf found in input tensor", "sampling-nan-inf-probability"),
    ):
        assert page.evaluate("t => window.NanopediaSearchIds(t)[0]", text) == entry, text
    watched_page.assert_clean()


UNQUOTED = "No entry quotes this error exactly; closest matches:"


def test_a_pasted_error_no_entry_quotes_says_so_above_the_closest_matches(
    repo_zip: Path, watched_page: Any
) -> None:
    """#32: a pasted line that no entry holds exactly is said to be so, above the fuzzy results,
    in the header box and on the results page (and in the status line, for screen readers); a
    line an entry quotes, or a few words typed, are not."""
    page = watched_page.page
    page.goto((repo_zip / "index.html").as_uri())
    page.fill(BOX, "nccl")
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    listbox = f"{BOX} ~ [role=listbox]"
    unknown = "[rank2]: RuntimeError: the flux capacitor of allreduce overheated at step 12"
    _results(page, unknown)
    first = page.locator(f"{listbox} > li").first
    assert first.get_attribute("class") == "search-note" and first.inner_text() == UNQUOTED
    assert page.locator(f"{listbox} .search-entry").count() > 0
    assert page.locator(".search-status").first.text_content().startswith(UNQUOTED)
    for quoted in (
        "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        "nccl timeout",
        "CUDA out of memory",
    ):
        _results(page, quoted)
        assert page.locator(f"{listbox} .search-note").count() == 0, quoted
        assert not page.locator(".search-status").first.text_content().startswith(UNQUOTED)
    page.goto((repo_zip / "search.html").as_uri() + "?q=" + quote(unknown))
    page.locator("form[data-page] .search-entry").first.wait_for()
    assert page.locator("form[data-page] [role=listbox] > li").first.inner_text() == UNQUOTED
    watched_page.assert_clean()


def test_tags_are_suggested_for_tag_like_queries(repo_zip: Path, watched_page: Any) -> None:
    page = watched_page.page
    page.goto((repo_zip / "index.html").as_uri())
    tags = f"{BOX} ~ [role=listbox] .search-tag"
    for query in ("torch.compile", "#torch", "torch comp"):
        _results(page, query)
        page.locator(tags).first.wait_for()
        assert page.locator(tags).first.inner_text().startswith("#torch.compile ("), query
    _results(page, "torch dtype mismatch in the optimizer")
    assert page.locator(tags).count() == 0
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    watched_page.assert_clean()


def test_the_first_scan_answers_alone(repo_zip: Path, tmp_path: Path, browser: Any) -> None:
    """Without the index shards, the scan of the short fields still ranks a pasted line's
    entry first with its answer, and the form never claims the index is complete."""
    site = tmp_path / "site"
    shutil.copytree(repo_zip, site)
    for shard in (site / "search").glob("terms-*.js"):
        shard.unlink()
    page = browser.new_page()
    try:
        page.goto((site / "index.html").as_uri())
        _check_pasted_lines(page)
        assert page.get_attribute("form[data-search]", "data-index-state") == "quick"
    finally:
        page.close()


#: Holds back the search library's script until `window.__release()`: the index can complete
#: only then, so a test can act while the first scan answers.
HOLD_LIBRARY = """
(function () {
  var append = Node.prototype.appendChild;
  var held = [];
  Node.prototype.appendChild = function (el) {
    if (!window.__go && el.tagName === 'SCRIPT' && /minisearch/.test(el.src)) {
      held.push([this, el]);
      return el;
    }
    return append.call(this, el);
  };
  window.__release = function () {
    window.__go = true;
    held.forEach(function (h) { append.call(h[0], h[1]); });
    return held.length;
  };
}());
"""


def test_the_selected_result_stays_selected_when_the_index_completes(
    repo_zip: Path, watched_page: Any
) -> None:
    """Results drawn again from the whole index keep the reader's selected link selected, in the
    header box and past the first batch of the results page, and the results page shows every
    result the status line counts once the index has come."""
    page = watched_page.page
    page.add_init_script(HOLD_LIBRARY)
    for url, box, moves in (
        ((repo_zip / "index.html").as_uri(), BOX, 2),
        ((repo_zip / "search.html").as_uri() + "?q=error", "#search-page-q", 15),
    ):
        page.goto(url)
        page.focus(box)
        if box == BOX:
            page.fill(BOX, "nccl timeout")
        page.locator(f"{box} ~ [role=listbox] .search-entry").nth(moves - 1).wait_for()
        assert page.get_attribute("form[data-search]", "data-index-state") == "quick"
        for _ in range(moves):
            page.keyboard.press("ArrowDown")
        selected = page.locator(f"{box} ~ [role=listbox] [aria-selected=true]")
        href = selected.get_attribute("href")
        assert page.evaluate("window.__release()") == 1
        page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
        assert selected.count() == 1 and selected.get_attribute("href") == href, url
        assert page.get_attribute(box, "aria-activedescendant") == selected.get_attribute("id")
        assert page.get_attribute(box, "aria-expanded") == "true"
    found = int(page.locator("form[data-page] .search-status").inner_text().split()[0])
    assert found > 15  # more than the first batch: the rest come in the next task
    page.wait_for_function(
        f"() => document.querySelectorAll('form[data-page] .search-entry')"
        f".length === {min(found, 100)}"
    )
    assert not watched_page.console_errors


@pytest.mark.parametrize("query", ["struct", "constructor", "__proto__", "hasOwnProperty"])
def test_words_that_name_object_properties_are_ordinary_queries(
    query: str, repo_zip: Path, watched_page: Any
) -> None:
    """B04: the words a hit matched are kept in a map; `constructor` (which `struct` finds in
    `struct c10::BFloat16` entries) must be a word there, not Object's own property."""
    page = watched_page.page
    page.goto((repo_zip / "search.html").as_uri() + "?q=" + query)
    status = page.locator(".search-status").first
    page.wait_for_function(
        "s => !/Loading/.test(s.textContent) && s.textContent", arg=status.element_handle()
    )
    assert re.match(r"(\d+ entr(y|ies) found|No entry)", status.inner_text()), status.inner_text()
    watched_page.assert_clean()


def test_one_huge_pasted_token_does_not_hold_the_page(repo_zip: Path, watched_page: Any) -> None:
    """B11: a 60,000-character token (a base64 blob from a log) in the header box: no task of
    the page's main thread takes 2 s or more."""
    page = watched_page.page
    page.goto((repo_zip / "index.html").as_uri())
    page.fill(BOX, "nccl")
    page.locator("form[data-index-state=complete]").first.wait_for(state="attached")
    page.evaluate("""() => { window.__tasks = []; new PerformanceObserver(list =>
        list.getEntries().forEach(e => window.__tasks.push(e.duration)))
        .observe({type: 'longtask'}); }""")
    page.fill(BOX, "QmFzZTY0" * 7500, timeout=20_000)
    page.locator(f"{BOX} ~ [role=listbox] .search-all").first.wait_for(timeout=20_000)
    page.evaluate("() => new Promise(r => setTimeout(r, 300))")  # the rest of the results
    assert max(page.evaluate("window.__tasks"), default=0) < 2000
    watched_page.assert_clean()
