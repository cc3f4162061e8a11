"""The diagnosis page (site/diagnose.html) from file://: the CLI's answers, safely, offline.

Every case of the labelled corpus (tests/logs/labels.yaml) goes through `nanopedia.diagnosis`
(scan, then rank) and through the page in a real Chromium, as files on the file input and, for
single logs, pasted; the entries (in order), scores, evidence lines, ranks and first failure must
be the same. The buried cases are larger than one read buffer, so they also cover matching
across worker reads.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.diagnosis import rank, scan
from nanopedia.diagnosis.logs import BUFFER_BYTES

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import cases, materialise  # noqa: E402

CASES = cases()
LOGS = ROOT / "tests" / "logs"
ERROR = "[rank3]: RuntimeError: expected scalar type BFloat16 but found Float"
SHOWN = """() => Array.from(document.querySelectorAll('#matches > li')).map(li => ({
  id: li.dataset.id,
  score: Number(li.querySelector('.match-score').textContent.replace('score ', '')),
  benign: !li.querySelector('.benign').hidden,
  href: li.querySelector('.match-title').getAttribute('href'),
  evidence: Array.from(li.querySelectorAll('.evidence-line')).map(e => [
    e.dataset.file, Number(e.dataset.line), e.querySelector('.rank').textContent,
    e.querySelector('.fingerprint').textContent, !e.querySelector('.collateral').hidden,
    e.querySelector('.text').textContent])
}))"""


@pytest.fixture(scope="module")
def site(repo_site: Path) -> Path:
    return repo_site


@pytest.fixture(scope="module")
def matcher() -> scan.Matcher:
    return scan.Matcher(gathered_entries()[0].entries)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


def expected(matcher: scan.Matcher, named: list[tuple[str, bytes]]) -> dict[str, Any]:
    """What the page must show for logs given as (name, bytes), computed by the CLI's code."""
    scans = [scan.scan(io.BytesIO(data), name, matcher) for name, data in named]
    result = rank.diagnose(scans)
    return {
        "matches": [
            {
                "id": c.id,
                "score": c.score,
                "benign": c.benign,
                "href": f"entries/{c.id}.html",
                "evidence": [
                    [
                        e.file,
                        e.line,
                        "" if e.rank is None else f"rank {e.rank}",
                        f"{e.fingerprint} ({e.indicates})",
                        e.collateral,
                        e.text,
                    ]
                    for e in c.evidence
                ],
            }
            for c in result.matches
        ],
        "rank": "" if result.initiating_rank is None else str(result.initiating_rank),
        "first": f"{first.file}:{first.line}" if (first := result.initiating) else None,
    }


#: What `shown` reads once a run has finished, in one round trip to the page.
STATE = (
    """() => {
  const first = document.querySelector('#first-failure');
  return {
    state: document.querySelector('#status').dataset.state,
    said: document.querySelector('#status-text').textContent,
    matches: ("""
    + SHOWN
    + """)(),
    rank: first.dataset.rank || '',
    words: first.textContent || '',
    visible: first.checkVisibility(),
  };
}"""
)
#: `STATE` once the run started last (the status's `data-run` now) is done or failed, in one
#: round trip: the every-case test waits for hundreds of runs.
WHEN_DONE = (
    """async () => {
  const status = document.querySelector('#status');
  const run = status.dataset.run;
  const over = () => status.dataset.run === run
    && (status.dataset.state === 'done' || status.dataset.state === 'error');
  if (!over()) {
    await new Promise((resolve, reject) => {
      const watch = new MutationObserver(() => { if (over()) { watch.disconnect(); resolve(); } });
      watch.observe(status, {attributes: true});
      const late = () => { watch.disconnect(); reject(new Error(`run ${run} not over in 30 s`)); };
      setTimeout(late, 30000);
    });
  }
  return ("""
    + STATE
    + """)();
}"""
)


def shown(page: Any) -> dict[str, Any]:
    """What the page shows once the run started last has finished."""
    seen = page.evaluate(WHEN_DONE)
    assert seen["state"] == "done", seen["said"]
    words = seen["words"]
    return {
        "matches": seen["matches"],
        "rank": seen["rank"],
        "first": words.split(" at ")[1].split(" (")[0]
        if seen["visible"] and " at " in words
        else None,
    }


def open_page(watch: Any, site: Path) -> Any:
    page = watch.page
    page.goto((site / "diagnose.html").as_uri())
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    return page


