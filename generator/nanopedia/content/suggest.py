"""'Also tagged': the few entries an entry page suggests, from shared tags and root causes."""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import combinations, islice

from nanopedia.content.catalog import Links, Node

SUGGESTIONS = 5
COMMON_CAUSE = 50
"""A root-cause id shared by more entries than this (`cause-1`) says nothing about similarity."""


class Suggestions:
    """'Also tagged': entries sharing the most tags and root causes, ties broken by id."""

    def __init__(self, links: Links) -> None:
        causes: dict[str, list[str]] = {}
        for n in links.nodes.values():
            for cause in n.causes:
                causes.setdefault(cause, []).append(n.id)
        self._by_tag = links.by_tag
        self._backlinks = links.backlinks
        self._members = causes
        self._causes = {c: ids for c, ids in causes.items() if 1 < len(ids) <= COMMON_CAUSE}
        self._sets: dict[tuple[str, str], frozenset[str]] = {}

    def also(self, node: Node) -> tuple[str, ...]:
        """The suggestions shown on an entry's page: none it links to or is linked from."""
        back = self._backlinks.get(node.id, ())
        return tuple(self.of(node, {node.id, *node.related, *back}))

    def sharing(self, node: Node) -> set[str]:
        """The entries whose suggestions can change when this entry's tags or causes do: the
        members of its tag lists and of its cause lists that count (or are one short)."""
        found: set[str] = set()
        for tag in node.tags:
            found.update(self._by_tag.get(tag, ()))
        for cause in node.causes:
            members = self._members.get(cause, ())
            if len(members) <= COMMON_CAUSE + 1:
                found.update(members)
        return found

    def of(self, node: Node, exclude: set[str]) -> list[str]:
        """The entries in most of this entry's tag and cause lists, then the first ids of them.

        Scores are counted only for the few entries in two lists or more; the rest score one
        and come in id order, which each list (sorted by id) already has (at 10,000 entries,
        counting every member of every list took 10 s of a build)."""
        named = [(("tag", t), self._by_tag.get(t, ())) for t in node.tags]
        named += [(("cause", c), tuple(self._causes.get(c, ()))) for c in node.causes]
        lists = [ids for _, ids in named]
        sets = [self._set(name, ids) for name, ids in named]
        if any(len(ids) != len(members) for ids, members in zip(lists, sets, strict=True)):
            return self._counted(lists, exclude)
        several = set().union(*(a & b for a, b in combinations(sets, 2))) - exclude
        ranked = [
            i
            for _, i in heapq.nsmallest(
                SUGGESTIONS, ((-sum(i in members for members in sets), i) for i in several)
            )
        ]
        once = (i for i in heapq.merge(*lists) if i not in several and i not in exclude)
        return ranked + list(islice(once, SUGGESTIONS - len(ranked)))

    def _set(self, name: tuple[str, str], ids: tuple[str, ...]) -> frozenset[str]:
        found = self._sets.get(name)
        if found is None:
            found = self._sets[name] = frozenset(ids)
        return found

    @staticmethod
    def _counted(lists: list[tuple[str, ...]], exclude: set[str]) -> list[str]:
        """The plain count, for lists that name an entry twice."""
        score: Counter[str] = Counter()
        for ids in lists:
            score.update(ids)
        candidates = ((-n, i) for i, n in score.items() if i not in exclude)
        return [i for _, i in heapq.nsmallest(SUGGESTIONS, candidates)]
