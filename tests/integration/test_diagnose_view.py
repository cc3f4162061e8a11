"""What the diagnosis page shows beyond the evidence lists, in a real Chromium from file://.

The verdict (likely cause, first fix, what the confidence means) and the per-rank timeline of a
multi-rank incident, checked against `nanopedia diagnose --format json` on the same files, in light
and dark mode; a fingerprint that is slow in the browser's regex engine, named while the others
still report; pastes and drops too large for the text box, read as files.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.diagnosis import contract, rank, report, scan
from nanopedia.model import Entry

LOGS = ROOT / "tests" / "logs"
ERROR = "[rank3]: RuntimeError: expected scalar type BFloat16 but found Float"
#: Rank 1 fails first (03:20), rank 0 later (03:25), rank 2 only times out after them (collateral),
#: rank 3 prints nothing the encyclopedia knows (silent).
RANK2 = (
    "2024-11-21 03:13:03,003 INFO rank 2 starting\n"
    "[rank2]:[E1121 03:30:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=26214400, "
    "NumelOut=104857600, Timeout(ms)=600000) ran for 600083 milliseconds before timing out.\n"
)
RANK3 = (
    "2024-11-21 03:13:03,004 INFO rank 3 starting\n2024-11-21 03:14:00,000 INFO step 1 loss 2.0\n"
)
#: Lanes in drawing order: rank, silent, classes of the lane's first point.
LANES = """() => Array.from(document.querySelectorAll('#timeline-chart .tl-lane')).map(g => ({
  rank: g.dataset.rank, silent: g.dataset.silent === 'true',
  first: (g.querySelector('.tl-first') || {getAttribute: () => null}).getAttribute('class'),
  where: (g.querySelector('.tl-first') || {dataset: {}}).dataset.where || null}))"""
#: Computed colours of the timeline, to check contrast in light and dark mode.
COLOURS = """() => {
  const css = (sel, prop) => getComputedStyle(document.querySelector(sel))[prop];
  return {page: css('body', 'backgroundColor'), band: css('.tl-band', 'fill'),
          label: css('.tl-label', 'fill'), note: css('.tl-note', 'fill'),
          point: css('.tl-lane .tl-point:not(.tl-collateral)', 'fill'),
          failure: css('.tl-lane .tl-failure', 'fill'), tick: css('.tl-tick-label', 'fill')};
}"""


@pytest.fixture(scope="module")
def site(repo_site: Path) -> Path:
    return repo_site


@pytest.fixture(scope="module")
def entries() -> dict[str, Entry]:
    return {e.id: e for e in gathered_entries()[0].entries}


@pytest.fixture(scope="module")
def matcher(entries: dict[str, Entry]) -> scan.Matcher:
    return scan.Matcher(entries.values())


def open_page(watch: Any, site: Path) -> Any:
    page = watch.page
    page.goto((site / "diagnose.html").as_uri())
    page.wait_for_selector("#status[data-state=idle]", state="attached")
    return page


def finished(page: Any, timeout: float = 30_000) -> None:
    """Waits for the run started last; fails with the page's message unless it is done."""
    run = page.locator("#status").get_attribute("data-run")
    page.wait_for_selector(
        f"#status[data-run='{run}']:is([data-state=done], [data-state=error])",
        state="attached",
        timeout=timeout,
    )
    assert page.locator("#status").get_attribute("data-state") == "done", page.text_content(
        "#status-text"
    )


def answer(page: Any) -> list[tuple[str, float, list[tuple[str, int]]]]:
    """Entries shown, with score and evidence (file, line)."""
    return [
        (m["id"], m["score"], [tuple(e) for e in m["evidence"]])
        for m in page.evaluate(
            """() => Array.from(document.querySelectorAll('#matches > li')).map(li => ({
          id: li.dataset.id,
          score: Number(li.querySelector('.match-score').textContent.replace('score ', '')),
          evidence: Array.from(li.querySelectorAll('.evidence-line')).map(e => [
            e.dataset.file, Number(e.dataset.line)])}))"""
        )
    ]


