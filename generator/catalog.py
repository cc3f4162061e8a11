"""Corpus-wide facts: unique ids and aliases, cross-references, back links and the tag index.

Takes validated entries and returns a `Catalog` (plain, immutable data every later stage reads)
plus the problems only the whole corpus can reveal.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import Problem, problem, suggest
from .load import Document
from .markdown import entry_target, links
from .model import Entry, Tag
from .validate import Source, dotted, markdown_fields, text_line


@dataclass(frozen=True, slots=True)
class Catalog:
    """Everything known about the corpus after linking; ordered by id for deterministic output."""

    sources: tuple[Source, ...]
    """Every valid entry with its document, sorted by id."""
    tags: dict[str, Tag]
    """The tag registry, sorted by slug."""
    by_id: dict[str, Source]
    """Entry id to its source."""
    aliases: dict[str, str]
    """Former id to current id."""
    backlinks: dict[str, tuple[str, ...]]
    """Entry id to the sorted ids of entries that link to it (`related` or in-text)."""
    by_tag: dict[str, tuple[str, ...]]
    """Tag to the sorted ids of entries that carry it (every registered tag is a key)."""

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(s.entry for s in self.sources)


def fold(ident: str) -> str:
    """The form two ids are compared in: NFC, then case-folded."""
    return unicodedata.normalize("NFC", ident).casefold()


def entry_links(src: Source) -> Iterable[tuple[str, tuple[int, int], str]]:
    """Every `entry:` link in an entry's markdown: (target id, file position, field name)."""
    for where, text in markdown_fields(src.entry):
        for link in links(text):
            target = entry_target(link.href)
            if target is not None:
                yield target, text_line(src, where, link.line), dotted(where)


def link(
    sources: Iterable[Source],
    tags: dict[str, Tag],
    tags_doc: Document | None,
    invalid: frozenset[str] = frozenset(),
) -> tuple[Catalog, list[Problem]]:
    """Resolve cross-references across the corpus.

    `invalid` holds the ids (file names) of entries that exist but failed validation: links to
    them are not reported again, and neither are unused tags, which only a corpus that loaded
    completely (and spelled every tag right) can tell.
    """
    ordered = sorted(sources, key=lambda s: s.entry.id)
    found: list[Problem] = []
    owners: dict[str, tuple[str, Source]] = {}
    for src in ordered:
        names = [(src.entry.id, ("id",))] + [
            (a, ("aliases", i)) for i, a in enumerate(src.entry.aliases)
        ]
        for name, where in names:
            key = fold(name)
            if key in owners:
                _, first = owners[key]
                line, col = first.at("id")
                what = "alias" if where[0] == "aliases" else "id"
                found.append(
                    problem(
                        src.doc.path,
                        *src.at(*where),
                        "E020",
                        f"{what} '{name}' is already used by entry '{first.entry.id}'",
                        f"see {first.doc.path}:{line}:{col}; ids and aliases must be "
                        "unique (compared case-insensitively)",
                    )
                )
            else:
                owners[key] = (name, src)
    by_id = {s.entry.id: s for s in ordered}
    aliases = {
        a: s.entry.id for s in ordered for a in s.entry.aliases if fold(a) != fold(s.entry.id)
    }
    known = sorted(by_id)

    def target_problem(target: str, what: str) -> tuple[str, str]:
        if target in aliases:
            return (f"{what} '{target}' is a former id", f"link the current id '{aliases[target]}'")
        return (
            f"{what} '{target}' does not exist",
            suggest(target, known) or "check the spelling against entries/*.yaml",
        )

    back: dict[str, set[str]] = {i: set() for i in by_id}
    for src in ordered:
        e = src.entry
        for i, rel in enumerate(e.related):
            if rel == e.id:
                found.append(
                    problem(
                        src.doc.path,
                        *src.at("related", i),
                        "E021",
                        f"entry '{e.id}' lists itself as related",
                        "remove it",
                    )
                )
            elif rel in by_id:
                back[rel].add(e.id)
            elif rel in invalid:
                continue
            else:
                msg, hint = target_problem(rel, "related entry")
                found.append(problem(src.doc.path, *src.at("related", i), "E021", msg, hint))
        for target, (line, col), field in entry_links(src):
            if target in by_id:
                if target != e.id:
                    back[target].add(e.id)
            elif target not in invalid:
                msg, hint = target_problem(target, f"link in '{field}' to entry")
                found.append(problem(src.doc.path, line, col, "E025", msg, hint))
        for i, tag in enumerate(e.tags):
            if tag not in tags:
                found.append(
                    problem(
                        src.doc.path,
                        *src.at("tags", i),
                        "E023",
                        f"unknown tag '{tag}'",
                        suggest(tag, tags)
                        or "add it to entries/tags.yaml with a title and description",
                    )
                )
    members: dict[str, list[str]] = {t: [] for t in sorted(tags)}
    for src in ordered:
        for tag in dict.fromkeys(src.entry.tags):
            if tag in members:
                members[tag].append(src.entry.id)
    by_tag = {t: tuple(ids) for t, ids in members.items()}
    unknown_tags = any(p.code == "E023" for p in found)
    if not invalid and not unknown_tags and tags_doc is not None:
        for tag, users in by_tag.items():
            if not users:
                found.append(
                    problem(
                        tags_doc.path,
                        *tags_doc.position((tag,), key=True),
                        "E024",
                        f"tag '{tag}' is used by no entry",
                        "remove it from the registry or tag an entry with it",
                    )
                )
    catalog = Catalog(
        sources=tuple(ordered),
        tags={t: tags[t] for t in sorted(tags)},
        by_id=by_id,
        aliases=dict(sorted(aliases.items())),
        backlinks={i: tuple(sorted(b)) for i, b in sorted(back.items())},
        by_tag=by_tag,
    )
    return catalog, found
