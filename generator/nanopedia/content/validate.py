"""Per-file validation: a parsed entry or tag registry to typed models, with every problem located.

`nanopedia/content/schema.py` reports what the model refuses; this module adds the checks a type
cannot express (id equals file name, causes that exist, python that parses, link schemes,
fingerprints that match their examples, names Windows cannot hold) and refuses markdown too
costly to parse before any later stage parses it again.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from nanopedia.content import apicheck, fingerprints, portable
from nanopedia.content.links import doc_line, label_problem, link_problems
from nanopedia.content.load import Document, Path_
from nanopedia.content.schema import placeholder_problems, schema_problems, slugify
from nanopedia.errors import Location, Problem, problem, suggest
from nanopedia.model import MAX_ID, MAX_SCRIPT_LINES, SLUG_PATTERN, Entry, Tag


@dataclass(frozen=True, slots=True)
class Source:
    """A validated entry with the document it came from, so later stages can locate problems."""

    entry: Entry
    doc: Document

    def at(self, *path: str | int, key: bool = False) -> tuple[int, int]:
        return self.doc.position(path, key=key)


_SLUG = re.compile(SLUG_PATTERN)

RESERVED_NAMES = frozenset(
    {"con", "prn", "aux", "nul", *(f"{d}{n}" for d in ("com", "lpt") for n in range(10))}
)
"""File names Windows reserves whatever their extension (`con.html` too): an entry id, alias or
tag with one of them is a page no Windows checkout, unzip or browser download can hold."""


def reserved_problem(
    doc: Document, where: Path_, name: str, what: str, key: bool = False
) -> Problem | None:
    """The refusal of an id, alias or tag that Windows reserves as a file name, or None."""
    if name.lower() not in RESERVED_NAMES:
        return None
    return problem(
        doc.path,
        "E013",
        f"'{name}' cannot be {what}: Windows reserves the file name '{name}' (any extension)",
        f"add a word, e.g. '{name}-failure'; con, prn, aux, nul, com0-com9 and lpt0-lpt9 "
        "cannot be file names on Windows",
        at=doc.position(where, key=key),
    )


def check_entry(doc: Document, stem: str) -> tuple[Source | None, list[Problem]]:
    """Validate one parsed entry file; `stem` is its file name without `.yaml`."""
    if not isinstance(doc.data, dict):
        return None, [
            problem(
                doc.path,
                "E012",
                "an entry must be a YAML mapping",
                "start with 'id: <file-name>'",
                at=(1, 1),
            )
        ]
    stubs = placeholder_problems(doc)
    entry, found = schema_problems(doc, Entry, skip=frozenset(stubs))
    found = [*stubs.values(), *found]
    if entry is None:
        return None, found
    costly = {
        where: p
        for where, text in markdown_fields(entry)
        if (p := label_problem(doc, where, text)) is not None
    }
    source = Source(entry, doc)
    found.extend(costly.values())
    found.extend(_entry_rules(source, stem, frozenset(costly)))
    # Every later stage parses the markdown again (links, pages, search): not such text.
    return (None if costly else source), found


def _entry_rules(src: Source, stem: str, costly: frozenset[Path_]) -> Iterator[Problem]:
    """The rules a type cannot express, each located at the value it is about; the markdown
    fields in `costly` are not parsed."""
    e, path, at = src.entry, src.doc.path, src.at

    for where, name, what in (
        (("id",), e.id, "an id"),
        *((("aliases", i), a, "an alias") for i, a in enumerate(e.aliases)),
    ):
        reserved = reserved_problem(src.doc, where, name, what)
        if reserved is not None:
            yield reserved
    if e.id != stem:
        yield problem(
            path,
            "E014",
            f"id '{e.id}' does not match the file name '{stem}.yaml'",
            f"rename the file to '{e.id}.yaml' or set 'id: {stem}'",
            at=at("id"),
        )
    causes = [c.id for c in e.root_causes]
    yield from _duplicates(path, causes, lambda i: at("root_causes", i, "id"), "root cause")
    yield from _duplicates(
        path, [f.id for f in e.fingerprints], lambda i: at("fingerprints", i, "id"), "fingerprint"
    )
    for i, symptom in enumerate(e.symptoms):
        if symptom.cause not in causes:
            yield problem(
                path,
                "E022",
                f"symptom points to unknown root cause '{symptom.cause}'",
                suggest(symptom.cause, causes) or f"root causes: {', '.join(causes)}",
                at=at("symptoms", i, "cause"),
            )
    for i, step in enumerate(e.fix):
        for j, cause in enumerate(step.causes):
            if cause not in causes:
                yield problem(
                    path,
                    "E022",
                    f"fix step points to unknown root cause '{cause}'",
                    suggest(cause, causes) or f"root causes: {', '.join(causes)}",
                    at=at("fix", i, "causes", j),
                )
    for i in range(len(e.affected_systems)):
        yield from _range_problems(src, i)
    for i, ex in enumerate(e.code_examples):
        if ex.language == "python":
            yield from _python_problems(src, i)
    for where, text in markdown_fields(e):
        if where not in costly:
            yield from link_problems(src.doc, where, text)
    for i in range(len(e.fingerprints)):
        yield from _fingerprint_problems(src, i, causes)
    yield from _duplicates(path, [r.id for r in e.repro], lambda i: at("repro", i, "id"), "repro")
    for i in range(len(e.repro)):
        yield from _repro_problems(src, i)


def _range_problems(src: Source, i: int) -> Iterator[Problem]:
    """A package's affected ranges are there, parse as PEP 440 and run forwards; ranges without
    a package say nothing a program could test."""
    system, path = src.entry.affected_systems[i], src.doc.path
    if system.package is None:
        if system.affected:
            yield problem(
                path,
                "E028",
                "'affected' ranges need the 'package' they count",
                "add 'package: <PyPI name>' (or nccl, cuda, nvidia-driver, ...)",
                at=src.at("affected_systems", i, "affected"),
            )
        return
    if not system.affected:
        yield problem(
            path,
            "E028",
            f"package '{system.package}' has no 'affected' ranges",
            "add 'affected: [{introduced: \"0\"}]' when every release has it",
            at=src.at("affected_systems", i, "package"),
        )
    for j, span in enumerate(system.affected):
        bounds = []
        for side in ("introduced", "fixed"):
            text = getattr(span, side)
            if text is None:
                continue
            try:
                bounds.append(Version(text))
            except InvalidVersion:
                yield problem(
                    path,
                    "E028",
                    f"'{text}' is not a version a program can compare",
                    "write a PEP 440 version such as 2.6.0, 535.104.05 or 0",
                    at=src.at("affected_systems", i, "affected", j, side),
                )
        if len(bounds) == 2 and bounds[1] <= bounds[0]:
            yield problem(
                path,
                "E028",
                f"range ends at {span.fixed}, not after it starts at {span.introduced}",
                "'fixed' is the first release without the failure",
                at=src.at("affected_systems", i, "affected", j, "fixed"),
            )


def _repro_problems(src: Source, i: int) -> Iterator[Problem]:
    """A repro's scripts parse and stay short, and it names fingerprints the entry has."""
    repro, path = src.entry.repro[i], src.doc.path
    known = [f.id for f in src.entry.fingerprints]
    for j, name in enumerate(repro.shows):
        if name not in known:
            yield problem(
                path,
                "E027",
                f"repro '{repro.id}' names unknown fingerprint '{name}'",
                suggest(name, known)
                or (
                    f"fingerprints: {', '.join(known)}"
                    if known
                    else "this entry has no fingerprints yet"
                ),
                at=src.at("repro", i, "shows", j),
            )
    if repro.expect == "warning" and not repro.shows:
        yield problem(
            path,
            "E013",
            f"repro '{repro.id}' expects a warning but names no fingerprint in 'shows'",
            "name the fingerprints of the warning the broken run prints",
            at=src.at("repro", i, "expect"),
        )
    for side in ("broken", "fixed"):
        code = getattr(repro, side)
        where = ("repro", i, side)
        lines = code.count("\n") + (not code.endswith("\n"))
        if lines > MAX_SCRIPT_LINES:
            yield problem(
                path,
                "E013",
                f"repro '{repro.id}': the {side} script has {lines} lines; at most "
                f"{MAX_SCRIPT_LINES}",
                "a repro shows one failure: cut everything the failure does not need",
                at=src.at(*where),
            )
        yield from _parse_problems(src, where, code, f"repro '{repro.id}' {side} script")


