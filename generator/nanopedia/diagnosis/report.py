"""The answer `nanopedia diagnose` prints: the verdict first, then the evidence, grouped by rank.

An engineer pastes this into an incident channel, so the first lines say what failed, how sure
the match is, where it began, the likely cause, the fix step for that cause and where to read
more; then the evidence, one line per fingerprint with the ranks that printed it (`ranks
0,1,3-7`), repeats collapsed and long lines cut with a visible `…`. Markdown for a GitHub or
Slack paste and JSON (every line whole) for a program are made here; text for a terminal, from
the same verdict, in `text_report`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from nanopedia.diagnosis.catalogue import CauseView, EntryView, view
from nanopedia.diagnosis.contract import as_json, entry_link
from nanopedia.diagnosis.rank import Candidate, Diagnosis
from nanopedia.diagnosis.scan import Evidence
from nanopedia.diagnosis.versions import Fit, Seen, fits

if TYPE_CHECKING:
    from nanopedia.model import Entry, RootCause

#: What the report functions take for each entry id: the catalogue's views (a loaded `Entry`
#: is turned into one).
Entries = Mapping[str, "EntryView | Entry"]

#: Characters of an evidence line shown in text and Markdown (JSON keeps lines whole).
SHOWN_CHARS = 160
#: Evidence groups shown per candidate in text and Markdown.
SHOWN_GROUPS = 6


@dataclass(frozen=True, slots=True)
class Group:
    """The lines one fingerprint matched, all ranks together."""

    fingerprint: str
    indicates: str
    collateral: bool
    ranks: tuple[int, ...]
    """Ranks that printed it (empty when no line said)."""
    lines: int
    """How many lines matched."""
    first: Evidence
    """The earliest of them, shown."""


#: Evidence strengths, strongest first: the likely cause is that of the strongest own line.
STRENGTH = ("decisive", "supporting", "context", "benign")
#: What each confidence word means, as the CLI and the browser page explain it.
CONFIDENCE = {
    "certain": "an exact error line of this failure",
    "possible": "no exact error line of its own: generic or shared lines only",
    "benign": "normal in moderation; see the entry for when it is not",
}


#: What a verdict says for the fix when no step of the entry's fix is for the likely cause.
NO_FIX = "no step of the entry's fix is for this cause: read the entry"


class Answer(NamedTuple):
    """What a verdict says to do: the likely cause, the fix step for it (None when the entry
    has none for it), and the cause's failure domain and action (entries/README.md, "Failure
    domain and action")."""

    cause: str
    fix: str | None
    domain: str
    action: str


def answer(cause: CauseView | RootCause, entry: EntryView | Entry) -> Answer:
    """The answer for one root cause of `entry`: the first fix step for it (one that names it,
    or names no cause and so serves every cause). A step for another cause is never given."""
    steps = view(entry).fixes
    step = next((f for f in steps if not f.causes or cause.id in f.causes), None)
    return Answer(cause.title, step.title if step else None, cause.domain, cause.action)


def pointed_cause(c: Candidate, entry: EntryView) -> tuple[CauseView, Evidence] | None:
    """The root cause of `entry` that the candidate's strongest own line points to (collateral
    lines last), with that line; None when no line points to one."""
    causes = {rc.id: rc for rc in entry.causes}
    pointed = {fp.id: fp.cause for fp in entry.fingerprints}
    for ev in sorted(c.evidence, key=lambda e: (e.collateral, STRENGTH.index(e.indicates))):
        cause = pointed.get(ev.fingerprint)
        if cause in causes:
            return causes[cause], ev
    return None


def likely(c: Candidate, entry: EntryView | Entry | None) -> Answer | None:
    """The answer for the root cause the candidate's strongest own line points to
    (`pointed_cause`), else for the entry's first root cause."""
    if entry is None:
        return None
    entry = view(entry)
    found = pointed_cause(c, entry)
    return answer(found[0] if found else entry.causes[0], entry)


def confidence_word(c: Candidate) -> str:
    """`certain`, `possible` or `benign`: the word the JSON and the browser page carry."""
    return "benign" if c.benign else "possible" if c.possible else "certain"


def confidence(c: Candidate) -> str:
    """The confidence word with what it means."""
    word = confidence_word(c)
    return f"{word} ({CONFIDENCE[word]})"


