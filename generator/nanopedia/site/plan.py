"""Every page of the site as a plan: its path, the view that lays it out, and the inputs it is
called with.

A view gets its inputs and the site's settings, nothing else, and a page's key is computed from
exactly those inputs (`fingerprint`), with the settings beside them: a page cannot show a thing
its key does not cover, so a rebuild never keeps a stale page. To make a page show something new,
add it to the page's inputs; the key follows. Entry pages are planned one by one (`entry`), since
the build keeps most of them without working out what they show; every other page is planned by
`pages`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar

from nanopedia.config import Config
from nanopedia.content.catalog import Links, Node
from nanopedia.model import Dates
from nanopedia.site import feed, views
from nanopedia.site.views import Card, Neighbours, Page

I = TypeVar("I")  # noqa: E741 (the inputs of a view)


@dataclass(frozen=True, slots=True)
class Planned(Generic[I]):
    """One page but an entry page: where it goes, and the view and inputs that make it."""

    path: str
    view: Callable[[I, Config], Page]
    inputs: I

    def page(self, config: Config) -> Page:
        return self.view(self.inputs, config)

    def fingerprint(self) -> bytes:
        """What the page's key is hashed from (with the settings, which every key holds)."""
        return fingerprint((self.path, self.inputs))


class EntryInputs(NamedTuple):
    """What an entry page shows: the entry, and what it shows of others."""

    source: str
    """The entry file's cache key (its path and bytes), which decide the entry and its text:
    the page is rendered from the entry the build reads back by it (`views.entry_page`)."""
    near: Neighbours
    dates: Dates | None


def entry(
    node: Node,
    links: Links,
    cards: Mapping[str, Card],
    also: tuple[str, ...],
    source: str,
    dates: Dates | None,
) -> tuple[str, EntryInputs]:
    """An entry page's path and inputs; `also` is its 'also tagged' suggestions."""
    return f"entries/{node.id}.html", EntryInputs(
        source, views.neighbours(node, links, cards, also), dates
    )


def pages(
    links: Links, cards: Mapping[str, Card], dates: Mapping[str, Dates | None], config: Config
) -> Iterator[Planned[Any]]:
    """Every page of the site but the entry pages, in a fixed order."""
    tag_counts = tuple(
        views.TagCount(t, tag.title, len(links.by_tag[t])) for t, tag in links.tags.items()
    )
    yield Planned(
        "index.html",
        views.index_page,
        views.IndexInputs(views.category_lists(cards), tag_counts, views.domain_lists(cards)),
    )
    for slug, tag in links.tags.items():
        yield Planned(
            f"tags/{slug}.html",
            views.tag_page,
            views.TagInputs(
                slug,
                tag.title,
                tag.description,
                tuple(filter(None, map(cards.get, links.by_tag[slug]))),
            ),
        )
    yield Planned("tags/index.html", views.tags_index, tag_counts)
    for alias, current in links.aliases.items():
        yield Planned(
            f"entries/{alias}.html",
            views.redirect_page,
            views.RedirectInputs(alias, current, cards[current].title),
        )
    for one in feed.plan(links, config, dates):  # none when nothing is dated
        yield Planned(
            one.path, feed.page, feed.FeedInputs(one, tuple(cards[i] for i, _ in one.recent))
        )
    for path, fixed in views.FIXED.items():
        yield Planned(path, _fixed(fixed), None)
    if config.base_url:
        yield Planned(
            "sitemap.xml",
            views.sitemap,
            (
                "index.html",
                *(f"tags/{t}.html" for t in links.tags),
                "tags/index.html",
                "diagnose.html",
                *(f"entries/{i}.html" for i in links.nodes),
            ),
        )


def _fixed(view: Callable[[Config], Page]) -> Callable[[None, Config], Page]:
    """A view of the settings alone (the search, diagnosis and 404 pages)."""
    return lambda _, config: view(config)


def fingerprint(value: object) -> bytes:
    """The bytes a page's key is hashed from: every part of `value`, in order. A card counts by
    its `key` (a hash of its fields, taken once per entry: tag pages and feeds hold thousands of
    cards, and their reprs were a tenth of a build); a datetime by its timestamp (a repr of
    thousands took 25 ms). A value of any other type is refused, so nothing is left out unseen."""
    parts: list[str] = []
    _walk(value, parts.append)
    return "\x1f".join(parts).encode()


_LEAF = frozenset({str, int, float, bool, type(None)})


def _walk(value: object, out: Callable[[str], None]) -> None:
    kind = type(value)
    if kind is Card:
        out("card " + value.key)  # type: ignore[attr-defined]
    elif kind in _LEAF:
        out(repr(value))
    elif isinstance(value, tuple | list):
        out("(")
        for item in value:  # the usual items without a call each: pages list thousands
            inner = type(item)
            if inner is Card:
                out("card " + item.key)
            elif inner in _LEAF:
                out(repr(item))
            elif (
                inner is tuple and len(item) == 2 and type(item[0]) is str and type(item[1]) is str
            ):
                out(repr(item))  # an (id, title) pair: one part, as unambiguous as two
            else:
                _walk(item, out)
        out(")")
    elif isinstance(value, dict):
        out("{")
        for k, item in value.items():
            _walk(k, out)
            _walk(item, out)
        out("}")
    elif isinstance(value, datetime):
        out(repr(value.timestamp()))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out(kind.__name__)
        _walk([getattr(value, f.name) for f in dataclasses.fields(value)], out)
    else:
        raise TypeError(f"a page's inputs cannot hold a {kind.__name__}")
