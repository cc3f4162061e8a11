"""Corpus-wide facts: unique ids and aliases, cross-references, back links and the tag index.

Linking reads one small `Node` per entry (what the entry says about other entries, with the file
positions to report at), never the entries themselves: a build that changed one file links the
nodes it kept from the last build with the one it computed, without loading the rest.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from nanopedia.content.links import doc_line, entry_target, links
from nanopedia.content.load import Document, dotted
from nanopedia.content.validate import Source, markdown_fields, text_line
from nanopedia.errors import Problem, problem, suggest
from nanopedia.model import Entry, Tag

Position = tuple[int, int]


class Node(NamedTuple):
    """One entry as the corpus sees it: its names, what it links to, and where each is written.

    A named tuple, and positions in one flat tuple: the build state pickles one per entry, and
    at 10,000 entries slotted classes and a dict of positions tripled its load time (named
    tuples load in a third less time than plain dataclasses)."""

    id: str
    path: str
    """The entry file, as shown in messages."""
    aliases: tuple[str, ...]
    related: tuple[str, ...]
    tags: tuple[str, ...]
    causes: tuple[str, ...]
    """Root-cause ids (entries sharing one are suggested together)."""
    entry_links: tuple[tuple[str, int, int, str], ...]
    """Every `entry:` link in the entry's markdown: (target id, line, column, field name)."""
    positions: tuple[int, ...]
    """Line and column of the id, then of each alias, related id and tag, in that order."""

    def at(self, field: str, index: int = 0) -> Position:
        """Where the id (`at("id")`) or one alias, related id or tag is written."""
        offset = {
            "id": 0,
            "aliases": 1,
            "related": 1 + len(self.aliases),
            "tags": 1 + len(self.aliases) + len(self.related),
        }[field] + index
        return self.positions[2 * offset], self.positions[2 * offset + 1]

    @property
    def linking(self) -> tuple[object, ...]:
        """Everything linking reads but the positions: equal means the same links."""
        return (
            self.id,
            self.aliases,
            self.related,
            self.tags,
            self.causes,
            tuple(link[0] for link in self.entry_links),
        )

    @property
    def targets(self) -> set[str]:
        """Every entry this one links to."""
        return {*self.related, *(link[0] for link in self.entry_links)}


def node(src: Source) -> Node:
    """The `Node` of a validated entry."""
    e = src.entry
    found: list[tuple[str, int, int, str]] = []
    for where, text in markdown_fields(e):
        for link in links(text):
            target = entry_target(link.href)
            if target is not None:
                found.append((target, *text_line(src, where, link.line), dotted(where)))
    positions = [*src.at("id")]
    for name, values in (("aliases", e.aliases), ("related", e.related), ("tags", e.tags)):
        for i in range(len(values)):
            positions += src.at(name, i)
    return Node(
        e.id,
        src.doc.path,
        tuple(e.aliases),
        tuple(e.related),
        tuple(e.tags),
        tuple(c.id for c in e.root_causes),
        tuple(found),
        tuple(positions),
    )


