"""What `nanopedia triage` prints, as text chunks the CLI writes as they come.

JSON and CSV are written job by job while the fleet is read (a 100,000-job JSON never sits in
memory); the JSON is byte-identical to `json.dumps(TriageResult.as_json(), indent=2,
sort_keys=True)` because its top-level keys after `jobs` (`schema_version`, `summary`) sort after
it. Text (a terminal) and Markdown (a weekly report, an issue) print the summary once all jobs are
in, with what the first jobs' error files and dumps show (`triage_evidence`); CSV has it in
columns of its own. Every string that comes from a log is made printable first
(`report.shorten`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from nanopedia.diagnosis import triage_evidence
from nanopedia.diagnosis.contract import entry_link
from nanopedia.diagnosis.jobs import Skip
from nanopedia.diagnosis.report import inert, shorten
from nanopedia.diagnosis.triage import REPEATED, SCHEMA_VERSION, Summary

FORMATS = ("text", "json", "csv", "markdown", "github")
#: Rows shown in text and Markdown (JSON lists them all, up to the summary's own bounds).
HOSTS_SHOWN = 20
RANKS_SHOWN = 10
GAPS_SHOWN = 20
UNMATCHED_SHOWN = 20
SKIPS_SHOWN = 50
CSV_COLUMNS = (
    "job",
    "layout",
    "status",
    "verdict",
    "confidence",
    "score",
    "initiating_rank",
    "initiating_host",
    "host_rule",
    "files",
    "bytes",
    "lines",
    "skipped_files",
    "top_error_line",
    "domain",
    "action",
    *triage_evidence.CSV_COLUMNS,
)


def render(
    fmt: str,
    items: Iterable[dict[str, Any] | Skip],
    summary: Summary,
    entries: dict[str, Any],
    base_url: str | None,
) -> Iterator[str]:
    """The output in `fmt`, in chunks; every item is added to `summary` on the way."""
    if fmt == "json":
        yield from _json(items, summary, entries)
    elif fmt == "csv":
        yield from _csv(items, summary)
    elif fmt == "github":
        yield from _github(items, summary)
    else:
        kept = triage_evidence.Kept()
        for item in items:
            summary.add(item)
            if not isinstance(item, Skip):
                kept.add(item)
        done = summary.as_json()
        text = as_markdown(done, base_url, kept) if fmt == "markdown" else as_text(done, kept)
        yield text + "\n"


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _indent(text: str, prefix: str, first: bool = True) -> str:
    lines = text.split("\n")
    return "\n".join((prefix if i or first else "") + line for i, line in enumerate(lines))


def _json(
    items: Iterable[dict[str, Any] | Skip], summary: Summary, entries: dict[str, Any]
) -> Iterator[str]:
    yield '{\n  "entries": ' + _indent(_dumps(entries), "  ", first=False) + ',\n  "jobs": ['
    first = True
    for item in items:
        summary.add(item)
        if isinstance(item, Skip):
            continue
        yield ("\n" if first else ",\n") + _indent(_dumps(item), "    ")
        first = False
    yield ("]" if first else "\n  ]") + f',\n  "schema_version": {SCHEMA_VERSION},\n  "summary": '
    yield _indent(_dumps(summary.as_json()), "  ", first=False) + "\n}\n"


def csv_row(job: dict[str, Any]) -> list[Any]:
    """One job as a spreadsheet row (`CSV_COLUMNS`), every text cell `cell`-safe."""
    best = next((m for m in job["matches"] if m["id"] == job["verdict"]), None)
    return [cell(v) for v in _row(job, best) + triage_evidence.csv_cells(job)]


def cell(value: Any) -> Any:
    """A value a spreadsheet shows as text: a string that starts like a formula (`=`, `+`,
    `-`, `@`, a tab or a CR; `=cmd|' /C calc'!A0` from a job name or a log line) gets a
    leading `'`, which spreadsheets read as "this is text"."""
    if isinstance(value, str) and value[:1] in _FORMULA:
        return "'" + value
    return value


_FORMULA = frozenset("=+-@\t\r")
#: The first cell of the row that ends a complete CSV: a run killed mid-way has none.
CSV_END = "#end"


def _row(job: dict[str, Any], best: dict[str, Any] | None) -> list[Any]:
    return [
        job["job"],
        job["layout"],
        job["status"],
        job["verdict"] or "",
        job["confidence"] or "",
        best["score"] if best else "",
        "" if job["initiating_rank"] is None else job["initiating_rank"],
        job["initiating_host"] or "",
        job["host_rule"] or "",
        len(job["files"]),
        job["bytes"],
        job["lines"],
        len(job["skipped"]),
        job["error_lines"][0]["text"] if job["error_lines"] else "",
        job["domain"] or "",
        job["action"] or "",
    ]


def _csv(items: Iterable[dict[str, Any] | Skip], summary: Summary) -> Iterator[str]:
    """The header, a row per job as it is read, then the `CSV_END` row with the count of job
    rows: a CSV cut short (a killed run written to a file) has no end row, so it cannot pass for
    a complete one."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_COLUMNS)
    rows = 0
    for item in items:
        summary.add(item)
        if not isinstance(item, Skip):
            out.writerow(csv_row(item))
            rows += 1
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    out.writerow([CSV_END, f"{rows} jobs", "complete"])
    yield buf.getvalue()