def pasted_too(index: int, text: str) -> bool:
    """Whether the every-case test pastes a single unburied log as well as choosing it as a file:
    each log the text box may hold otherwise than the file's bytes read (a CR, a tab, anything
    not ASCII), and one plain log in four. The engine is the same on both ways in; the plain
    logs pasted check the way in, and the page's own work on each (a third of the test's CPU)
    adds nothing the file path does not check on every case."""
    return index % 4 == 0 or not text.isascii() or "\r" in text or "\t" in text


def test_page_gives_the_cli_answer_on_every_case(site, matcher, logs, watched_page) -> None:
    """Each case as files on the input and, for a single unburied log, pasted (`pasted_too`); all
    mismatches are reported together."""
    page = open_page(watched_page, site)
    wrong = []
    pasted = 0
    for index, case in enumerate(CASES):
        paths = materialise(case, logs)
        page.set_input_files("#log-files", [str(p) for p in paths])
        want = expected(matcher, [(p.name, p.read_bytes()) for p in paths])
        got = shown(page)
        if got != want:
            wrong.append((case.name, "files", got, want))
        if case.top is not None and [m["id"] for m in got["matches"][:1]] != [case.top]:
            wrong.append((case.name, "label", got["matches"][:1], case.top))
        single = len(paths) == 1 and not case.bury
        if single and pasted_too(index, text := paths[0].read_text()):
            pasted += 1
            # left in the box: chosen files are read whatever it holds
            watched_page.paste("#log-text", text)
            # A real click, without Playwright's wait for the button to hold still over two
            # frames (15 of its 58 s, measured); an idle page's button never moves.
            page.click("#run", force=True)
            got = shown(page)
            want = expected(matcher, [("pasted log", text.encode())])
            if got != want:
                wrong.append((case.name, "pasted", got, want))
    assert wrong == []
    assert pasted >= 100
    watched_page.assert_clean()


def test_every_fingerprint_example_gives_the_cli_answer(site, matcher, watched_page) -> None:
    """Each fingerprint's own examples, the lines that must match and those that must not, pasted
    as one log: the page's prefilter and rewritten patterns agree with RE2 on every one."""
    full = {(e.id, f.id): f for e in gathered_entries()[0].entries for f in e.fingerprints}
    examples = [full[(probe.entry_id, probe.fingerprint.id)] for probe in matcher.probes]
    lines = [line for fp in examples for line in (*fp.must_match, *fp.must_not_match)]
    text = "\n".join(lines) + "\n"
    page = open_page(watched_page, site)
    watched_page.paste("#log-text", text)
    page.click("#run")
    got = shown(page)
    want = expected(matcher, [("pasted log", text.encode())])
    assert got == want
    matched = {ev[3].split(" ")[0] for m in got["matches"] for ev in m["evidence"]}
    assert matched == {fp.id for fp in examples if fp.must_match}
    watched_page.assert_clean()


def test_gzip_file_across_read_buffers(site, matcher, logs, watched_page) -> None:
    """A buried log larger than one read buffer, gzipped: the page inflates it as the CLI does."""
    case = next(c for c in CASES if c.bury and c.top)
    raw = materialise(case, logs)[0]
    assert raw.stat().st_size > BUFFER_BYTES
    packed = logs / "big.log.gz"
    packed.write_bytes(gzip.compress(raw.read_bytes(), 1))
    page = open_page(watched_page, site)
    page.set_input_files("#log-files", str(packed))
    got = shown(page)
    want = expected(matcher, [("big.log.gz", raw.read_bytes())])
    assert got == want and got["matches"][0]["id"] == case.top
    watched_page.assert_clean()


def test_hostile_log_text_and_names_stay_text(site, logs, watched_page) -> None:
    hostile = (
        f"{ERROR} <img src=x onerror=\"document.title='pwned'\"></script>"
        "<script>document.title='pwned'</script>"
    )
    log = logs / "<img src=x onerror=alert(1)>.log"
    log.write_text(f"step 1\n{hostile}\n")
    page = open_page(watched_page, site)
    watched_page.paste("#log-text", f"{hostile}\n")
    page.click("#run")
    first = shown(page)
    page.set_input_files("#log-files", str(log))
    second = shown(page)
    for got, name, line in ((first, "pasted log", 1), (second, log.name, 2)):
        evidence = got["matches"][0]["evidence"][0]
        assert evidence[:2] == [name, line] and evidence[5] == hostile
    assert page.evaluate("document.querySelectorAll('#results img, #results script').length") == 0
    assert page.title() != "pwned"
    watched_page.assert_clean()


def test_csp_forbids_connections_and_the_page_says_so(site, watched_page) -> None:
    page = open_page(watched_page, site)
    csp = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "connect-src 'none'" in csp and "worker-src blob:" in csp
    assert "Nothing leaves your browser" in page.text_content("#private")
    watched_page.assert_clean()
    page.evaluate("() => fetch('diagnose.html').catch(() => null)")
    page.wait_for_timeout(200)
    assert any("connect-src" in v for v in watched_page.csp_violations)


