"""The answer `nanopedia diagnose` prints in a terminal, every line fitted to its width.

First the verdict box: the entry, how sure, where the failure began with its line, the likely
cause, what to do, the fix step for that cause, the versions the log shows and where to read
more. Then why (what the confidence word means, how the first failure and the cause were chosen,
how scores add up), then each candidate's evidence by fingerprint with the ranks that printed it,
then the error files and Flight Recorder findings read.

Prose wraps at spaces (`site.wrapping.fill`, as `nanopedia show`); a log line is cut with `…`
around the words its fingerprints matched (`excerpt`), in one piece per place when they lie far
apart, and is printed once: a later mention points back to it. Titles are shown as the
browser page shows them, their code spans without backticks.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nanopedia.diagnosis.catalogue import view
from nanopedia.diagnosis.rank import (
    COLLATERAL_FACTOR,
    EXTRA_LINE_SHARE,
    EXTRA_LINES,
    WEIGHTS,
    Candidate,
    Diagnosis,
)
from nanopedia.diagnosis.report import (
    CONFIDENCE,
    CONTROLS,
    NO_FIX,
    SHOWN_GROUPS,
    Entries,
    Group,
    confidence_word,
    first_text,
    fit_text,
    group_ranks,
    groups,
    likely,
    pointed_cause,
    ranks_text,
    read_link,
    verdict,
)
from nanopedia.diagnosis.versions import Seen, fits
from nanopedia.site.wrapping import cut, fill

#: Columns laid out when the terminal's width is unknown (a pipe, a file).
WIDTH = 80
#: Narrowest layout: below it, wrapped prose and cut log lines stop being readable.
MIN_WIDTH = 60
#: Pieces of a log line beyond which a long match no longer goes on in a further piece.
MAX_PIECES = 4
#: How far a cut moves to fall between words rather than inside one.
SNAP = 12

_TICKS = re.compile(r"`+")


def columns() -> int:
    """The terminal's width (`COLUMNS` first, as `shutil` reads it), `WIDTH` when there is none,
    never less than `MIN_WIDTH`."""
    return max(shutil.get_terminal_size((WIDTH, 24)).columns, MIN_WIDTH)


def title_text(title: str) -> str:
    """A title for a terminal: each code span's text without its backticks, the rest as typed
    (titles hold text and code spans only: `site.markdown.title_parts`, CommonMark's rules)."""
    runs = list(_TICKS.finditer(title))
    out: list[str] = []
    pos = i = 0
    while i < len(runs):
        opener = runs[i]
        close = next(
            (j for j in range(i + 1, len(runs)) if len(runs[j][0]) == len(opener[0])), None
        )
        if close is None:
            i += 1
            continue
        code = title[opener.end() : runs[close].start()].replace("\n", " ")
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip(" "):
            code = code[1:-1]
        out += [title[pos : opener.start()], code]
        pos, i = runs[close].end(), close + 1
    return "".join(out) + title[pos:]


def printable(
    text: str, spans: Iterable[tuple[int, int]] = ()
) -> tuple[str, list[tuple[int, int]]]:
    """`text` with its control characters shown as escapes (`report.shorten` says why), and
    `spans` of it moved to match."""
    shown = text.translate(CONTROLS)
    spans = list(spans)
    if len(shown) == len(text) or not spans:
        return shown, spans
    at = [0]
    for ch in text:
        at.append(at[-1] + len(ch.translate(CONTROLS)))
    return shown, [(at[s], at[e]) for s, e in spans]


def excerpt(text: str, spans: Sequence[tuple[int, int]], width: int) -> list[str]:
    """A log line in lines of `width` columns: whole when it fits, else cut with `…` into one
    piece around each place it was matched (`spans` that fit one line together share it), in
    line order; a match longer than its piece goes on in the next pieces while there are fewer
    than `MAX_PIECES`. With no spans, the line's start."""
    text, spans = printable(text, spans)
    if len(text) <= width:
        return [text]
    clusters: list[tuple[int, int]] = []
    for s, e in spans:
        e = max(e, s + 1)
        for i, (a, b) in enumerate(clusters):
            if max(b, e) - min(a, s) <= width - 2:
                clusters[i] = (min(a, s), max(b, e))
                break
        else:
            clusters.append((s, e))
    out: list[str] = []
    end = 0
    spare = MAX_PIECES - max(len(clusters), 1)
    for s, e in sorted(clusters) or [(0, 1)]:
        if end < e:
            start, end = _window(text, max(s, end), e, width, end)
            out.append(("…" if start else "") + text[start:end] + ("…" * (end < len(text))))
        while end < e and spare > 0:
            start, end = _window(text, end, e, width, end)
            out.append("…" + text[start:end] + ("…" * (end < len(text))))
            spare -= 1
    return out


def _window(text: str, s: int, e: int, width: int, floor: int) -> tuple[int, int]:
    """The stretch of `text` (longer than `width`) shown around characters `s` to `e`, never
    before `floor` (where the piece before ends): from the line's start when they fit there,
    else with a third of the room left before them (more when the line ends sooner), cut
    between words where that costs at most `SNAP` characters."""
    n = len(text)
    if e <= width - 1 and not floor:
        start = 0
    else:
        spare = width - 2 - (e - s)
        start = max(floor, s - max(spare // 3, spare - (n - e), 0))
        space = text.find(" ", start, s)
        if start > floor and 0 <= space < start + SNAP:
            start = space + 1
        while start == floor and text[start] == " ":
            start, floor = start + 1, floor + 1  # a piece goes on after the space
    room = width - (1 if start else 0)
    if n - start <= room:
        return start, n
    end = start + room - 1
    space = text.rfind(" ", end - SNAP if e > end else max(e, end - SNAP), end)
    return start, space if space > start else end


@dataclass
class _Page:
    """The lines written so far and the log lines already shown in them (each is shown once)."""

    width: int
    lines: list[str] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)
    """Log line text -> where it was shown (`above`, `under 1.`)."""

    def prose(self, text: str, first: str = "", rest: str = "", tail: str = "") -> None:
        """`text` made printable and wrapped, and `tail` after it on one line where it fits
        (never split)."""
        text, tail = text.translate(CONTROLS), tail.translate(CONTROLS)
        glued = text + (" " + tail.replace(" ", "\0") if tail else "")
        self.lines += [
            cut(line.replace("\0", " "), self.width)
            for line in fill(glued, self.width, first, rest)
        ]

    def item(self, text: str) -> None:
        """One `name: value` line of the verdict box or of why, wrapped under itself."""
        self.prose(text, "  ", "    ")

    def log_line(
        self, text: str, spans: Sequence[tuple[int, int]], indent: str, where: str
    ) -> None:
        """A log line cut to fit around `spans` (`excerpt`), remembered as shown `where`."""
        self.shown[text] = where
        self.lines += [indent + p for p in excerpt(text, spans, self.width - len(indent))]


def as_text(
    result: Diagnosis,
    entries: Entries,
    base_url: str | None,
    top: int,
    seen: Sequence[Seen] = (),
    width: int = WIDTH,
) -> str:
    """The terminal report, fitted to `width` columns (at least `MIN_WIDTH`)."""
    page = _Page(max(width, MIN_WIDTH))
    if not result.matches:
        page.lines.append("no known failure matched")
        for line in first_text(result):
            page.item(line)
    else:
        _verdict(page, result, entries, base_url, seen, top)
        _why(page, result, entries)
        _evidence(page, result, top)
    _structured(page, result, base_url)
    return "\n".join(page.lines)


def _verdict(
    page: _Page,
    result: Diagnosis,
    entries: Entries,
    base_url: str | None,
    seen: Sequence[Seen],
    top: int,
) -> None:
    v = verdict(result, entries, base_url)
    best = v.best
    page.prose(f"verdict: {best.id}: {title_text(best.title)}", "", "    ")
    page.item(f"confidence: {confidence_word(best)}")
    first = result.initiating
    if result.initiating_reason:
        rank = "unknown" if result.initiating_rank is None else result.initiating_rank
        where = f" at {first.file}:{first.line}" if first else ""
        page.item(f"first failure: rank {rank}{where}")
    if first:
        spans = _spans(first.text, result, entries, top)
        page.log_line(first.text, spans, "    ", "above")
    if result.silent_ranks:
        many = "s" * (len(result.silent_ranks) > 1)
        page.item(
            f"silent: rank{many} {ranks_text(result.silent_ranks)} (their logs show no error: "
            "hung, killed before printing, or fine)"
        )
    if v.answer:
        page.item(f"likely cause: {title_text(v.answer.cause)}")
        page.item(f"what to do: {v.answer.action} ({v.answer.domain})")
        page.item(f"first fix: {title_text(v.answer.fix or NO_FIX)}")
    entry = entries.get(best.id)
    for fit in fits(seen, entry) if entry else ():
        page.item(f"version: {fit_text(fit)}")
    page.item(f"read: {v.link}")


def _spans(text: str, result: Diagnosis, entries: Entries, top: int) -> list[tuple[int, int]]:
    """Every matched span of a log line that the report shows, the most telling first: the
    first failure's, then the one that names the likely cause, then the evidence's in order."""
    best = result.matches[0]
    entry = entries.get(best.id)
    pointer = pointed_cause(best, view(entry)) if entry else None
    lines = [result.initiating, pointer[1] if pointer else None] + [
        ev for c in result.matches[:top] for ev in c.evidence
    ]
    found: list[tuple[int, int]] = []
    for ev in lines:
        if ev is not None and ev.text == text and ev.span and ev.span not in found:
            found.append(ev.span)
    return found


def _why(page: _Page, result: Diagnosis, entries: Entries) -> None:
    best = result.matches[0]
    word = confidence_word(best)
    page.lines += ["", "why:"]
    page.item(f"{word}: {CONFIDENCE[word]}{_deciding(best)}")
    if result.initiating_reason:
        page.item(f"first failure: {result.initiating_reason}")
    entry = entries.get(best.id)
    if entry is not None:
        pointer = pointed_cause(best, view(entry))
        page.item(
            f"likely cause: pointed to by the line that {pointer[1].fingerprint} matched"
            if pointer
            else "likely cause: the entry's first, as no line that matched points to one"
        )
        step = likely(best, entry)
        page.item(
            "first fix: the entry's first step for that cause"
            if step and step.fix
            else "first fix: none, as no step of the entry's fix is for that cause"
        )
    weights = ", ".join(f"{k} {w:g}" for k, w in sorted(WEIGHTS.items(), key=lambda kw: -kw[1]))
    page.item(
        f"scores: each fingerprint adds its weight ({weights}) and {EXTRA_LINE_SHARE:g} of it "
        f"per further distinct line, at most {EXTRA_LINES}; a collateral line (the consequence "
        f"of a failure elsewhere) counts {COLLATERAL_FACTOR:g} of its weight"
    )


def _deciding(c: Candidate) -> str:
    """` (fingerprint at rank N)`: the line that makes a candidate certain."""
    own = [e for e in c.evidence if e.indicates == "decisive" and not e.collateral]
    if c.possible or c.benign or not own:
        return ""
    rank = "" if own[0].rank is None else f" at rank {own[0].rank}"
    return f" ({own[0].fingerprint}{rank})"


def _evidence(page: _Page, result: Diagnosis, top: int) -> None:
    shown = result.matches[:top]
    files = sorted({ev.file for c in shown for ev in c.evidence})
    folder = _folder(files)
    if len(files) == 1:
        page.lines.append("")
        page.prose(f"evidence (lines of {files[0]}):")
    elif folder:
        page.lines.append("")
        page.prose(f"evidence (files under {folder}):")
    for n, c in enumerate(shown, 1):
        label = " (benign)" if c.benign else " (possible)" if c.possible else ""
        page.lines += ["", f"{n}. {c.id}{label}: score {c.score:g}"]
        found = groups(c)
        by_text: dict[str, list[Group]] = {}
        for g in found[:SHOWN_GROUPS]:
            by_text.setdefault(g.first.text, []).append(g)
        for text, same in by_text.items():
            before = page.shown.get(text)
            for i, g in enumerate(same):
                tags = g.indicates + (", collateral" if g.collateral else "")
                count = f", {g.lines} lines" if g.lines > 1 else ""
                where = (
                    f"line {g.first.line}"
                    if len(files) == 1
                    else f"{g.first.file[len(folder) :]}:{g.first.line}"
                )
                note = f", shown {before}" if before and i == len(same) - 1 else ""
                page.prose(
                    f"{group_ranks(g)}: {g.fingerprint} ({tags}{count})",
                    "   ",
                    "       ",
                    where + note,
                )
            if before is None:
                spans = [g.first.span for g in same if g.first.span]
                page.log_line(text, spans, "     ", f"under {n}.")
        if len(found) > SHOWN_GROUPS:
            page.prose(
                f"… {len(found) - SHOWN_GROUPS} more fingerprint(s) of {c.id} (--format json "
                "lists every line)",
                "   ",
                "     ",
            )


def _folder(files: Sequence[str]) -> str:
    """The folder (with its `/`) every one of several files lies under, or "": the evidence
    names files below it."""
    if len(files) < 2:
        return ""
    parts = [f.split("/")[:-1] for f in files]
    common = []
    for names in zip(*parts, strict=False):
        if len(set(names)) > 1:
            break
        common.append(names[0])
    return "/".join(common) + "/" if common else ""


def _structured(page: _Page, result: Diagnosis, base_url: str | None) -> None:
    """Each rank's error file (earliest first) and what the Flight Recorder dumps show, each
    finding with where to read the entry that explains it."""
    if result.error_files:
        page.lines += ["", "torchelastic error files (earliest first):"]
        for e in sorted(
            result.error_files, key=lambda e: (e.timestamp is None, e.timestamp or 0, e.rank or 0)
        ):
            rank = "?" if e.rank is None else e.rank
            before = page.shown.get(e.message)
            page.prose(
                f"rank {rank} at {e.when or 'an unknown time'}: {e.file}",
                "   ",
                "       ",
                f"(message shown {before})" if before else "",
            )
            if before is None:
                page.log_line(e.message, (), "     ", f"for rank {rank}")
    report = result.flight_report
    if report is not None:
        ranks = ranks_text(r for _, r in report.files)
        page.lines += ["", f"flight recorder ({len(report.files)} dumps, ranks {ranks}):"]
        if report.missing:
            page.prose(
                f"no dump from ranks {ranks_text(report.missing)} (their part is unknown)",
                "   ",
                "     ",
            )
        for f in report.findings:
            page.prose(f"{f.text} (read: {read_link(f.entry, base_url)})", "   ", "     ")
        if not report.findings:
            page.prose(
                "every rank entered the same collectives (no rank behind, no mismatch)",
                "   ",
                "     ",
            )
