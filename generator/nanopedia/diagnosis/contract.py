"""The data a diagnosis hands on: the `--json` object and everything the browser matcher reads.

`export_data()` carries the scanner's and the ranker's constants and patterns to
`theme/static/diagnose-worker.js`, so the browser's rules cannot drift from Python's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from nanopedia.diagnosis import lines, logs, scan
from nanopedia.diagnosis.catalogue import EntryView, view
from nanopedia.diagnosis.rank import (
    COLLATERAL_FACTOR,
    EXTRA_LINE_SHARE,
    EXTRA_LINES,
    WEIGHTS,
    Diagnosis,
)
from nanopedia.diagnosis.scan import Evidence

if TYPE_CHECKING:
    from nanopedia.model import Entry


def entry_link(entry_id: str, base_url: str | None) -> str:
    """Where a reader finds the entry: under the configured base URL, else the built site."""
    if base_url:
        return f"{base_url.rstrip('/')}/entries/{entry_id}.html"
    return f"site/entries/{entry_id}.html"


def evidence_json(ev: Evidence) -> dict[str, Any]:
    """One evidence line as the `--json` output and the browser page show it."""
    return {
        "file": ev.file,
        "line": ev.line,
        "rank": ev.rank,
        "text": ev.text,
        "fingerprint": ev.fingerprint,
        "indicates": ev.indicates,
        "collateral": ev.collateral,
        "timestamp": ev.timestamp,
    }


def as_json(result: Diagnosis, base_url: str | None, top: int | None = None) -> dict[str, Any]:
    """The `--json` object: `matches` best first, the initiating rank and per-file totals."""
    matches = result.matches[:top] if top else result.matches
    return {
        "matches": [
            {
                "id": c.id,
                "title": c.title,
                "score": c.score,
                "benign": c.benign,
                "possible": c.possible,
                "url": entry_link(c.id, base_url),
                "evidence": [evidence_json(e) for e in c.evidence],
            }
            for c in matches
        ],
        "initiating_rank": result.initiating_rank,
        "initiating": evidence_json(result.initiating) if result.initiating else None,
        "initiating_reason": result.initiating_reason,
        "root_cause_rank": result.root_cause_rank,
        "silent_ranks": list(result.silent_ranks),
        "files": [{"file": s.file, "lines": s.lines, "bytes": s.bytes} for s in result.files],
        "error_files": [e.as_json() for e in result.error_files],
        "flight_recorder": flight_json(result, base_url),
    }


def flight_json(result: Diagnosis, base_url: str | None) -> dict[str, Any] | None:
    """The Flight Recorder's findings, each with the link of the entry that explains it."""
    if result.flight_report is None:
        return None
    out = result.flight_report.as_json()
    for row in out["findings"]:
        row["url"] = entry_link(row["entry"], base_url)
    return out


def fingerprint_rows(entry: EntryView | Entry) -> list[dict[str, Any]]:
    """An entry's fingerprints as the browser matcher reads them, each with what the page's
    verdict shows as `report.likely` does: the answer (cause, its fix, domain, action) of the
    root cause the line points to (`answer`, None when none), and of the entry's first root
    cause (`first`)."""
    from nanopedia.diagnosis.report import answer  # report imports this module

    entry = view(entry)
    causes = {rc.id: rc for rc in entry.causes}
    first = answer(entry.causes[0], entry)._asdict()
    return [
        {
            "entry": entry.id,
            "title": entry.title,
            "id": fp.id,
            "pattern": fp.pattern,
            "program": fp.program,
            "ignore_case": fp.ignore_case,
            "indicates": fp.indicates,
            "collateral": fp.collateral,
            "specificity": fp.specificity,
            "answer": answer(causes[fp.cause], entry)._asdict() if fp.cause in causes else None,
            "first": first,
        }
        for fp in entry.fingerprints
    ]


def export_data(entries: Iterable[EntryView | Entry]) -> dict[str, Any]:
    """Everything the browser matcher needs, so its rules cannot drift from these constants."""
    from nanopedia.diagnosis.report import CONFIDENCE, STRENGTH  # report imports this module

    return {
        "fingerprints": [
            row for e in sorted(entries, key=lambda e: e.id) for row in fingerprint_rows(e)
        ],
        "weights": WEIGHTS,
        "collateral_factor": COLLATERAL_FACTOR,
        "extra_line_share": EXTRA_LINE_SHARE,
        "extra_lines": EXTRA_LINES,
        "strength": list(STRENGTH),
        "confidence": CONFIDENCE,
        "evidence_cap": scan.EVIDENCE_CAP,
        "late_lines": scan.LATE_LINES,
        "text_chars": scan.TEXT_CHARS,
        "buffer_bytes": logs.BUFFER_BYTES,
        "max_line_bytes": logs.MAX_LINE_BYTES,
        "timestamp_window": lines.TIMESTAMP_WINDOW,
        "root_cause": scan.ROOT_CAUSE,
        "root_rank": scan.ROOT_RANK,
        "root_span": scan.ROOT_SPAN,
        "launcher_ranks": scan.LAUNCHER_RANKS,
        "wrap_sample": logs.WRAP_SAMPLE,
        "wrap_min": logs.WRAP_MIN,
        "neighbour_lines": lines.NEIGHBOUR_LINES,
        "max_ranks": scan.MAX_RANKS,
        "prefix_rank": lines.PREFIX_RANK.pattern,
        "message_rank": lines.MESSAGE_RANK.pattern,
        "joined_rank": lines.JOINED_RANK.pattern,
        "file_rank": lines.FILE_RANK.pattern,
        "iso_time": lines.ISO_TIME.pattern,
        "glog_time": lines.GLOG_TIME.pattern,
        "enqueued": lines.ENQUEUED.pattern,
    }