def test_time_budget_names_the_slowest_fingerprint(site, watched_page) -> None:
    page = open_page(watched_page, site)
    page.fill("#budget", "0.001")
    watched_page.paste("#log-text", f"step 1 loss 2.0\n{ERROR}\n")
    page.click("#run")
    page.wait_for_selector("#status[data-state=error]", state="attached")
    message = page.text_content("#status-text") or ""
    assert (
        "diagnosis stopped" in message
        and "the slowest fingerprint on the last buffer was '" in message
    )
    assert page.locator("#results").is_hidden() and page.locator("#run").is_enabled()
    watched_page.assert_clean()


def test_every_page_links_to_the_diagnosis(site, watched_page) -> None:
    page = watched_page.page
    page.goto((site / "index.html").as_uri())
    page.click("nav >> text=Diagnose a log")
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    assert page.url.endswith("/diagnose.html")
    watched_page.assert_clean()


def test_cancel_stops_the_worker(site, matcher, logs, watched_page) -> None:
    big = logs / "cancel.log"
    with big.open("wb") as out:
        out.write(
            b"step 1 loss 2.0 lr 3e-4 tokens/s 120000 all fine here, nothing to see\n" * 1_000_000
        )
    page = open_page(watched_page, site)
    page.set_input_files("#log-files", str(big))
    page.wait_for_selector("#status[data-state=running]", state="attached")
    page.click("#cancel")
    assert page.locator("#status").get_attribute("data-state") == "cancelled"
    assert page.locator("#run").is_enabled() and page.locator("#results").is_hidden()
    # the stopped worker is replaced: the next run answers
    watched_page.paste("#log-text", f"{ERROR}\n")
    page.click("#run")
    assert shown(page) == expected(matcher, [("pasted log", f"{ERROR}\n".encode())])
    watched_page.assert_clean()


#: A fingerprint added to the page's data that backtracks for ever on a line of `a`s (as a
#: pattern RE2 runs in linear time can in JavaScript): the page finds it stuck after STALL_MS.
STUCK = """
Object.defineProperty(self, 'NanopediaDiagnoseData', {
  configurable: true,
  set(data) {
    const fp = Object.assign({}, data.fingerprints[0], {
      id: 'stuck', indicates: 'supporting', pattern: '(a+)+$', program: '(a+)+$'});
    data.fingerprints.push(fp);
    Object.defineProperty(self, 'NanopediaDiagnoseData', {value: data, writable: true});
  },
});
"""


def test_a_stuck_fingerprint_is_left_out_of_its_run_only(site, matcher, watched_page) -> None:
    """The page stops a worker stuck in one pattern and reads the log again without it; the
    next run has every fingerprint again (the restart's smaller worker is not kept for it), so
    it meets the same stuck pattern and restarts once more."""
    page = watched_page.page
    page.add_init_script(STUCK)
    page = open_page(watched_page, site)
    text = f"{'a' * 40}b\n{ERROR}\n"
    for _ in range(2):
        watched_page.paste("#log-text", text)
        page.click("#run")
        assert shown(page) == expected(matcher, [("pasted log", text.encode())])
        status = page.locator("#status")
        assert status.get_attribute("data-restarts") == "1"
        assert "1 fingerprint(s) left out as too slow" in page.locator("#status-text").inner_text()
    watched_page.assert_clean()


@pytest.mark.parametrize("kind", ["zip", "single-file"])
def test_bundles_carry_the_page(kind: str, request, matcher, watched_page) -> None:
    """The zip (unpacked) and the single-file bundle, both from file://, give the CLI's answer."""
    log = LOGS / "fsdp-mp-torchrun.log"
    if kind == "zip":
        url = (request.getfixturevalue("repo_zip") / "diagnose.html").as_uri()
    else:
        url = request.getfixturevalue("repo_single").as_uri() + "#/diagnose.html"
    page = watched_page.page
    page.goto(url)
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    page.set_input_files("#log-files", str(log))
    assert shown(page) == expected(matcher, [(log.name, log.read_bytes())])
    # The verdict and the timeline are drawn there too (the scripts and styles came along).
    assert page.text_content("#verdict-cause") and page.text_content("#verdict-fix")
    assert (
        page.locator("#timeline-chart svg .tl-lane").count()
        == page.locator("#timeline-text li").count()
        > 0
    )
    assert page.locator(".tl-lane .tl-failure").evaluate(
        "e => getComputedStyle(e).fill"
    ) != page.locator(".tl-band >> nth=0").evaluate("e => getComputedStyle(e).fill")
    page.click("#matches > li >> nth=0 >> a.match-title")
    page.wait_for_selector("h1:has-text('FSDP mixed precision')")
    watched_page.assert_clean()