def cli_answer(matcher: scan.Matcher, name: str, data: bytes) -> list[Any]:
    result = rank.diagnose([scan.scan(io.BytesIO(data), name, matcher)])
    return [(c.id, c.score, [(e.file, e.line) for e in c.evidence]) for c in result.matches]


def luminance(rgb: str) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (float(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_rows_carry_the_answers_the_report_gives(entries) -> None:
    """The browser's data gives each fingerprint the answer `report.answer` gives for the cause
    it points to (None when it points to none), and the answer of the entry's first cause."""
    for entry in entries.values():
        causes = {rc.id: rc for rc in entry.root_causes}
        first = report.answer(entry.root_causes[0], entry)._asdict()
        for fp, row in zip(entry.fingerprints, contract.fingerprint_rows(entry), strict=True):
            want = report.answer(causes[fp.cause], entry)._asdict() if fp.cause else None
            assert (row["answer"], row["first"]) == (want, first)
            assert row["first"]["action"] == entry.root_causes[0].action


def test_verdict_and_rank_timeline_follow_the_cli(site, tmp_path, cli, watched_page) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("rank0.log", "rank1.log"):
        shutil.copy(LOGS / "first-failure-ts" / name, logs / name)
    (logs / "rank2.log").write_text(RANK2)
    (logs / "rank3.log").write_text(RANK3)
    files = sorted(logs.iterdir())
    run = cli("diagnose", "--entries", str(ROOT / "entries"), "--format", "json", *map(str, files))
    assert run.code == 0, run.err
    want = json.loads(run.out)
    best = want["matches"][0]
    assert (want["initiating_rank"], want["silent_ranks"]) == (1, [3])

    page = open_page(watched_page, site)
    page.set_input_files("#log-files", [str(p) for p in files])
    finished(page)

    assert page.get_attribute("#verdict", "data-id") == best["id"]
    assert page.text_content("#verdict-confidence") == best["confidence"] == "certain"
    assert page.text_content("#verdict-cause") == best["cause"].replace("`", "")
    assert page.text_content("#verdict-fix") == best["fix"].replace("`", "")
    assert (
        page.text_content("#verdict-action")
        == f"{best['action']} (failure domain: {best['domain']})"
    )
    help_text = page.text_content("#confidence-help") or ""
    assert f"score, {best['score']:g}," in help_text
    assert all(word in help_text for word in ("Possible would mean", "collateral", "decisive 10"))

    lanes = page.evaluate(LANES)
    first = want["initiating"]
    assert lanes[0] == {
        "rank": str(want["initiating_rank"]),
        "silent": False,
        "first": "tl-point tl-first tl-failure",
        "where": f"{Path(first['file']).name}:{first['line']}",
    }
    assert [lane["rank"] for lane in lanes] == ["1", "0", "2", "3"]
    assert "tl-collateral" in lanes[2]["first"]
    assert lanes[3] == {"rank": "3", "silent": True, "first": None, "where": None}
    assert page.locator("#timeline-chart svg").get_attribute("role") == "img"
    assert "Rank 1 failed first" in page.text_content("#timeline-caption")

    spoken = page.locator("#timeline-text li").all_text_contents()
    assert len(spoken) == len(lanes)
    assert (
        spoken[0].startswith("rank 1: first matched line at 03:20:00")
        and "the first failure" in spoken[0]
    )
    assert "collateral" in spoken[2] and spoken[3].startswith("rank 3: silent")
    hidden = page.locator("#timeline-text")
    assert (
        hidden.bounding_box()["width"] <= 1
        and hidden.evaluate("e => getComputedStyle(e).display") != "none"
    )

    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        c = page.evaluate(COLOURS)
        dark = luminance(c["page"]) < 0.05
        assert dark == (scheme == "dark"), (scheme, c)
        assert contrast(c["label"], c["band"]) >= 4.5, (scheme, c)
        assert contrast(c["note"], c["band"]) >= 4.5, (scheme, c)
        assert contrast(c["tick"], c["page"]) >= 4.5, (scheme, c)
        assert contrast(c["point"], c["band"]) >= 3, (scheme, c)
        assert contrast(c["failure"], c["page"]) >= 3, (scheme, c)
    watched_page.assert_clean()


def test_the_page_names_the_rank_the_evidence_shows_not_torchruns_root_cause(
    site, cli, watched_page
) -> None:
    """Rank 3 hit a CUDA OOM first; ranks 0-2 timed out later; torchrun's Root Cause block names
    rank 0. The page's first failure, its timeline and the CLI's JSON all name rank 3."""
    log = LOGS / "first-failure-oom" / "torchrun-4rank.log"
    want = json.loads(
        cli("diagnose", "--entries", str(ROOT / "entries"), "--format", "json", str(log)).out
    )
    assert (want["initiating_rank"], want["root_cause_rank"]) == (3, 0)

    page = open_page(watched_page, site)
    page.set_input_files("#log-files", [str(log)])
    finished(page)

    assert page.get_attribute("#verdict", "data-id") == want["matches"][0]["id"]
    first = page.locator("#first-failure")
    assert first.get_attribute("data-rank") == "3"
    words = first.text_content() or ""
    assert words.startswith(f"First failure: rank 3 at {log.name}:13 ") or words.startswith(
        "First failure: rank 3 at "
    )
    assert want["initiating_reason"] in words and "names rank 0" in words
    lanes = page.evaluate(LANES)
    assert lanes[0]["rank"] == "3" and "tl-failure" in lanes[0]["first"]
    assert "Rank 3 failed first" in page.text_content("#timeline-caption")
    watched_page.assert_clean()


def slow_site(site: Path, out: Path) -> Path:
    """A copy of `site` whose diagnosis data has two fingerprints that are slow in JavaScript's
    backtracking engine, written straight into the data the worker reads (`check` may refuse
    them, a hand-made site need not): one never returns on a long run of `x`, one takes a long
    time on every line it matches."""
    shutil.copytree(site, out)
    path = out / "static" / "diagnose-data.js"
    head, _, body = path.read_text().partition("self.NanopediaDiagnoseData=")
    data = json.loads(body.rstrip().removesuffix(";"))
    template = data["fingerprints"][0]
    for n, (id_, pattern) in enumerate((("stuck", "(?:x|x)*y"), ("crawl", "(?:q|q)*z"))):
        row = dict(
            template,
            entry="zz-slow",
            title="Slow patterns",
            id=id_,
            pattern=pattern,
            cause=None,
            indicates="decisive",
            collateral=False,
        )
        if "program" in row:
            row["program"] = pattern
        data["fingerprints"].insert(n, row)
    path.write_text(f"{head}self.NanopediaDiagnoseData={json.dumps(data)};\n")
    return out


def test_slow_fingerprints_are_named_and_the_rest_still_reports(
    site, matcher, tmp_path, watched_page
) -> None:
    """`stuck` never returns: the page stops the worker and reads the log again without it;
    `crawl` returns on each line but past its time: the worker drops it. Both are named, and the
    answer is the CLI's from every other fingerprint."""
    log = tmp_path / "slow.log"
    log.write_text("x" * 100 + "\n" + ("q" * 22 + " z\n") * 2000 + ERROR + "\n")
    page = open_page(watched_page, slow_site(site, tmp_path / "slow"))
    page.set_input_files("#log-files", str(log))
    finished(page, timeout=40_000)
    slow = page.evaluate("""() => Array.from(document.querySelectorAll('#slow li'))
      .map(li => [li.dataset.entry, li.dataset.fingerprint, li.textContent])""")
    assert [s[:2] for s in slow] == [["zz-slow", "stuck"], ["zz-slow", "crawl"]]
    assert all("was left out" in s[2] and "slow.log" in s[2] for s in slow)
    assert page.get_attribute("#status", "data-restarts") == "1"
    assert answer(page) == cli_answer(matcher, "slow.log", log.read_bytes())
    assert answer(page)[0][0] == page.get_attribute("#verdict", "data-id")
    watched_page.assert_clean()


def test_large_paste_is_read_as_a_file(site, matcher, watched_page) -> None:
    """A paste of over a million characters never enters the text box (50 MB there froze the
    page for minutes); a small one still does."""
    page = open_page(watched_page, site)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    filler = "step 1 loss 2.0 lr 3e-4 tokens/s 120000 all fine here, nothing to see\n" * 16_000
    text = filler + ERROR + "\n"
    page.evaluate("t => navigator.clipboard.writeText(t)", text)
    page.focus("#log-text")
    page.keyboard.press("Control+V")
    finished(page)
    assert page.input_value("#log-text") == ""
    note = page.text_content("#pasted-text") or ""
    assert note.startswith(f"pasted text, {len(text) / 1e6:.2f} MB") and page.is_visible("#pasted")
    assert answer(page) == cli_answer(matcher, "pasted text", text.encode())
    assert answer(page)[0][2][0] == ("pasted text", 16_001)

    page.click("#pasted-clear")
    page.evaluate("t => navigator.clipboard.writeText(t)", ERROR + "\n")
    page.keyboard.press("Control+V")
    assert page.input_value("#log-text") == ERROR + "\n" and page.is_hidden("#pasted")
    watched_page.assert_clean()


def test_drops_of_files_and_large_text_go_to_the_worker(site, matcher, watched_page) -> None:
    page = open_page(watched_page, site)
    transfer = page.evaluate_handle(
        """t => { const d = new DataTransfer();
      d.items.add(new File([t], 'dropped.log')); return d; }""",
        f"step 1\n{ERROR}\n",
    )
    page.dispatch_event("#log-text", "drop", {"dataTransfer": transfer})
    finished(page)
    assert answer(page) == cli_answer(matcher, "dropped.log", f"step 1\n{ERROR}\n".encode())
    big = "all fine\n" * 120_000 + ERROR + "\n"
    transfer = page.evaluate_handle(
        """t => { const d = new DataTransfer();
      d.setData('text/plain', t); return d; }""",
        big,
    )
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    finished(page)
    assert page.input_value("#log-text") == "" and page.is_visible("#pasted")
    assert answer(page) == cli_answer(matcher, "pasted text", big.encode())
    watched_page.assert_clean()


def test_cause_and_fix_match_the_cli_on_the_corpus_logs(
    site, entries, matcher, watched_page
) -> None:
    """Cause, fix and confidence of the top candidate come out of the worker as `with_answers`
    gives them, on logs whose top entries point causes in different ways."""
    page = open_page(watched_page, site)
    names = [
        "fsdp-mp-torchrun.log",
        "nccl-desync.log",
        "bf16-deepspeed.log",
        "fp16-skips-benign.log",
    ]
    for name in names:
        data = (LOGS / name).read_bytes()
        result = rank.diagnose([scan.scan(io.BytesIO(data), name, matcher)])
        want = report.with_answers(result, entries, None, None)["matches"]
        page.set_input_files("#log-files", str(LOGS / name))
        finished(page)
        got = page.evaluate("""() => [document.querySelector('#verdict').dataset.id,
          document.querySelector('#verdict-cause').textContent,
          document.querySelector('#verdict-fix').textContent,
          document.querySelector('#verdict-confidence').textContent]""")
        top = want[0]
        assert got == [
            top["id"],
            top["cause"].replace("`", ""),
            top["fix"].replace("`", ""),
            top["confidence"],
        ], name
    watched_page.assert_clean()
