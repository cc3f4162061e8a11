"""One diagnosis with all its report needs: what `nanopedia.diagnose` returns.

`diagnose --format json` prints `Result.as_json()`; the text, Markdown and GitHub reports are
`as_text`, `as_markdown` and `as_github`; the launcher wrapper (`nanopedia run`) and the exception
hooks print `as_text` of a result made here from the text they hold. Every result is put together
by `from_scans`, whoever scanned the logs: the error files and dumps read beside them, the
versions, and what the logs show when nothing matched. So every way a verdict reaches a person
says the same thing. Only values come in: the caller loads the catalogue (with its cache) and
hands over its entries.
"""

from __future__ import annotations

import io
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nanopedia.diagnosis import (
    github,
    rank,
    readers,
    report,
    scan,
    text_report,
    unmatched,
    versions,
)
from nanopedia.diagnosis.catalogue import EntryView
from nanopedia.diagnosis.rank import Candidate, Diagnosis
from nanopedia.diagnosis.scan import Evidence
from nanopedia.errors import Problem

#: Seconds a diagnosis may take before it stops and names the slowest pattern (as the CLI).
DEADLINE = 300.0
#: The name a text is diagnosed under when none is given (evidence lines cite it as their file).
TEXT_NAME = "<text>"
#: The name of an exception's traceback text.
EXCEPTION_NAME = "<exception>"

Log = str | tuple[str, bytes]
"""A log read again for its versions and first error line: a file's path (`-`, standard input,
is read once, by the scan), or a text held in memory as `(name, bytes)`."""


@dataclass(frozen=True, slots=True)
class Result:
    """A ranked diagnosis with the entries, link base and versions its reports are made of."""

    diagnosis: Diagnosis
    """The ranked candidates and the first failure (`rank.diagnose`)."""
    entries: Mapping[str, EntryView]
    """The catalogue's entries by id: each candidate's causes, fix steps and affected ranges."""
    base_url: str | None = None
    """Links go under it; None: the built site's relative links."""
    seen: tuple[versions.Seen, ...] = ()
    """The package versions the logs show, first sighting of each."""
    skipped: tuple[Problem, ...] = ()
    """Entry files left out of the catalogue, with their first problem."""
    missed: unmatched.Missed | None = None
    """When nothing matched and no error file or dump was read: the logs' first error line and
    the inputs that are no logs (the JSON's `unmatched`)."""

    @property
    def matches(self) -> tuple[Candidate, ...]:
        """Candidate entries, best first (the JSON's `matches`)."""
        return self.diagnosis.matches

    @property
    def verdict(self) -> str | None:
        """The id of the best candidate, or None when nothing matched."""
        return self.diagnosis.matches[0].id if self.diagnosis.matches else None

    @property
    def confidence(self) -> str | None:
        """`certain`, `possible` or `benign` of the best candidate (the JSON's `confidence`)."""
        return report.confidence_word(self.matches[0]) if self.matches else None

    @property
    def initiating_rank(self) -> int | None:
        """The rank that failed first, when known."""
        return self.diagnosis.initiating_rank

    @property
    def initiating(self) -> Evidence | None:
        """The line of the first failure, when one stands out."""
        return self.diagnosis.initiating

    @property
    def initiating_reason(self) -> str | None:
        """How the first failure was decided."""
        return self.diagnosis.initiating_reason

    @property
    def silent_ranks(self) -> tuple[int, ...]:
        """Ranks known to exist that printed no evidence."""
        return self.diagnosis.silent_ranks

    @property
    def files(self) -> tuple[scan.FileScan, ...]:
        """Per-file scan results, in the order given."""
        return self.diagnosis.files

    def as_json(self, top: int | None = None) -> dict[str, Any]:
        """What `diagnose --format json` prints (`top` candidates, None: all)."""
        out = report.with_answers(self.diagnosis, self.entries, self.base_url, top, self.seen)
        out["skipped_entries"] = [p.as_dict() for p in self.skipped]
        if self.missed:
            out["unmatched"] = unmatched.as_json(self.missed, self.base_url)
        return out

    def as_text(self, top: int = 5, width: int = text_report.WIDTH) -> str:
        """The terminal report, verdict first, fitted to `width` columns."""
        if self.missed:
            return unmatched.as_text(self.missed, self.base_url, width)
        return text_report.as_text(
            self.diagnosis, self.entries, self.base_url, top, self.seen, width
        )

    def as_markdown(self, top: int = 5) -> str:
        """The report for a GitHub issue or a Slack thread."""
        if self.missed:
            return unmatched.as_markdown(self.missed, self.base_url)
        return report.as_markdown(self.diagnosis, self.entries, self.base_url, top, self.seen)

    def as_github(self, top: int = 5) -> str:
        """GitHub workflow commands: `::error` on the first failing line, `::notice` for each
        further candidate (`github.for_diagnosis`); empty when nothing matched."""
        return github.for_diagnosis(self.diagnosis, self.entries, self.base_url, top)


