"""GitHub workflow commands for a verdict: `diagnose --format github` and `triage --format github`.

A CI job that runs a training smoke test pipes its log through `nanopedia diagnose --format
github`, and GitHub shows the verdict on the line of the log where the failure began:

    ::error file=train.log,line=14,title=nanopedia%3A fsdp-mixed-precision-error::FSDP ...

`::error` goes on the verdict's first failing line, one `::notice` on the first line of each
further candidate (a benign verdict is a notice too). Everything is escaped as GitHub's toolkit
does (`escapeData`, `escapeProperty` in actions/toolkit `packages/core/src/command.ts`): `%`, CR
and LF in the message; those and `:` and `,` in a property. Other control characters from a log
are shown as `\\xNN` (`report.shorten`), so no line of the output carries a raw one and no log
line can start a workflow command of its own. Both commands read the `--format json` object
(`report.with_answers`, a triage job record), so they cannot say anything the JSON does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nanopedia.diagnosis.rank import Diagnosis
from nanopedia.diagnosis.report import NO_FIX, Entries, shorten, with_answers

#: Characters of a log line shown in a message (GitHub cuts long annotations anyway).
SHOWN_CHARS = 300


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped (GitHub's `escapeData`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file`, `title`): also `:` and `,` (GitHub's `escapeProperty`)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(
    level: str, message: str, title: str, file: str | None = None, line: int | None = None
) -> str:
    """One workflow command line: `::level file=F,line=L,title=T::message`. A file named in
    angle brackets (`<stdin>`, `<text>`) is no file in the repository and is left out; each
    line of `message` is made printable, then the lines are joined with an escaped newline."""
    props = []
    if file and not file.startswith("<"):
        props.append(f"file={escape_property(shorten(file, 1000))}")
        if line:
            props.append(f"line={int(line)}")
    props.append(f"title={escape_property(shorten(title, 200))}")
    text = "\n".join(shorten(part, SHOWN_CHARS) for part in message.split("\n"))
    return f"::{level} {','.join(props)}::{escape_data(text)}"


def _first_line(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A candidate's first own line (not collateral), else its first line."""
    evidence = row["evidence"]
    return next((e for e in evidence if not e["collateral"]), evidence[0] if evidence else None)


def _where(ev: Mapping[str, Any] | None) -> tuple[str | None, int | None]:
    return (ev["file"], ev["line"]) if ev else (None, None)


def for_json(
    out: Mapping[str, Any],
    top: int | None = None,
    job: str | None = None,
    verdict: str | None = None,
) -> list[str]:
    """The commands for one diagnosis as `--format json` writes it (`report.with_answers`, or a
    triage job record with its `job` name and `verdict` id): the verdict first (a triage job's
    verdict is its first candidate that is not benign, so not always the first), then the other
    candidates, up to `top` in all."""
    rows = list(out["matches"])
    if not rows:
        return []
    best = next((r for r in rows if r["id"] == verdict), rows[0]) if verdict else rows[0]
    rows = [best, *[r for r in rows if r is not best][: top - 1 if top else None]]
    on = f" ({job})" if job else ""
    first = out["initiating"] or _first_line(best)
    lines = [best["title"]]
    if out["initiating_reason"]:
        rank = out["initiating_rank"]
        lines.append(
            f"first failure: rank {'unknown' if rank is None else rank} "
            f"({out['initiating_reason']})"
        )
    if first:
        lines.append(f"  {first['text']}")
    if best["cause"]:
        lines += [
            f"likely cause: {best['cause']}",
            f"what to do: {best['action']} ({best['domain']})",
            f"first fix: {best['fix'] or NO_FIX}",
        ]
    lines.append(f"read: {best['url']}")
    level = "notice" if best["benign"] else "error"
    found = [
        command(
            level,
            "\n".join(lines),
            f"nanopedia: {best['id']} ({best['confidence']}){on}",
            *_where(first),
        )
    ]
    for row in rows:
        if row is best:
            continue
        ev = _first_line(row)
        text = [f"{row['title']} (score {row['score']:g}, {row['confidence']})"]
        text += [f"  {ev['text']}"] if ev else []
        text.append(f"read: {row['url']}")
        found.append(
            command("notice", "\n".join(text), f"nanopedia: also {row['id']}{on}", *_where(ev))
        )
    return found


def for_diagnosis(
    result: Diagnosis, entries: Entries, base_url: str | None, top: int | None
) -> str:
    """`diagnose --format github`: one command per line; empty when nothing matched."""
    return "\n".join(for_json(with_answers(result, entries, base_url, top), top))


def for_jobs(jobs: Iterable[Mapping[str, Any]], top: int | None = None) -> Iterable[str]:
    """`triage --format github`, job by job: each matched job's verdict and candidates, and for
    a job no entry matched, a `::warning` on its most frequent error line."""
    for job in jobs:
        if job["verdict"]:
            yield from for_json(job, top, job["job"], job["verdict"])
        elif job["error_lines"]:
            e = job["error_lines"][0]
            yield command(
                "warning",
                f"{e['example']}\n({e['count']} lines like it; no entry "
                "matched: an entry to write?)",
                f"nanopedia: no entry matched ({job['job']})",
                e["file"],
                e["line"],
            )
