"""Atom feeds of new and updated entries: `feed.xml` for the site and `tags/<tag>.xml` per tag.

An entry appears once, at its latest update; feed readers see the same `<id>` again with a newer
`<updated>` and show it as changed. Dates come from git (`gitdates.py`), so an undated entry (not
committed yet, or a build outside git without `SOURCE_DATE_EPOCH`) is left out rather than given a
made-up date; a feed with no dated entries is still valid Atom, dated at the epoch. Links are
absolute when the site's base URL is known (most readers ignore `xml:base`), relative otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime

from .catalog import Catalog
from .config import Config
from .gitdates import Dates, iso
from .markdown import PageEnv, render
from .views import Page

LIMIT = 50
"""Entries per feed: the recent changes a reader polls for, not an archive."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
URN = "urn:nanopedia"


def _recent(ids: Iterable[str], dates: Mapping[str, Dates | None]) -> list[tuple[str, Dates]]:
    """Dated entries, newest update first (ties by id, so the order never depends on the run)."""
    dated = [(i, d) for i in ids if (d := dates.get(i)) is not None]
    dated.sort(key=lambda item: (-item[1].last_updated.timestamp(), item[0]))
    return dated[:LIMIT]


def _feed(path: str, title: str, ids: Iterable[str], catalog: Catalog, config: Config,
          dates: Mapping[str, Dates | None], feed_id: str) -> Page:
    """One feed file; `path` decides how relative links are written."""
    root = config.base_url or "../" * path.count("/")
    recent = _recent(ids, dates)
    entries = []
    for ident, when in recent:
        entry = catalog.by_id[ident].entry
        new = when.first_published == when.last_updated
        entries.append({
            "id": f"{URN}:entry:{ident}",
            "title": entry.title,
            "kind": "New entry" if new else "Updated",
            "href": f"{root}entries/{ident}.html",
            "published": iso(when.first_published),
            "updated": iso(when.last_updated),
            "category": entry.category,
            "tags": list(entry.tags),
            # A plain string on purpose: Atom's type="html" carries the HTML escaped, as text.
            "summary": render(entry.summary, PageEnv(entry_base=f"{root}entries/")),
        })
    updated = max((d.last_updated for _, d in recent), default=EPOCH)
    context = {
        "feed": {
            "id": feed_id,
            "title": title,
            "self": f"{config.base_url}{path}" if config.base_url else path.rsplit("/", 1)[-1],
            "home": root if config.base_url else f"{root}index.html",
            "updated": iso(updated),
        },
        "entries": entries,
    }
    return Page(path, "feed.xml", context)


def feeds(catalog: Catalog, config: Config, dates: Mapping[str, Dates | None]) -> Iterator[Page]:
    """The site feed, then one feed per registered tag."""
    yield _feed("feed.xml", f"{config.title}: new and updated entries", catalog.by_id, catalog,
                config, dates, f"{URN}:feed")
    for slug, tag in catalog.tags.items():
        yield _feed(f"tags/{slug}.xml", f"{config.title}: #{tag.title}", catalog.by_tag[slug],
                    catalog, config, dates, f"{URN}:feed:tag:{slug}")