def groups(c: Candidate) -> list[Group]:
    """The candidate's evidence by fingerprint, in order of first appearance."""
    found: dict[tuple[str, bool], list[Evidence]] = {}
    for ev in c.evidence:
        found.setdefault((ev.fingerprint, ev.collateral), []).append(ev)
    return [
        Group(
            fp,
            lines[0].indicates,
            collateral,
            tuple(sorted({e.rank for e in lines if e.rank is not None})),
            len(lines),
            lines[0],
        )
        for (fp, collateral), lines in found.items()
    ]


def ranks_text(ranks: Iterable[int]) -> str:
    """`0,1,3-7`: ranks with runs collapsed."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(ranks):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(_run(run))
        run = [r]
    if run:
        out.append(_run(run))
    return ",".join(out)


def _run(run: list[int]) -> str:
    return (
        str(run[0])
        if len(run) == 1
        else f"{run[0]}-{run[-1]}"
        if len(run) > 2
        else f"{run[0]},{run[1]}"
    )


def shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` made printable (a log's escape sequences must not drive the reader's terminal:
    a title change, a cleared screen, a clipboard write) and cut to `limit` characters with a
    visible `…`."""
    text = text.translate(CONTROLS)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: C0 and C1 control characters and DEL, shown as `\xNN` instead of being sent to a terminal;
#: and the bidirectional overrides, embeddings and isolates (and the marks), shown as `\uNNNN`:
#: they reorder what the reader sees (an evidence line displayed as another).
CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} | {
    c: f"\\u{c:04x}"
    for c in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
}


def inert(text: str) -> str:
    """Markdown text with no live `@mention` (a team pinged from a log line) or autolink
    (`https://…`, `www.…`, `a@b.example`): a word joiner, which renders as nothing, after each
    `@`, before each `://` and in `www.`, as GitHub and Slack read them. Links, images and HTML
    need `[`, `<`, which the callers escape."""
    text = text.replace("@", "@\u2060").replace("://", "\u2060://")
    return _WWW.sub(lambda m: m[0][:3] + "\u2060.", text)


_WWW = re.compile(r"www\.", re.IGNORECASE)


def group_ranks(g: Group) -> str:
    """`ranks 0,1,3-7`: the ranks that printed a group's lines (`rank ?` when none said)."""
    if not g.ranks:
        return "rank ?"
    return f"rank{'s' * (len(g.ranks) > 1)} {ranks_text(g.ranks)}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the first lines of every format say, computed once for text and Markdown."""

    best: Candidate
    answer: Answer | None
    first: str | None
    """`rank 2 at job.log:14 (how it was decided)`, when known."""
    link: str


def verdict(result: Diagnosis, entries: Entries, base_url: str | None) -> Verdict:
    """The top candidate with its likely cause, first fix, first failure and link."""
    best = result.matches[0]
    return Verdict(
        best, likely(best, entries.get(best.id)), _first(result), read_link(best.id, base_url)
    )


def read_link(entry_id: str, base_url: str | None) -> str:
    """Where the reader of a terminal or a paste reads the entry: the published site when a base
    URL is configured, else `nanopedia show ID` (a path into a checkout leads nowhere)."""
    return entry_link(entry_id, base_url) if base_url else f"nanopedia show {entry_id}"


def _label(c: Candidate) -> str:
    return " (benign)" if c.benign else " (possible)" if c.possible else ""


def _first(result: Diagnosis) -> str | None:
    if result.initiating_rank is None and result.initiating is None:
        return None
    rank = result.initiating_rank if result.initiating_rank is not None else "unknown"
    where = f" at {result.initiating.file}:{result.initiating.line}" if result.initiating else ""
    return f"rank {rank}{where} ({result.initiating_reason})"


def fit_text(f: Fit) -> str:
    """A version the log shows, set against the affected range of a system."""
    where = "in" if f.affected else "outside"
    return (
        f"{f.package} {f.version} ({f.file}:{f.line}) is {where} the affected range of "
        f"{f.system}: {f.ranges}"
    )


def first_text(result: Diagnosis) -> list[str]:
    """The first failure as the error files or the Flight Recorder dumps decided it when no
    entry matched."""
    v = _first(result)
    return [f"first failure: {v}"] if v else []


