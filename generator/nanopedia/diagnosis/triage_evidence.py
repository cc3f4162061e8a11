"""What triage's text, Markdown and CSV say of each job's structured evidence: its torchelastic
error files (rank, time, exception; earliest first, as their timestamps decide the first
failure) and what its Flight Recorder dumps show (the ranks behind, the ranks that called a
different collective or size, the ranks that left no dump).

Read from the job records (`error_files`, `flight_recorder`), which the JSON prints whole. The
rows hold the log's own words; each format makes them safe where it writes them: printable for a
terminal (`report.shorten`), inert in Markdown (`report._md`), no formula in a spreadsheet
(`triage_report.cell`, on every CSV cell).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from nanopedia.diagnosis.contract import entry_link
from nanopedia.diagnosis.report import _md, shorten

#: Jobs whose structured evidence text and Markdown show (JSON and CSV have every job's).
JOBS_SHOWN = 20
#: Error files shown per job, earliest first.
FILES_SHOWN = 4
#: Characters of an exception kept in a CSV cell.
CSV_CHARS = 300
CSV_COLUMNS = (
    "error_file_ranks",
    "error_file_exception",
    "flight_behind_ranks",
    "flight_mismatch_ranks",
    "flight_findings",
)


class Row(NamedTuple):
    """One thing a job's error files or dumps show."""

    what: str
    """`error file` or `flight recorder`."""
    text: str
    """What it shows: `rank 1 at 2026-12-05 15:07:02 UTC: RuntimeError: ...`, or a finding."""
    entry: str | None = None
    """The entry that explains a Flight Recorder finding."""


def earliest_first(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's error files by their timestamps (the first failure first), then rank; those
    without a time last."""
    return sorted(
        files, key=lambda e: (e["timestamp"] is None, e["timestamp"] or 0, e["rank"] or 0)
    )


def _rank(value: int | None) -> str:
    return "?" if value is None else str(value)


def _exception(message: str) -> str:
    """The first line of an error file's message (`RuntimeError: ...`)."""
    return message.strip().split("\n", 1)[0]


def rows(job: dict[str, Any]) -> list[Row]:
    """What a job's error files and dumps show, error files first (at most `FILES_SHOWN`)."""
    files = earliest_first(job.get("error_files") or [])
    out = [
        Row(
            "error file",
            f"rank {_rank(e['rank'])} at {e['time'] or 'an unknown time'}: "
            f"{_exception(e['message'])}",
        )
        for e in files[:FILES_SHOWN]
    ]
    if len(files) > FILES_SHOWN:
        out.append(Row("error file", f"… {len(files) - FILES_SHOWN} more (--format json)"))
    report = job.get("flight_recorder")
    if report:
        out += [Row("flight recorder", f["text"], f["entry"]) for f in report["findings"]]
        if report["missing_ranks"]:
            ranks = ",".join(map(str, report["missing_ranks"]))
            out.append(Row("flight recorder", f"no dump from ranks {ranks}"))
        if not report["findings"]:
            out.append(
                Row(
                    "flight recorder",
                    f"{len(report['dumps'])} dump{'s' * (len(report['dumps']) != 1)}: "
                    "every rank entered the same collectives",
                )
            )
    return out


def csv_cells(job: dict[str, Any]) -> list[str]:
    """The job's `CSV_COLUMNS`: the ranks of its error files (earliest first) and the earliest
    one's exception; the ranks behind and the ranks out of step in its dumps, and each finding."""
    files = earliest_first(job.get("error_files") or [])
    report = job.get("flight_recorder") or {"findings": []}
    findings = report["findings"]

    def ranks(kind: str) -> str:
        return " ".join(
            str(r) for r in sorted({r for f in findings if f["kind"] == kind for r in f["ranks"]})
        )

    return [
        " ".join(_rank(e["rank"]) for e in files),
        _exception(files[0]["message"])[:CSV_CHARS] if files else "",
        ranks("behind"),
        ranks("mismatch"),
        "; ".join(f["text"] for f in findings),
    ]


@dataclass
class Kept:
    """The first `JOBS_SHOWN` jobs that have error files or dumps, with what they show, and
    how many more have them: bounded, whatever the fleet."""

    jobs: list[tuple[str, list[Row]]] = field(default_factory=list)
    more: int = 0

    def add(self, job: dict[str, Any]) -> None:
        if not (job.get("error_files") or job.get("flight_recorder")):
            return
        if len(self.jobs) < JOBS_SHOWN:
            self.jobs.append((job["job"], rows(job)))
        else:
            self.more += 1


def as_text(kept: Kept) -> list[str]:
    """The lines of triage's terminal summary, empty when no job had error files or dumps."""
    if not kept.jobs:
        return []
    out = ["", "torchelastic error files (earliest first) and Flight Recorder dumps, by job:"]
    for job, found in kept.jobs:
        out.append(f"  {shorten(job, 120)}:")
        out += [
            f"    {r.what}: {shorten(r.text, 200)}" + (f" ({r.entry})" if r.entry else "")
            for r in found
        ]
    if kept.more:
        out.append(f"  … {kept.more:,} more jobs with them (--format json lists all)")
    return out


def as_markdown(kept: Kept, base_url: str | None) -> list[str]:
    """The section of triage's Markdown summary, every text from a log made inert."""
    if not kept.jobs:
        return []
    out = ["", "### torchelastic error files and Flight Recorder dumps", ""]
    for job, found in kept.jobs:
        out.append(f"- {_md(shorten(job, 120))}")
        out += [
            f"  - {r.what}: {_md(shorten(r.text, 200))}"
            + (f" ([{_md(r.entry)}]({entry_link(r.entry, base_url)}))" if r.entry else "")
            for r in found
        ]
    if kept.more:
        out.append(f"- … {kept.more:,} more jobs with them (--format json lists all)")
    return out