def _github(items: Iterable[dict[str, Any] | Skip], summary: Summary) -> Iterator[str]:
    """GitHub workflow commands, job by job (`github.for_jobs`), then the headline."""
    from nanopedia.diagnosis.github import command, for_jobs

    for item in items:
        summary.add(item)
        if not isinstance(item, Skip):
            yield "".join(line + "\n" for line in for_jobs([item]))
    yield command("notice", headline(summary.as_json()), "nanopedia triage") + "\n"


def size(n: int) -> str:
    """Bytes in decimal units: `1.7 kB`, `412.3 MB`."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def progress_line(jobs: int, files: int, nbytes: int, seconds: float) -> str:
    """One line of the terminal progress display (the total is not known while walking)."""
    rate = max(seconds, 1e-6)
    return (
        f"triage: {jobs:,} jobs, {files:,} files, {size(nbytes)} "
        f"({jobs / rate:.0f} jobs/s, {nbytes / rate / 1e6:.1f} MB/s)"
    )


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _counts(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['id']} {r['jobs']}" for r in rows)


def headline(s: dict[str, Any]) -> str:
    """`4 jobs: 2 matched, 1 unmatched, 0 clean, 1 skipped; 5 files, 1.7 kB`."""
    j, f = s["jobs"], s["files"]
    return (
        f"{_plural(j['total'], 'job')}: {j['matched']:,} matched, {j['unmatched']:,} "
        f"unmatched, {j['clean']:,} clean, {j['skipped']:,} skipped; "
        f"{_plural(f['scanned'], 'file')}, {size(f['bytes'])}"
    )


def as_text(s: dict[str, Any], kept: triage_evidence.Kept | None = None) -> str:
    """The summary for a terminal, with what the `kept` jobs' error files and dumps show."""
    out = [f"nanopedia triage: {headline(s)}"]
    if s["entries"]:
        out += [
            "",
            "entries by jobs (the verdict of each matched job):",
            "   jobs   share  possible  entry",
        ]
        out += [
            f"  {e['jobs']:5,}  {100 * e['share']:5.1f}%  {100 * e['possible_share']:7.0f}%"
            f"  {e['id']}: {shorten(e['title'], 90)}"
            for e in s["entries"]
        ]
    if s["actions"]:
        out += ["", "what to do, by failure domain and action (of each matched job's verdict):"]
        out += [
            f"  {a['domain']}, {a['action']}: {_plural(a['jobs'], 'job')}"
            + (f" on {_plural(a['hosts'], 'host')}" if a["hosts"] else "")
            + f" ({_counts(a['entries'][:3])}{', …' if len(a['entries']) > 3 else ''})"
            for a in s["actions"]
        ]
    if s["infrastructure_hosts"]:
        out += ["", "infrastructure failures by host (check or drain the hosts that repeat):"]
        out += [
            f"  {shorten(h['host'], 60)}: {_plural(h['jobs'], 'job')}"
            f"{' (repeated)' if h['jobs'] >= REPEATED else ''}: {_counts(h['entries'])}"
            for h in s["infrastructure_hosts"][:HOSTS_SHOWN]
        ]
        out += _more(s["infrastructure_hosts"], HOSTS_SHOWN, "host")
    if s["hosts"]:
        out += ["", "first failure on the same host in several jobs:"]
        out += [
            f"  {shorten(h['host'], 60)}: {_plural(h['first_failures'], 'job')} (its name "
            f"is in {h['jobs']:,}): {_counts(h['entries'])}"
            for h in s["hosts"][:HOSTS_SHOWN]
        ]
        out += _more(s["hosts"], HOSTS_SHOWN, "host")
    if s["ranks"]:
        out += ["", "first failing rank in several jobs:"]
        out += [
            f"  rank {r['rank']}: {_plural(r['first_failures'], 'job')}: {_counts(r['entries'])}"
            for r in s["ranks"][:RANKS_SHOWN]
        ]
        out += _more(s["ranks"], RANKS_SHOWN, "rank")
    unmatched = len(s["unmatched"]) + s["unmatched_more"]
    if unmatched:
        out += [
            "",
            f"jobs no entry matched: {unmatched:,}; their error lines, by jobs "
            "(numbers, hex, paths collapsed):",
        ]
        for g in s["gaps"][:GAPS_SHOWN]:
            out.append(f"  {_plural(g['jobs'], 'job'):>9}  {shorten(g['text'])}")
            out.append(
                f"             e.g. {shorten(g['file'], 120)}:{g['line']}: "
                f"{shorten(g['example'], 120)}"
            )
        out += _more(s["gaps"], GAPS_SHOWN, "line")
        out.append("  per job:")
        for u in s["unmatched"][:UNMATCHED_SHOWN]:
            lines = "; ".join(
                f"{shorten(e['text'], 100)} ({e['count']}x)" for e in u["error_lines"][:2]
            )
            # no error line: its error files or dumps said it failed (shown below)
            lines = lines or "no error line in its logs; its error files or dumps below"
            out.append(f"    {shorten(u['job'], 120)}: {lines}")
        if unmatched > UNMATCHED_SHOWN:
            out.append(f"    … {unmatched - UNMATCHED_SHOWN:,} more (--format json lists all)")
    out += triage_evidence.as_text(kept) if kept else []
    out += _skips_text(s["skipped"])
    return "\n".join(out)


