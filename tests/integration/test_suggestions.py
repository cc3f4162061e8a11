"""'Also tagged' ranks exactly as a full count of shared tags and causes would."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nanopedia.content.suggest import COMMON_CAUSE, SUGGESTIONS, Suggestions

IDS = [f"e{i:02d}" for i in range(30)]


def _corpus(draw: Any) -> tuple[Any, list[Any]]:
    entries = []
    for ident in draw(st.lists(st.sampled_from(IDS), min_size=1, unique=True)):
        tags = draw(st.lists(st.sampled_from("abcdef"), max_size=4, unique=True))
        causes = draw(st.lists(st.sampled_from("xyz"), max_size=3, unique=True))
        entries.append(SimpleNamespace(id=ident, tags=tags, causes=causes))
    entries.sort(key=lambda e: e.id)
    by_tag = {t: tuple(e.id for e in entries if t in e.tags) for t in "abcdef"}
    catalog = SimpleNamespace(nodes={e.id: e for e in entries}, by_tag=by_tag, backlinks={})
    return catalog, entries


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_same_ranking_as_a_full_count(data: st.DataObject) -> None:
    catalog, entries = _corpus(data.draw)
    suggestions = Suggestions(catalog)
    for entry in entries:
        exclude = {entry.id, *data.draw(st.lists(st.sampled_from(IDS), max_size=3))}
        assert suggestions.of(entry, exclude) == _full_count(entry, entries, exclude)


def _full_count(entry: Any, entries: list[Any], exclude: set[str]) -> list[str]:
    """The ranking by definition: one point per tag list and per cause list (a cause shared by
    two to COMMON_CAUSE entries) an entry is in, most points first, then by id."""
    score: Counter[str] = Counter()
    for other in entries:
        if other.id not in exclude:
            score[other.id] = len(set(entry.tags) & set(other.tags))
            for cause in set(entry.causes) & set(other.causes):
                sharing = sum(cause in e.causes for e in entries)
                score[other.id] += 1 < sharing <= COMMON_CAUSE
    return [i for n, i in sorted((-n, i) for i, n in score.items() if n)][:SUGGESTIONS]