@pytest.mark.parametrize(
    "codec, packed",
    [("utf-16", False), ("utf-16", True), ("utf-16-be", False), ("utf-16-le", True)],
)
def test_a_utf16_log_gives_the_answer_of_its_utf8_original(
    site, matcher, logs, watched_page, codec: str, packed: bool
) -> None:
    """Review case D06 in the browser: PowerShell's `>` saves a log as UTF-16 (with a byte order
    mark; `utf-16` writes one, `-be` and `-le` none), plain or gzipped. Read as bytes, it matched
    nothing."""
    original = LOGS / "real" / "cuda-device-side-assert--1.log"
    text = original.read_text(encoding="utf-8").encode(codec)
    name = f"{codec}-{original.name}" + (".gz" if packed else "")
    log = logs / name
    log.write_bytes(gzip.compress(text) if packed else text)
    page = open_page(watched_page, site)
    page.set_input_files("#log-files", str(log))
    got = shown(page)
    assert got == expected(matcher, [(name, original.read_bytes())])
    assert got["matches"][0]["id"] == "cuda-device-side-assert"
    watched_page.assert_clean()


def test_a_log_larger_than_the_time_budget_stops_at_it_and_says_how_far_it_read(
    site, logs, watched_page
) -> None:
    """Review case D09 in the browser: an input that does not end within the budget (here 4 GiB
    of a sparse file) stops at the budget, saying how much it read and what to do; the page
    never waits for its watchdog."""
    huge = logs / "huge.log"
    with huge.open("wb") as out:
        out.write(f"step 1 loss 2.0\n{ERROR}\n".encode())
        out.truncate(4 << 30)
    page = open_page(watched_page, site)
    page.fill("#budget", "2")
    started = time.monotonic()
    page.set_input_files("#log-files", str(huge))
    page.wait_for_selector("#status[data-state=error]", state="attached", timeout=60_000)
    assert time.monotonic() - started < 2 + 8  # the budget, and the last buffer, not the watchdog
    message = page.text_content("#status-text") or ""
    assert message.startswith("diagnosis stopped after ") and "its time budget" in message
    assert re.search(r"while reading huge\.log \([0-9.]+ MB of its text read\)", message), message
    assert message.endswith("Raise the time budget to read the whole log.")
    assert page.locator("#results").is_hidden() and page.locator("#run").is_enabled()
    watched_page.assert_clean()


def test_a_pipe_chosen_as_a_log_never_holds_the_page(site, logs, watched_page) -> None:
    """A named pipe (a `tail -f` written into one) is a stream that may never end: the browser
    reads it as it was when chosen, empty, and the page says it read nothing."""
    pipe = logs / "live.fifo"
    os.mkfifo(pipe)
    page = open_page(watched_page, site)
    page.set_input_files("#log-files", str(pipe))
    got = shown(page)
    assert got["matches"] == [] and page.locator("#status").get_attribute("data-bytes") == "0"
    assert (page.text_content("#status-text") or "").startswith("Read 1 log(s), 0 lines, 0.00 MB")
    watched_page.assert_clean()


def test_a_log_that_changes_while_it_is_read_is_diagnosed_as_far_as_it_was_read(
    site, matcher, logs, watched_page
) -> None:
    """A log still being written: Chromium refuses every read of a file changed since it was
    chosen, and the page once failed with a permission message, the lines it had read lost. Now
    they are diagnosed, and the page says the rest was not read."""
    failure = (LOGS / "fsdp-mp-torchrun.log").read_bytes()
    live = logs / "live.log"
    with live.open("wb") as out:
        out.write(failure)
        out.truncate(1 << 30)  # sparse: more buffers than are read before the change below
    page = open_page(watched_page, site)
    page.set_input_files("#log-files", str(live))
    while not page.evaluate("Number(document.getElementById('progress').value) > 0"):
        page.wait_for_timeout(5)
    now = live.stat()
    os.utime(live, ns=(now.st_atime_ns, now.st_mtime_ns + 5_000_000_000))  # "written to"
    got = shown(page)
    lines = failure.count(b"\n")
    assert got == expected(matcher, [(live.name, failure)])
    message = page.text_content("#status-text") or ""
    assert message.endswith(
        f"live.log changed while it was read (a log still being written?): only its first "
        f"{lines} lines were diagnosed."
    )
    watched_page.assert_clean()
