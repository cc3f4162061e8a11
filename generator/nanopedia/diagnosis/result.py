"""One diagnosis with all its report needs: what `nanopedia.diagnose` returns.

`diagnose --format json` prints `Result.as_json()`; the text, Markdown and GitHub reports are
`as_text`, `as_markdown` and `as_github`; the launcher wrapper (`nanopedia run`) and the exception
hooks print `as_text` of a result made here from the text they hold. So every way a verdict
reaches a person says the same thing. Only values come in: the caller loads the catalogue (with
its cache) and hands over its entries.
"""

from __future__ import annotations

import io
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nanopedia.diagnosis import github, rank, report, scan, text_report, versions
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
        return out

    def as_text(self, top: int = 5, width: int = text_report.WIDTH) -> str:
        """The terminal report, verdict first, fitted to `width` columns."""
        return text_report.as_text(
            self.diagnosis, self.entries, self.base_url, top, self.seen, width
        )

    def as_markdown(self, top: int = 5) -> str:
        """The report for a GitHub issue or a Slack thread."""
        return report.as_markdown(self.diagnosis, self.entries, self.base_url, top, self.seen)

    def as_github(self, top: int = 5) -> str:
        """GitHub workflow commands: `::error` on the first failing line, `::notice` for each
        further candidate (`github.for_diagnosis`); empty when nothing matched."""
        return github.for_diagnosis(self.diagnosis, self.entries, self.base_url, top)


def exception_text(exc: BaseException) -> str:
    """The traceback Python would print for `exc`, chained causes and notes included."""
    return "".join(traceback.format_exception(exc))


def from_scans(
    scans: Sequence[scan.FileScan],
    entries: Sequence[EntryView],
    base_url: str | None = None,
    seen: Sequence[versions.Seen] = (),
    skipped: Sequence[Problem] = (),
) -> Result:
    """The result of scans already made (the CLI scans its files with progress and workers)."""
    found = rank.diagnose(list(scans))
    return Result(
        found,
        {e.id: e for e in entries},
        base_url,
        tuple(seen) if found.matches else (),
        tuple(skipped),
    )


def from_texts(
    texts: Sequence[tuple[str, bytes]],
    entries: Sequence[EntryView],
    base_url: str | None = None,
    skipped: Sequence[Problem] = (),
    deadline: float = DEADLINE,
) -> Result:
    """Texts held in memory, each `(name, bytes)` diagnosed as one log of that name (a name
    with a rank, `rank3`, gives its lines that rank)."""
    matcher = scan.Matcher(entries)
    stop = time.monotonic() + deadline
    scans = [scan.scan(io.BytesIO(data), name, matcher, stop) for name, data in texts]
    found: dict[str, versions.Seen] = {}
    for name, data in texts:
        for s in versions.from_bytes(data, name):
            found.setdefault(s.package, s)
    return from_scans(scans, entries, base_url, list(found.values()), skipped)


def from_paths(
    paths: Sequence[str],
    entries: Sequence[EntryView],
    base_url: str | None = None,
    skipped: Sequence[Problem] = (),
    deadline: float = DEADLINE,
) -> Result:
    """Log files (plain or `.gz`), one per rank or one combined."""
    matcher = scan.Matcher(entries)
    stop = time.monotonic() + deadline
    scans = [scan.scan_file(p, matcher, stop) for p in paths]
    return from_scans(scans, entries, base_url, versions.read_all(paths, scans), skipped)