def _more(rows: list[Any], shown: int, what: str) -> list[str]:
    return (
        [f"  … {_plural(len(rows) - shown, what)} more (--format json lists all)"]
        if len(rows) > shown
        else []
    )


def _skips_text(skipped: dict[str, Any]) -> list[str]:
    total = sum(skipped["by_reason"].values())
    if not total:
        return []
    reasons = ", ".join(f"{r} {n:,}" for r, n in skipped["by_reason"].items())
    out = ["", f"skipped: {total:,} ({reasons}):"]
    out += [
        f"  {shorten(k['path'], 200)}: {k['reason']}: {k['detail']}"
        for k in skipped["files"][:SKIPS_SHOWN]
    ]
    if total > SKIPS_SHOWN:
        out.append(
            f"  … {total - SKIPS_SHOWN:,} more (--format json names up to "
            f"{len(skipped['files']):,}, each job's record its own)"
        )
    return out


def _md(text: str) -> str:
    """Log or path text made inert in Markdown prose and tables."""
    text = shorten(text, 10_000)
    for ch in "\\`*_[]<>|#~":
        text = text.replace(ch, "\\" + ch)
    return inert(text)


def as_markdown(
    s: dict[str, Any], base_url: str | None, kept: triage_evidence.Kept | None = None
) -> str:
    """The summary for an issue, a wiki page or a Slack post, with what the `kept` jobs' error
    files and dumps show."""
    out = [f"## Fleet triage: {_md(headline(s))}"]
    if s["entries"]:
        out += [
            "",
            "### Entries by jobs",
            "",
            "| jobs | share | possible only | entry |",
            "|---:|---:|---:|---|",
        ]
        out += [
            f"| {e['jobs']:,} | {100 * e['share']:.1f}% | {100 * e['possible_share']:.0f}% "
            f"| [{_md(e['id'])}]({entry_link(e['id'], base_url)}): "
            f"{_md(shorten(e['title'], 90))} |"
            for e in s["entries"]
        ]
    if s["actions"]:
        out += [
            "",
            "### What to do",
            "",
            "| domain | action | jobs | hosts | entries |",
            "|---|---|---:|---:|---|",
        ]
        out += [
            f"| {a['domain']} | {a['action']} | {a['jobs']:,} | {a['hosts']:,} | "
            f"{_md(_counts(a['entries']))} |"
            for a in s["actions"]
        ]
    if s["infrastructure_hosts"]:
        out += [
            "",
            "### Infrastructure failures by host",
            "",
            "| host | jobs | entries |",
            "|---|---:|---|",
        ]
        out += [
            f"| {_md(h['host'])} | {h['jobs']:,} | {_md(_counts(h['entries']))} |"
            for h in s["infrastructure_hosts"][:HOSTS_SHOWN]
        ]
    if s["hosts"]:
        out += [
            "",
            "### First failure on the same host in several jobs",
            "",
            "| host | first failures | jobs naming it | entries |",
            "|---|---:|---:|---|",
        ]
        out += [
            f"| {_md(h['host'])} | {h['first_failures']:,} | {h['jobs']:,} | "
            f"{_md(_counts(h['entries']))} |"
            for h in s["hosts"][:HOSTS_SHOWN]
        ]
    if s["ranks"]:
        out += [
            "",
            "### First failing rank in several jobs",
            "",
            "| rank | jobs | entries |",
            "|---:|---:|---|",
        ]
        out += [
            f"| {r['rank']} | {r['first_failures']:,} | {_md(_counts(r['entries']))} |"
            for r in s["ranks"][:RANKS_SHOWN]
        ]
    if s["gaps"]:
        out += [
            "",
            "### Failures the encyclopedia does not know yet",
            "",
            "| jobs | error line (normalised) | example |",
            "|---:|---|---|",
        ]
        out += [
            f"| {g['jobs']:,} | {_md(g['text'])} | {_md(g['file'])}:{g['line']} |"
            for g in s["gaps"][:GAPS_SHOWN]
        ]
    out += triage_evidence.as_markdown(kept, base_url) if kept else []
    total = sum(s["skipped"]["by_reason"].values())
    if total:
        out += ["", f"### Skipped: {total:,} files or folders", ""]
        out += [
            f"- {_md(k['path'])}: {k['reason']} ({_md(k['detail'])})"
            for k in s["skipped"]["files"][:SKIPS_SHOWN]
        ]
        if total > SKIPS_SHOWN:
            out.append(f"- … {total - SKIPS_SHOWN:,} more")
    return "\n".join(out)