def review_problems(
    sources: Iterable[Source], records: Mapping[str, str | None], folder: str
) -> list[Problem]:
    """An entry's `reviewed` date is its review record's (`reviews/<id>.md`, `- Date:` line);
    a record whose entry does not show it is a warning. `folder` is how the records' folder is
    shown in messages."""
    found: list[Problem] = []
    shown: set[str] = set()
    for src in sources:
        e = src.entry
        if e.reviewed is None:
            continue
        shown.add(e.id)
        record = f"{folder}{e.id}.md"
        if e.id not in records:
            found.append(
                problem(
                    src.doc.path,
                    "E029",
                    f"'reviewed' names a review but {record} does not exist",
                    "the second engineer writes the record (CONTRIBUTING, reviews)",
                    at=src.at("reviewed"),
                )
            )
        elif records[e.id] != e.reviewed:
            dated = records[e.id] or "no '- Date: YYYY-MM-DD' line"
            found.append(
                problem(
                    src.doc.path,
                    "E029",
                    f"'reviewed: {e.reviewed}' differs from the date of {record} ({dated})",
                    "give the date of the record's '- Date:' line",
                    at=src.at("reviewed"),
                )
            )
    for ident in sorted(set(records) - shown):
        found.append(
            Problem(
                Location(f"{folder}{ident}.md", 1, 1),
                "E029",
                f"review record of '{ident}' is not shown: its entry has no "
                "'reviewed' date (or does not exist)",
                f"add 'reviewed: {records[ident] or 'YYYY-MM-DD'}' to the entry",
                "warning",
            )
        )
    return found