@dataclass(frozen=True, slots=True)
class Links:
    """Everything known about the corpus after linking; ordered by id for deterministic output."""

    nodes: dict[str, Node]
    """Entry id to its node, sorted by id."""
    tags: dict[str, Tag]
    """The tag registry, sorted by slug."""
    aliases: dict[str, str]
    """Former id to current id."""
    backlinks: dict[str, tuple[str, ...]]
    """Entry id to the sorted ids of entries that link to it (`related` or in-text)."""
    by_tag: dict[str, tuple[str, ...]]
    """Tag to the sorted ids of entries that carry it (every registered tag is a key)."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """A linked corpus with every entry loaded, for the commands that read whole entries."""

    links: Links
    sources: tuple[Source, ...]
    """Every valid entry with its document, sorted by id."""
    by_id: dict[str, Source]

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(s.entry for s in self.sources)

    @property
    def tags(self) -> dict[str, Tag]:
        return self.links.tags

    @property
    def backlinks(self) -> dict[str, tuple[str, ...]]:
        return self.links.backlinks

    @property
    def by_tag(self) -> dict[str, tuple[str, ...]]:
        return self.links.by_tag


def fold(ident: str) -> str:
    """The form two ids are compared in: NFC, then case-folded."""
    if ident.isascii():  # the usual case, and a tenth of the time
        return ident.lower()
    return unicodedata.normalize("NFC", ident).casefold()


def link_entries(
    sources: Iterable[Source],
    tags: dict[str, Tag],
    tags_doc: Document | None,
    invalid: frozenset[str] = frozenset(),
) -> tuple[Catalog, list[Problem]]:
    """Link loaded entries (`link` on their nodes) and keep the entries beside the result."""
    ordered = sorted(sources, key=lambda s: s.entry.id)
    linked, found = link([node(s) for s in ordered], tags, tags_doc, invalid)
    return Catalog(linked, tuple(ordered), {s.entry.id: s for s in ordered}), found


def link(
    nodes: Iterable[Node],
    tags: dict[str, Tag],
    tags_doc: Document | None,
    invalid: frozenset[str] = frozenset(),
) -> tuple[Links, list[Problem]]:
    """Resolve cross-references across the corpus.

    `invalid` holds the ids (file names) of entries that exist but failed validation: links to
    them are not reported again, and neither are unused tags, which only a corpus that loaded
    completely (and spelled every tag right) can tell.
    """
    ordered = sorted(nodes, key=lambda n: n.id)
    found: list[Problem] = []
    owners: dict[str, tuple[str, Node]] = {}
    for n in ordered:
        names: list[tuple[str, tuple[str | int, ...]]] = [(n.id, ("id",))]
        if n.aliases:
            names += [(a, ("aliases", i)) for i, a in enumerate(n.aliases)]
        for name, where in names:
            key = fold(name)
            if key in owners:
                _, first = owners[key]
                line, col = first.at("id")
                what = "alias" if where[0] == "aliases" else "id"
                found.append(
                    problem(
                        n.path,
                        "E020",
                        f"{what} '{name}' is already used by entry '{first.id}'",
                        f"see {first.path}:{line}:{col}; ids and aliases must be "
                        "unique (compared case-insensitively)",
                        at=n.at(str(where[0]), int(where[1]) if len(where) > 1 else 0),
                    )
                )
            else:
                owners[key] = (name, n)
    by_id = {n.id: n for n in ordered}
    aliases = {a: n.id for n in ordered for a in n.aliases if fold(a) != fold(n.id)}
    known = sorted(by_id)

    def target_problem(target: str, what: str) -> tuple[str, str]:
        if target in aliases:
            return (f"{what} '{target}' is a former id", f"link the current id '{aliases[target]}'")
        return (
            f"{what} '{target}' does not exist",
            suggest(target, known) or "check the spelling against entries/*.yaml",
        )

    back: dict[str, set[str]] = {i: set() for i in by_id}
    for n in ordered:
        for i, rel in enumerate(n.related):
            if rel == n.id:
                found.append(
                    problem(
                        n.path,
                        "E021",
                        f"entry '{n.id}' lists itself as related",
                        "remove it",
                        at=n.at("related", i),
                    )
                )
            elif rel in by_id:
                back[rel].add(n.id)
            elif rel in invalid:
                continue
            else:
                msg, hint = target_problem(rel, "related entry")
                found.append(problem(n.path, "E021", msg, hint, at=n.at("related", i)))
        for target, line, col, field in n.entry_links:
            if target in by_id:
                if target != n.id:
                    back[target].add(n.id)
            elif target not in invalid:
                msg, hint = target_problem(target, f"link in '{field}' to entry")
                found.append(problem(n.path, "E025", msg, hint, at=(line, col)))
        for i, tag in enumerate(n.tags):
            if tag not in tags:
                found.append(
                    problem(
                        n.path,
                        "E023",
                        f"unknown tag '{tag}'",
                        suggest(tag, tags)
                        or "add it to entries/tags.yaml with a title and description",
                        at=n.at("tags", i),
                    )
                )
    if tags_doc is not None:  # the registry's descriptions link to entries too
        for slug in sorted(tags):
            at: tuple[str | int, ...] = (slug, "description")
            for one in links(tags[slug].description):
                goal = entry_target(one.href)
                if goal is None or goal in by_id or goal in invalid:
                    continue
                msg, hint = target_problem(goal, f"link in '{dotted(at)}' to entry")
                line, col = doc_line(tags_doc, at, one.line)
                found.append(problem(tags_doc.path, "E025", msg, hint, at=(line, col)))
    members: dict[str, list[str]] = {t: [] for t in sorted(tags)}
    for n in ordered:
        for tag in dict.fromkeys(n.tags):
            if tag in members:
                members[tag].append(n.id)
    by_tag = {t: tuple(ids) for t, ids in members.items()}
    unknown_tags = any(p.code == "E023" for p in found)
    if not invalid and not unknown_tags and tags_doc is not None:
        for tag, users in by_tag.items():
            if not users:
                found.append(
                    problem(
                        tags_doc.path,
                        "E024",
                        f"tag '{tag}' is used by no entry",
                        "remove it from the registry or tag an entry with it",
                        at=tags_doc.position((tag,), key=True),
                    )
                )
    linked = Links(
        nodes=by_id,
        tags={t: tags[t] for t in sorted(tags)},
        aliases=dict(sorted(aliases.items())),
        backlinks={i: tuple(sorted(b)) if b else () for i, b in back.items()},  # in id order
        by_tag=by_tag,
    )
    return linked, found