def exception_text(exc: BaseException) -> str:
    """The traceback Python would print for `exc`, chained causes and notes included."""
    return "".join(traceback.format_exception(exc))


def from_scans(
    logs: Sequence[Log],
    scans: Sequence[scan.FileScan],
    entries: Sequence[EntryView],
    found: readers.Found | None = None,
    *,
    matcher: scan.Matcher,
    stop: float | None = None,
    base_url: str | None = None,
    skipped: Sequence[Problem] = (),
) -> Result:
    """The result of `logs` scanned already (`scans`, in the same order: the CLI scans its
    files with progress and workers) and of the error files and dumps read beside them
    (`found`). Each error file's traceback is scanned (`matcher`, until the monotonic time
    `stop`) as its rank's evidence at its timestamp; the versions the logs show are read when
    something matched, their first error line when nothing did and no error file or dump
    spoke."""
    found = found or readers.Found()
    structured = [scan.scan_error_file(e, matcher, stop) for e in found.errors]
    titles = {e.id: e.title for e in entries}
    diagnosis = rank.diagnose([*scans, *structured], found.errors, found.report(), titles)
    seen = versions.read_all(logs, scans) if diagnosis.matches else []
    spoke = diagnosis.error_files or diagnosis.flight_report is not None
    missed = None if diagnosis.matches or spoke else _missed(logs, scans)
    return Result(
        diagnosis, {e.id: e for e in entries}, base_url, tuple(seen), tuple(skipped), missed
    )


def _missed(logs: Sequence[Log], scans: Sequence[scan.FileScan]) -> unmatched.Missed:
    """Each input that is no log, and the first error line of the logs, in the order given."""
    inputs: list[tuple[str, str]] = []
    error = None
    for log, one in zip(logs, scans, strict=True):
        try:
            problem, first = (
                unmatched.read(log, one.file)
                if isinstance(log, str)
                else unmatched.read_stream(io.BytesIO(log[1]), one.file)
            )
        except (OSError, EOFError):
            continue
        if problem:
            inputs.append((one.file, problem))
        error = error or first
    return unmatched.Missed(error, tuple(inputs))


def from_texts(
    texts: Sequence[tuple[str, bytes]],
    entries: Sequence[EntryView],
    base_url: str | None = None,
    skipped: Sequence[Problem] = (),
    deadline: float = DEADLINE,
    found: readers.Found | None = None,
) -> Result:
    """Texts held in memory, each `(name, bytes)` diagnosed as one log of that name (a name
    with a rank, `rank3`, gives its lines that rank), with the error files and dumps `found`
    beside them (`nanopedia run`: what the run left in its folder)."""
    matcher = scan.Matcher(entries)
    stop = time.monotonic() + deadline
    scans = [scan.scan(io.BytesIO(data), name, matcher, stop) for name, data in texts]
    return from_scans(
        texts, scans, entries, found, matcher=matcher, stop=stop, base_url=base_url, skipped=skipped
    )


def from_paths(
    paths: Sequence[str],
    entries: Sequence[EntryView],
    base_url: str | None = None,
    skipped: Sequence[Problem] = (),
    deadline: float = DEADLINE,
) -> Result:
    """Log files (plain or `.gz`: one per rank, or one combined), torchelastic error files,
    Flight Recorder dumps and run folders, as `diagnose` reads them (`readers.gather`); an error
    file or dump that cannot be read fails with `NanopediaError`, every one located."""
    logs, found = readers.gather(paths)
    found.raise_problems()
    matcher = scan.Matcher(entries)
    stop = time.monotonic() + deadline
    scans = [scan.scan_file(p, matcher, stop) for p in logs]
    return from_scans(
        logs, scans, entries, found, matcher=matcher, stop=stop, base_url=base_url, skipped=skipped
    )