def _duplicates(
    path: str, ids: list[str], where: Callable[[int], tuple[int, int]], what: str
) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, ident in enumerate(ids):
        if ident in seen:
            yield problem(
                path,
                "E026",
                f"duplicate {what} id '{ident}'",
                "ids must be unique within the entry",
                at=where(i),
            )
        seen.add(ident)


def markdown_fields(e: Entry) -> Iterator[tuple[Path_, str]]:
    """Every markdown field of an entry with its path, for link checks and rendering."""
    yield ("summary",), e.summary
    yield ("mechanism",), e.mechanism
    for i, c in enumerate(e.root_causes):
        yield ("root_causes", i, "explanation"), c.explanation
    for i, s in enumerate(e.symptoms):
        yield ("symptoms", i, "text"), s.text
    for i, a in enumerate(e.affected_systems):
        yield ("affected_systems", i, "name"), a.name
        if a.versions:
            yield ("affected_systems", i, "versions"), a.versions
        if a.notes:
            yield ("affected_systems", i, "notes"), a.notes
    for i, t in enumerate(e.confirm):
        yield ("confirm", i), t
    for i, f in enumerate(e.fix):
        yield ("fix", i, "detail"), f.detail
    for i, t in enumerate(e.prevention):
        yield ("prevention", i), t
    for i, x in enumerate(e.code_examples):
        yield ("code_examples", i, "why"), x.why
    for i, q in enumerate(e.faq):
        yield ("faq", i, "answer"), q.answer


def text_line(src: Source, where: Path_, offset: int) -> tuple[int, int]:
    """The file position of line `offset` inside a scalar of the entry (`doc_line` of its file)."""
    return doc_line(src.doc, where, offset)


def _python_problems(src: Source, i: int) -> Iterator[Problem]:
    code = src.entry.code_examples[i].code
    yield from _parse_problems(src, ("code_examples", i, "code"), code, "python example")


def _parse_problems(src: Source, where: Path_, code: str, what: str) -> Iterator[Problem]:
    if _parses(code):
        return
    try:
        apicheck.parse(code)
    except SyntaxError as err:
        line, _ = text_line(src, where, (err.lineno or 1) - 1)
        if err.lineno is None:  # the parser gave up (too deep): no line to name
            message = f"{what} does not parse: {err.msg}"
            hint = "write the expression with fewer nested operators, calls or brackets"
        else:
            message = f"{what} does not parse: {err.msg} (line {err.lineno} of the code)"
            hint = "fix the code or set 'language' to the right value"
        yield problem(src.doc.path, "E017", message, hint, at=(line, 1))


def _fingerprint_problems(src: Source, i: int, causes: list[str]) -> Iterator[Problem]:
    fp = src.entry.fingerprints[i]
    path = src.doc.path
    if fp.cause is not None and fp.cause not in causes:
        yield problem(
            path,
            "E022",
            f"fingerprint '{fp.id}' points to unknown root cause '{fp.cause}'",
            suggest(fp.cause, causes) or f"root causes: {', '.join(causes)}",
            at=src.at("fingerprints", i, "cause"),
        )
    reason = fingerprints.pattern_error(fp)
    if reason:
        yield problem(
            path,
            "E030",
            f"fingerprint '{fp.id}': {reason}",
            "see 'Fingerprints' in entries/README.md for the portable subset",
            at=src.at("fingerprints", i, "pattern"),
        )
        return
    slow = (
        portable.backtracking_error(fp.pattern)
        or portable.adjacent_repetition_error(fp.pattern)
        or fingerprints.slowness_error(fp)
    )
    if slow:
        yield problem(
            path,
            "E033",
            f"fingerprint '{fp.id}': {slow}",
            "anchor on the distinctive words of the message; avoid wide classes under counted "
            "or nested repetition",
            at=src.at("fingerprints", i, "pattern"),
        )
    regex = fingerprints.compile_pattern(fp)
    for j, line in enumerate(fp.must_match):
        if regex.search(line) is None:
            yield problem(
                path,
                "E031",
                f"fingerprint '{fp.id}' does not match this must_match line",
                "loosen the pattern or fix the example",
                at=src.at("fingerprints", i, "must_match", j),
            )
    for j, line in enumerate(fp.must_not_match):
        if regex.search(line) is not None:
            yield problem(
                path,
                "E032",
                f"fingerprint '{fp.id}' matches this must_not_match line",
                "make the pattern more specific",
                at=src.at("fingerprints", i, "must_not_match", j),
            )


