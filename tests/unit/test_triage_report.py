"""What `nanopedia triage` prints (`diagnosis/triage_report.py`) in every format, from job records
built by hand: the numbers, the order, the bounds, and the escaping of text that came from logs."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from conftest import FIXTURES

from nanopedia.content.corpus import gather
from nanopedia.diagnosis import triage as triage_module
from nanopedia.diagnosis import triage_report as tr
from nanopedia.diagnosis.jobs import Skip
from nanopedia.diagnosis.triage import Summary, TriageResult
from unit.test_triage import ALPHA_LINE, gap, record, skip, summary

CELLS = [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("+1", "'+1"),
    ("-2", "'-2"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"),
    ("\rx", "'\rx"),
    ("job-1", "job-1"),
    ("a=b", "a=b"),
    ("", ""),
    (7, 7),
    (None, None),
]


@pytest.mark.parametrize("value, shown", CELLS, ids=[f"cell {i}" for i in range(len(CELLS))])
def test_a_cell_that_starts_like_a_formula_is_text(value: Any, shown: Any) -> None:
    assert tr.cell(value) == shown


MARKDOWN = [
    ("a|b", "a\\|b"),
    ("*x* _y_", "\\*x\\* \\_y\\_"),
    ("[l](u)", "\\[l\\](u)"),
    ("<img>", "\\<img\\>"),
    ("`c` # h ~s~", "\\`c\\` \\# h \\~s\\~"),
    ("back\\slash", "back\\\\slash"),
    ("@team", "@\u2060team"),
    ("https://x", "https\u2060://x"),
    ("\x1b[2J", "\\\\x1b\\[2J"),
]


@pytest.mark.parametrize(
    "text, shown", MARKDOWN, ids=[f"markdown {i}" for i in range(len(MARKDOWN))]
)
def test_log_text_is_inert_in_markdown(text: str, shown: str) -> None:
    assert tr._md(text) == shown


SIZES = [
    (0, "0 B"),
    (999, "999 B"),
    (1000, "1.0 kB"),
    (1_750, "1.8 kB"),
    (999_999, "1000.0 kB"),
    (10**6, "1.0 MB"),
    (412_300_000, "412.3 MB"),
    (10**9, "1.0 GB"),
]


@pytest.mark.parametrize("n, shown", SIZES, ids=[s for _, s in SIZES])
def test_sizes_are_in_decimal_units(n: int, shown: str) -> None:
    assert tr.size(n) == shown


def test_the_progress_line_gives_rates() -> None:
    assert tr.progress_line(1200, 3000, 2_000_000, 2.0) == (
        "triage: 1,200 jobs, 3,000 files, 2.0 MB (600 jobs/s, 1.0 MB/s)"
    )
    assert "jobs/s" in tr.progress_line(0, 0, 0, 0.0)  # no division by zero at the start


def test_the_headline_counts_jobs_and_files_in_the_singular_and_plural() -> None:
    one = summary(record("a"))
    assert tr.headline(one) == ("1 job: 1 matched, 0 unmatched, 0 clean, 0 skipped; 1 file, 100 B")
    many = summary(record("a", files=["x", "y"]), record("b", verdict=None), skip("c.bin"))
    assert tr.headline(many) == (
        "2 jobs: 1 matched, 1 unmatched, 0 clean, 0 skipped; 3 files, 200 B"
    )


def fleet() -> list[dict[str, Any] | Skip]:
    """Four jobs on hosts whose names and error lines carry Markdown and terminal controls."""
    host = "gpu|07\x1b]0;x"
    return [
        record("j1", initiating_host=host, initiating_rank=0, hosts=[host]),
        record("j2", initiating_host=host, initiating_rank=0, verdict="ecc", hosts=[host]),
        record("j3", verdict=None, error_lines=[gap("*boom* @oncall", "j3") | {"count": 2}]),
        skip("core.bin"),
    ]


def test_text_lists_entries_actions_hosts_ranks_and_unknown_lines() -> None:
    text = tr.as_text(summary(*fleet()))
    assert text.split("\n") == [
        "nanopedia triage: 3 jobs: 2 matched, 1 unmatched, 0 clean, 0 skipped; 3 files, 300 B",
        "",
        "entries by jobs (the verdict of each matched job):",
        "   jobs   share  possible  entry",
        "      1   50.0%        0%  ecc: Title of ecc",
        "      1   50.0%        0%  nccl-timeout: Title of nccl-timeout",
        "",
        "what to do, by failure domain and action (of each matched job's verdict):",
        "  infrastructure, drain-node: 2 jobs on 1 host (ecc 1, nccl-timeout 1)",
        "",
        "infrastructure failures by host (check or drain the hosts that repeat):",
        "  gpu|07\\x1b]0;x: 2 jobs (repeated): ecc 1, nccl-timeout 1",
        "",
        "first failure on the same host in several jobs:",
        "  gpu|07\\x1b]0;x: 2 jobs (its name is in 2): ecc 1, nccl-timeout 1",
        "",
        "first failing rank in several jobs:",
        "  rank 0: 2 jobs: ecc 1, nccl-timeout 1",
        "",
        "jobs no entry matched: 1; their error lines, by jobs (numbers, hex, paths collapsed):",
        "      1 job  *boom* @oncall",
        "             e.g. j3.log:3: *boom* @oncall (j3)",
        "  per job:",
        "    j3: *boom* @oncall (2x)",
        "",
        "skipped: 1 (binary 1):",
        "  core.bin: binary: not text",
    ]


def test_text_says_how_many_rows_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "HOSTS_SHOWN", 1)
    monkeypatch.setattr(tr, "RANKS_SHOWN", 1)
    monkeypatch.setattr(tr, "UNMATCHED_SHOWN", 1)
    monkeypatch.setattr(tr, "SKIPS_SHOWN", 1)
    items: list[dict[str, Any] | Skip] = []
    for host, rank in (("h1", 1), ("h2", 2)):
        items += [
            record(f"{host}-{i}", initiating_host=host, initiating_rank=rank) for i in range(2)
        ]
    items += [
        record(f"u{i}", verdict=None, error_lines=[gap("x", f"u{i}") | {"count": 1}])
        for i in range(2)
    ]
    items += [skip("a"), skip("b")]
    text = tr.as_text(summary(*items))
    assert text.count("  … 1 host more (--format json lists all)") == 2
    assert "  … 1 rank more (--format json lists all)" in text
    assert "    … 1 more (--format json lists all)" in text
    assert "  … 1 more (--format json names up to 2, each job's record its own)" in text


def test_text_shortens_an_action_to_three_entries() -> None:
    items = [record(str(i), verdict=v) for i, v in enumerate("abcd")]
    text = tr.as_text(summary(*items))
    assert "  infrastructure, drain-node: 4 jobs (a 1, b 1, c 1, …)" in text


def test_markdown_tables_escape_hosts_and_log_lines_and_link_entries() -> None:
    md = tr.as_markdown(summary(*fleet()), "https://nanopedia.example/")
    site = "https://nanopedia.example/entries"
    assert md.split("\n") == [
        "## Fleet triage: 3 jobs: 2 matched, 1 unmatched, 0 clean, 0 skipped; 3 files, 300 B",
        "",
        "### Entries by jobs",
        "",
        "| jobs | share | possible only | entry |",
        "|---:|---:|---:|---|",
        f"| 1 | 50.0% | 0% | [ecc]({site}/ecc.html): Title of ecc |",
        f"| 1 | 50.0% | 0% | [nccl-timeout]({site}/nccl-timeout.html): Title of nccl-timeout |",
        "",
        "### What to do",
        "",
        "| domain | action | jobs | hosts | entries |",
        "|---|---|---:|---:|---|",
        "| infrastructure | drain-node | 2 | 1 | ecc 1, nccl-timeout 1 |",
        "",
        "### Infrastructure failures by host",
        "",
        "| host | jobs | entries |",
        "|---|---:|---|",
        "| gpu\\|07\\\\x1b\\]0;x | 2 | ecc 1, nccl-timeout 1 |",
        "",
        "### First failure on the same host in several jobs",
        "",
        "| host | first failures | jobs naming it | entries |",
        "|---|---:|---:|---|",
        "| gpu\\|07\\\\x1b\\]0;x | 2 | 2 | ecc 1, nccl-timeout 1 |",
        "",
        "### First failing rank in several jobs",
        "",
        "| rank | jobs | entries |",
        "|---:|---:|---|",
        "| 0 | 2 | ecc 1, nccl-timeout 1 |",
        "",
        "### Failures the encyclopedia does not know yet",
        "",
        "| jobs | error line (normalised) | example |",
        "|---:|---|---|",
        "| 1 | \\*boom\\* @\u2060oncall | j3.log:3 |",
        "",
        "### Skipped: 1 files or folders",
        "",
        "- core.bin: binary (not text)",
    ]


def test_markdown_shows_at_most_so_many_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "HOSTS_SHOWN", 1)
    monkeypatch.setattr(tr, "RANKS_SHOWN", 1)
    monkeypatch.setattr(tr, "GAPS_SHOWN", 1)
    items: list[dict[str, Any] | Skip] = []
    for host, rank in (("h1", 1), ("h2", 2)):
        items += [
            record(f"{host}-{i}", initiating_host=host, initiating_rank=rank) for i in range(2)
        ]
    items += [record("u1", verdict=None, error_lines=[gap("x", "u1"), gap("y", "u1")])]
    md = tr.as_markdown(summary(*items), None)
    assert "| h2 |" not in md and "| 2 | 2 |" not in md and "| y |" not in md
    assert "| h1 | 2 |" in md and "| 1 | 2 |" in md and "| 1 | x |" in md


def test_markdown_says_how_many_skips_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "SKIPS_SHOWN", 1)
    md = tr.as_markdown(summary(skip("a"), skip("b"), skip("c")), None)
    assert md.endswith("- a: binary (not text)\n- … 2 more")


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_csv_has_a_row_per_job_and_an_end_row() -> None:
    items = fleet()
    items[0]["matches"] = [{"id": "nccl-timeout", "title": "T", "score": 12.5}]  # type: ignore[index]
    out = "".join(tr.render("csv", items, Summary(), {}, None))
    got = rows(out)
    assert got[0] == list(tr.CSV_COLUMNS)
    assert len(got) == 5 and got[-1] == [tr.CSV_END, "3 jobs", "complete"]
    first = dict(zip(tr.CSV_COLUMNS, got[1], strict=True))
    assert first["score"] == "12.5" and first["initiating_rank"] == "0"
    unmatched = dict(zip(tr.CSV_COLUMNS, got[3], strict=True))
    assert (unmatched["verdict"], unmatched["initiating_rank"], unmatched["score"]) == ("", "", "")
    assert unmatched["top_error_line"] == "*boom* @oncall"


def test_csv_rows_hold_every_column_of_a_job() -> None:
    matched = record(
        "j1",
        initiating_host="gpu-7",
        initiating_rank=3,
        host_rule="line",
        confidence="possible",
        files=["a", "b"],
        skipped=[{"path": "x", "reason": "binary", "detail": "d"}],
    )
    unmatched = record("j2", verdict=None, confidence=None, domain=None, action=None)
    unmatched["error_lines"] = [{"text": "boom", "example": "", "file": "f", "line": 1}]
    assert tr.csv_row(matched) == [
        "j1", "rank-files", "matched", "nccl-timeout", "possible", 10.0, 3, "gpu-7", "line",
        2, 100, 10, 1, "", "infrastructure", "drain-node", "", "", "", "", "",
    ]  # fmt: skip
    assert tr.csv_row(unmatched) == [
        "j2", "rank-files", "unmatched", "", "", "", "", "", "", 1, 100, 10, 0, "boom", "", "",
        "", "", "", "", "",
    ]  # fmt: skip


def test_a_csv_cut_short_has_no_end_row() -> None:
    chunks = tr.render("csv", [record("a"), record("b")], Summary(), {}, None)
    cut = rows(next(chunks) + next(chunks))
    assert [row[0] for row in cut] == ["job", "a", "b"]


def test_csv_cells_from_logs_cannot_become_formulas() -> None:
    job = record("=HYPERLINK(x)", initiating_host="@evil", verdict=None, status="unmatched")
    job["error_lines"] = [{"text": "-1+1", "example": "", "file": "f", "line": 1}]
    row = tr.csv_row(job)
    assert row[0] == "'=HYPERLINK(x)" and row[7] == "'@evil" and row[13] == "'-1+1"


def test_json_is_the_result_as_json_byte_for_byte() -> None:
    items = fleet()
    entries = {"used": 3, "skipped": []}
    streamed = "".join(tr.render("json", items, Summary(), entries, None))
    whole = Summary()
    for item in items:
        whole.add(item)
    jobs = tuple(i for i in items if not isinstance(i, Skip))
    result = TriageResult(jobs, whole.as_json(), entries)  # type: ignore[arg-type]
    assert streamed == json.dumps(result.as_json(), indent=2, sort_keys=True) + "\n"


def test_json_of_no_jobs_is_the_result_as_json_too() -> None:
    entries = {"used": 0, "skipped": []}
    out = "".join(tr.render("json", [skip("a")], Summary(), entries, None))
    summary_of_skip = Summary()
    summary_of_skip.add(skip("a"))
    result = TriageResult((), summary_of_skip.as_json(), entries)
    assert out == json.dumps(result.as_json(), indent=2, sort_keys=True) + "\n"


def test_json_keeps_every_job_after_a_skip_and_text_as_it_is() -> None:
    items: list[dict[str, Any] | Skip] = [skip("x"), record("gpu-é"), record("b")]
    out = "".join(tr.render("json", items, Summary(), {"used": 1, "skipped": []}, None))
    assert [job["job"] for job in json.loads(out)["jobs"]] == ["gpu-é", "b"]
    assert '"job": "gpu-é"' in out


def test_text_and_markdown_print_the_summary_once_every_job_is_in() -> None:
    s = Summary()
    (text,) = list(tr.render("text", fleet(), s, {}, None))
    assert text == tr.as_text(s.as_json()) + "\n"
    (md,) = list(tr.render("markdown", fleet(), Summary(), {}, None))
    assert md.startswith("## Fleet triage: 3 jobs")


def test_github_warns_on_an_unmatched_jobs_line_and_ends_with_the_headline() -> None:
    job = record("a", verdict=None, error_lines=[gap("boom", "a") | {"count": 3}])
    out = list(tr.render("github", [job, skip("b")], Summary(), {}, None))
    assert out[0] == (
        "::warning file=a.log,line=3,title=nanopedia%3A no entry matched (a)::boom (a)%0A"
        "(3 lines like it; no entry matched: an entry to write?)\n"
    )
    assert out[-1].startswith("::notice title=nanopedia triage::1 job: 0 matched, 1 unmatched")
    assert len(out) == 2


def test_text_cuts_long_names_and_lines_at_their_own_widths() -> None:
    host, title, path = "h" * 70 + "1", "T" * 100, "p" * 210
    long_line = "x" * 130
    items: list[dict[str, Any] | Skip] = [
        record("1", initiating_host=host, hosts=[host], verdict="e"),
        record("2", initiating_host=host, hosts=[host], verdict="e"),
        record("j" * 130, verdict=None, error_lines=[gap(long_line, "u") | {"file": "f" * 130}]),
        Skip(path, "binary", "not text"),
    ]
    items[0]["matches"] = [{"id": "e", "title": title, "score": 1.0}]
    text = tr.as_text(summary(*items))
    assert f"  e: {'T' * 89}…\n" in text
    assert f"  {'h' * 59}…: 2 jobs (repeated): e 2" in text.split("\n")
    assert f"  {'h' * 59}…: 2 jobs (its name is in 2): e 2" in text.split("\n")
    assert f"             e.g. {'f' * 119}…:3: {'x' * 119}…" in text.split("\n")
    assert f"    {'j' * 119}…: {'x' * 99}… (1x)" in text.split("\n")
    assert f"  {'p' * 199}…: binary: not text" in text.split("\n")
    md = tr.as_markdown(summary(*items), None)
    assert f": {'T' * 89}… |" in md


def test_text_marks_only_hosts_that_repeat_and_joins_a_jobs_lines() -> None:
    job = record("u", verdict=None)
    job["error_lines"] = [gap(t, "u") | {"count": n} for t, n in (("a", 3), ("b", 2), ("c", 1))]
    text = tr.as_text(summary(record("1", initiating_host="once"), job))
    assert "  once: 1 job: nccl-timeout 1" in text.split("\n")
    assert "    u: a (3x); b (2x)" in text.split("\n")


def test_text_and_markdown_say_more_only_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tr, "HOSTS_SHOWN", 2)
    monkeypatch.setattr(tr, "GAPS_SHOWN", 1)
    monkeypatch.setattr(tr, "UNMATCHED_SHOWN", 2)
    monkeypatch.setattr(tr, "SKIPS_SHOWN", 2)
    items: list[dict[str, Any] | Skip] = [
        record(f"{h}{i}", initiating_host=h) for h in ("h1", "h2") for i in range(2)
    ]
    items += [record(f"u{i}", verdict=None, error_lines=[gap(f"g{i}", "u")]) for i in range(2)]
    items += [skip("a"), Skip("b", "too-large", "big")]
    text = tr.as_text(summary(*items))
    assert "hosts more" not in text and "host more" not in text
    assert "… 1 line more (--format json lists all)" in text
    assert "    … " not in text  # two unmatched jobs, two shown
    assert "skipped: 2 (binary 1, too-large 1):" in text and "more (--format json names" not in text
    assert "- … " not in tr.as_markdown(summary(*items), None)


def test_text_counts_unmatched_jobs_past_the_summarys_own_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(triage_module, "UNMATCHED_KEPT", 1)
    items = [record(f"u{i}", verdict=None, error_lines=[gap("g", "u")]) for i in range(3)]
    assert "jobs no entry matched: 3;" in tr.as_text(summary(*items))


def test_an_action_of_exactly_three_entries_lists_them_all() -> None:
    text = tr.as_text(summary(*[record(str(i), verdict=v) for i, v in enumerate("abc")]))
    assert "  infrastructure, drain-node: 3 jobs (a 1, b 1, c 1)" in text


def test_possible_shares_are_printed_as_percentages() -> None:
    s = summary(record("1", confidence="possible"), record("2", confidence="possible"))
    assert "      2  100.0%      100%  nccl-timeout: Title of nccl-timeout" in tr.as_text(s)
    assert "| 2 | 100.0% | 100% |" in tr.as_markdown(s, None)


def test_rates_of_a_short_or_a_huge_run() -> None:
    assert tr.progress_line(1, 1, 10**12, 1.0) == (
        "triage: 1 jobs, 1 files, 1000.0 GB (1 jobs/s, 1000000.0 MB/s)"
    )
    assert tr.progress_line(1, 1, 0, 0.5).endswith("(2 jobs/s, 0.0 MB/s)")


def test_csv_lines_end_with_a_newline_only() -> None:
    out = "".join(tr.render("csv", [record("a")], Summary(), {}, None))
    assert "\r" not in out and out.count("\n") == 3


def test_markdown_through_render_links_to_the_given_site() -> None:
    (md,) = tr.render("markdown", [record("a")], Summary(), {}, "https://kb.example/")
    assert "[nccl-timeout](https://kb.example/entries/nccl-timeout.html)" in md


def test_github_ends_with_one_notice_line() -> None:
    job = record("a", verdict=None, error_lines=[gap("boom", "a")])
    out = list(tr.render("github", [job], Summary(), {}, None))
    assert out[-1].endswith("1 file, 100 B\n") and out[-1].count("\n") == 1


def test_markdown_text_is_cut_only_past_ten_thousand_characters() -> None:
    assert tr._md("XYZ" * 100) == "XYZ" * 100
    assert tr._md("x" * 10_001) == "x" * 9_999 + "…"


def test_an_unmatched_job_without_error_lines_points_to_its_evidence() -> None:
    text = tr.as_text(summary(record("u", verdict=None)))
    assert "    u: no error line in its logs; its error files or dumps below" in text.split("\n")


def _with_evidence(job: str) -> dict[str, Any]:
    """A matched job with an error file and a Flight Recorder finding, as the readers give."""
    return record(
        job,
        error_files=[
            {
                "rank": 1,
                "time": "2026-12-05 15:07:02 UTC",
                "timestamp": 5.0,
                "message": "RuntimeError: boom\nmore",
            }
        ],
        flight_recorder={
            "findings": [{"text": "rank 3 is behind", "entry": "nccl-timeout"}],
            "missing_ranks": [],
            "dumps": [{}, {}],
        },
    )


def test_text_and_markdown_through_render_show_each_jobs_error_files_and_dumps() -> None:
    (text,) = tr.render("text", [_with_evidence("a"), skip("b")], Summary(), {}, None)
    assert "    error file: rank 1 at 2026-12-05 15:07:02 UTC: RuntimeError: boom" in text
    assert "    flight recorder: rank 3 is behind (nccl-timeout)" in text
    (md,) = tr.render("markdown", [_with_evidence("a")], Summary(), {}, "https://kb.example/")
    assert "### torchelastic error files and Flight Recorder dumps" in md
    assert (
        "  - flight recorder: rank 3 is behind "
        "([nccl-timeout](https://kb.example/entries/nccl-timeout.html))"
    ) in md
    assert "error file" not in "".join(tr.render("text", [record("a")], Summary(), {}, None))


def test_github_gives_each_job_its_lines_whole() -> None:
    from nanopedia.diagnosis.github import for_jobs

    alpha = gather(FIXTURES / "corpus")[0].by_id["alpha-failure"].entry
    twice = [alpha, alpha.model_copy(update={"id": "alpha-copy"})]
    matched = triage_module.triage({"a": ALPHA_LINE}, entries=twice, jobs=1).jobs
    jobs = [*matched, record("b", verdict=None, error_lines=[gap("boom", "b")])]
    out = list(tr.render("github", jobs, Summary(), {}, None))
    first = list(for_jobs([jobs[0]]))
    assert len(first) > 1  # a verdict and its candidates: several lines in one chunk
    assert out[0] == "".join(line + "\n" for line in first)
    assert out[1] == "".join(line + "\n" for line in for_jobs([jobs[1]]))