def as_markdown(
    result: Diagnosis, entries: Entries, base_url: str | None, top: int, seen: Sequence[Seen] = ()
) -> str:
    """The same answer for a GitHub issue or a Slack thread."""
    extra = _md_structured(result, base_url)
    if not result.matches:
        said = _first(result)
        first = [f"- **First failure:** {_md(said)}"] if said else []
        return "\n".join(["**nanopedia:** no known failure matched", *first, *extra])
    v = verdict(result, entries, base_url)
    title = f"[{_md(v.best.title)}]({v.link})" if base_url else _md(v.best.title)
    read = "" if base_url else f"; read it with `{v.link}`"
    out = [f"**Verdict: {title}** (`{v.best.id}`{read}), {confidence(v.best)}", ""]
    if v.first:
        out.append(f"- **First failure:** {_md(v.first)}")
    if result.silent_ranks:
        out.append(
            f"- **Silent:** ranks {ranks_text(result.silent_ranks)} (no error in their logs)"
        )
    if v.answer:
        out.append(f"- **Likely cause:** {_md(v.answer.cause, code=True)}")
        out.append(f"- **What to do:** `{v.answer.action}` (failure domain: `{v.answer.domain}`)")
        out.append(f"- **First fix:** {_md(v.answer.fix or NO_FIX, code=True)}")
    best = entries.get(v.best.id)
    for f in fits(seen, best) if best else ():
        out.append(f"- **Version:** {_md(fit_text(f))}")
    out += ["", "| candidate | score | evidence |", "|---|---|---|"]
    for c in result.matches[:top]:
        lines = "<br>".join(
            f"{group_ranks(g)}: `{_code(shorten(g.first.text, 100))}`"
            + (" (collateral)" if g.collateral else "")
            for g in groups(c)[:3]
        )
        out.append(f"| `{c.id}`{_label(c)} | {c.score:g} | {lines} |")
    return "\n".join(out + extra)


def _md_structured(result: Diagnosis, base_url: str | None) -> list[str]:
    """The error files read (earliest first) and the Flight Recorder's findings, as Markdown
    lists."""
    out: list[str] = []
    if result.error_files:
        out += ["", "**torchelastic error files** (earliest first):", ""]
        for e in sorted(
            result.error_files, key=lambda e: (e.timestamp is None, e.timestamp or 0, e.rank or 0)
        ):
            rank = "?" if e.rank is None else e.rank
            out.append(
                f"- rank {rank} at {_md(e.when or 'an unknown time')}: "
                f"`{_code(shorten(e.message, 200))}`"
            )
    report = result.flight_report
    if report is not None:
        out += ["", f"**Flight Recorder** ({len(report.files)} dumps):", ""]
        out += [
            f"- {_md(f.text)}: [`{f.entry}`]({entry_link(f.entry, base_url)})"
            for f in report.findings
        ] or ["- every rank entered the same collectives"]
        if report.missing:
            out.append(f"- no dump from ranks {ranks_text(report.missing)}")
    return out


def _md(text: str, code: bool = False) -> str:
    """Plain text made safe in Markdown prose (no markup, links or HTML from a log); with
    `code`, the code spans of an entry's titles are kept."""
    for ch in "\\*_[]<>|#~" + ("" if code else "`"):
        text = text.replace(ch, "\\" + ch)
    return inert(text.translate(CONTROLS))


def _code(text: str) -> str:
    """Text inside a `code span` of a table cell: no backticks or pipes can end it."""
    return text.replace("`", "'").replace("|", "¦")


def with_answers(
    result: Diagnosis,
    entries: Entries,
    base_url: str | None,
    top: int | None,
    seen: Sequence[Seen] = (),
) -> dict[str, Any]:
    """`contract.as_json` with each candidate's likely cause, first fix, confidence and the
    versions the log shows set against its affected ranges."""
    out = as_json(result, base_url, top)
    out["versions"] = [s._asdict() for s in seen]
    for row, c in zip(out["matches"], result.matches, strict=False):
        found = likely(c, entries.get(c.id))
        row["cause"], row["fix"] = (found.cause, found.fix) if found else (None, None)
        row["domain"], row["action"] = (found.domain, found.action) if found else (None, None)
        row["confidence"] = confidence_word(c)
        entry = entries.get(c.id)
        row["versions"] = [f._asdict() for f in fits(seen, entry)] if entry else []
    return out