def check_tags(doc: Document) -> tuple[dict[str, Tag], list[Problem]]:
    """Validate the tag registry (slug to {title, description}) one tag at a time.

    A bad tag is reported and left out; the others stay usable, so one typo in the registry does
    not turn every entry's tags into errors.
    """
    if not isinstance(doc.data, dict):
        return {}, [
            problem(doc.path, "E012", "the tag registry must be a mapping of tags", at=(1, 1))
        ]
    tags: dict[str, Tag] = {}
    found: list[Problem] = []
    for slug, body in doc.data.items():
        if not _SLUG.fullmatch(slug) or len(slug) > MAX_ID:
            found.append(
                problem(
                    doc.path,
                    "E013",
                    f"'{slug}' is not a valid tag name",
                    f"use lower-case words joined by hyphens, e.g. '{slugify(slug)}'",
                    at=doc.position((slug,), key=True),
                )
            )
            continue
        reserved = reserved_problem(doc, (slug,), slug, "a tag", key=True)
        if reserved is not None:
            found.append(reserved)
            continue
        tag, errs = schema_problems(doc, Tag, prefix=(slug,), data=body)
        found.extend(errs)
        if tag is None:
            continue
        where = (slug, "description")
        costly = label_problem(doc, where, tag.description)
        if costly is not None:  # left out, like a bad tag: its page would parse it again
            found.append(costly)
            continue
        found.extend(link_problems(doc, where, tag.description))
        tags[slug] = tag
    return tags, found


# Parsing line by line. `ast.parse` was a fifth of the per-entry work of a cold build, while code
# examples share most of their lines. A program parses when each of its lines is a whole statement
# or a block header, and the indentation is the one the grammar wants; each line is then parsed
# once per process. Anything else (a bracket or string across lines, `else:`, a decorator, a tab)
# is left to `ast.parse` of the whole code, which also words every error.
_LINES: dict[str, bool] = {}
"""Line without its indentation -> False: a statement on its own (`x = f(1)`, `if a: b`);
True: a block header (`def f(x):`, parses when an indented `pass` follows)."""
_LINES_MAX = 200_000
_MAX_LEVELS = 50
"""Deeper nesting is left to `ast.parse` (the tokenizer refuses 100 levels)."""


def _parses(code: str) -> bool:
    """True when `ast.parse(code)` certainly succeeds; False when unsure.

    Each line starts the tokenizer afresh: a line that parses on its own closes every bracket and
    string it opens and ends without a `\\`. Indentation is checked as the tokenizer does (spaces
    only): deeper exactly after a header, else back to an enclosing level, no header last.
    `__future__` is left out: `barry_as_FLUFL` changes how later lines parse."""
    if "\r" in code or "__future__" in code:
        return False
    levels = [0]
    header = False
    for line in code.split("\n"):
        body = line.lstrip(" ")
        if not body or body[0] == "#":
            continue  # blank lines and comments leave the indentation alone
        if body[0].isspace() or body[-1] == "\\":
            return False
        indent = len(line) - len(body)
        if header:
            if indent <= levels[-1] or len(levels) >= _MAX_LEVELS:
                return False
            levels.append(indent)
        else:
            while indent < levels[-1]:
                levels.pop()
            if indent != levels[-1]:
                return False
        kind = _LINES.get(body)
        if kind is None:
            kind = _line_kind(body)
            if kind is None:
                return False
            if len(_LINES) >= _LINES_MAX:
                _LINES.clear()
            _LINES[body] = kind
        header = kind
    return not header


def _line_kind(body: str) -> bool | None:
    """False for a statement, True for a block header, None for neither (or any doubt)."""
    for header, text in ((False, body), (True, body + "\n pass")):
        try:
            ast.parse(text)
        except Exception:  # whatever it is, the whole parse will meet it again
            continue
        return header
    return None
