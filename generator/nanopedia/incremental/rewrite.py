"""Which files of the site to write again: every file is planned with a key, a hash of what it
shows; a file whose key is the one the last build wrote is kept (a hard link to it in the new
folder), the others are rendered.

Pages take their keys from their inputs (`site.plan`); the joined data files from the names of
their records (`site.joined`); the search index shards from their entries' records. Entry pages
are planned only where something they show may have changed (`affected`): at 10,000 entries,
working out what every entry page shows was most of a one-entry rebuild.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

from nanopedia.config import Config
from nanopedia.content.catalog import Links
from nanopedia.content.suggest import Suggestions
from nanopedia.incremental import per_entry
from nanopedia.incremental.cache import key
from nanopedia.incremental.context import Context, Request
from nanopedia.incremental.per_entry import KINDS, PageTask
from nanopedia.incremental.state import Kept
from nanopedia.incremental.write import SiteWriter, Span
from nanopedia.site import exports, plan, search, views
from nanopedia.site.joined import Joined
from nanopedia.site.render import static_files


@dataclass(frozen=True, slots=True)
class SiteInputs:
    """Everything the files of the site are planned from."""

    links: Links
    entries: dict[str, Kept]
    """Every entry by id, sorted."""
    cards: dict[str, views.Card]
    """The same entries' cards."""
    fresh: dict[str, dict[str, bytes]]
    """Records of the entries loaded in this build, by entry id."""
    config: Config
    theme: Path
    setting: str
    """The settings every key holds (the configuration, the theme and its version)."""
    postings: dict[str, search.Postings]
    """Search index terms of the entries loaded in this build, by entry id."""

    def records(self, kind: str) -> tuple[list[str], dict[str, bytes]]:
        """Every entry's record name for one joined file, and the bytes of the fresh ones."""
        at = KINDS.index(kind)
        names = [k.names[at] for k in self.entries.values()]
        fresh = {self.entries[i].names[at]: data[kind] for i, data in self.fresh.items()}
        return names, fresh

    def key(self, fingerprint: bytes) -> str:
        return key(self.setting.encode(), fingerprint)


@dataclass(frozen=True, slots=True)
class Last:
    """What the last build's state says about the files."""

    pages: dict[str, str]
    """Site file to its key, for the files still as that build wrote them."""
    entries: dict[str, Kept]
    """Entry id to what was kept of it."""
    also: dict[str, tuple[str, ...]] | None
    """Entry id to its suggestions; None when they must all be computed again (first build, or
    the settings or the tag registry changed)."""
    spans: dict[str, dict[str, tuple[int, int]]]
    """The record spans of the last build's joined files that are still as it wrote them."""
    located: dict[str, Span]
    """The same by record name: (joined file, offset, length)."""


Make = Callable[[], bytes | Joined]


def others(
    context: Context, site: SiteInputs, same: Mapping[str, str] | None = None
) -> Iterator[tuple[str, str, Make]]:
    """Every file of the site but the entry pages: (path, key, how to make it). `same`: the
    last build's keys, when no page of `plan.pages` can show anything new (`shown_alike`)."""
    dates = {i: e.dates for i, e in site.entries.items()}
    templates = context.templates[site.theme]
    for one in plan.pages(site.links, site.cards, dates, site.config):
        k = same.get(one.path) if same is not None else None
        yield (
            one.path,
            k or site.key(one.fingerprint()),
            partial(lambda p: templates.render(p.page(site.config)), one),
        )
    (search_keys, fresh), (texts, fresh_texts) = site.records("search"), site.records("text")
    answers, fresh_answers = site.records("answer")
    joined = [
        ("entries.json", exports.export(*site.records("export"), site.config)),
        *search.index_files(
            search_keys, texts, answers, fresh | fresh_texts | fresh_answers, site.links
        ),
        (exports.DIAGNOSE_DATA, exports.diagnose_data(*site.records("diagnose"))),
    ]
    for path, one_file in joined:
        yield path, key(one_file.key()), partial(lambda j: j, one_file)
    ids = list(site.entries)
    at = KINDS.index("search"), KINDS.index("text")
    for n, shard in enumerate(search.shards(len(ids))):
        part = ids[shard.start : shard.stop]
        names = [site.entries[i].names[at[0]] + site.entries[i].names[at[1]] for i in part]
        path = search.terms_file(n)
        yield (
            path,
            site.key(plan.fingerprint((path, part, names))),
            partial(_terms_shard, context, site, n, part, names),
        )
    for path, data in static_files(site.theme):
        yield path, site.key(plan.fingerprint(path)), partial(lambda d: d, data)


def _terms_shard(
    context: Context, site: SiteInputs, number: int, ids: list[str], names: list[str]
) -> bytes:
    """Search index shard `number`. Its entries' postings come from this build or from the
    last build of the shard, kept in the cache under the shard's number and found by the names
    of their records: an edit loads no other entry again."""
    cache_ = context.build_cache
    slot = key(b"search-terms", str(number).encode())
    last = cache_.get("search-terms", slot, dict) or {}
    entries = []
    for i, name in zip(ids, names, strict=True):
        found = site.postings.get(i) or last.get(name)
        if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], dict)):
            found = _entry_postings(context, site.entries[i])
        entries.append(found)
    cache_.put("search-terms", slot, dict(zip(names, entries, strict=True)))
    return search.terms_script(number, ids, entries)


def _entry_postings(context: Context, kept: Kept) -> search.Postings:
    """A kept entry's postings from its cached form, or from its file should that be gone."""
    hit = per_entry.cached(context, kept.key)
    if hit is not None:
        return hit[1].postings
    return search.postings(search.document(per_entry.reload(kept.node.path, kept.key)))


def shown_alike(site: SiteInputs, last: Last) -> bool:
    """Whether every page `plan.pages` plans shows what it showed in the last build: the same
    entries, each with the same card, dates and links (the settings and the tag registry are
    the same when `last.also` is known). Their keys are then the last build's, and working
    them out (a fingerprint of every card of every tag page) was a third of a one-entry
    rebuild at 10,000 entries."""
    if last.also is None or site.entries.keys() != last.entries.keys():
        return False
    for i, k in site.entries.items():
        old = last.entries[i]
        if old is not k and (
            old.card.key != k.card.key or old.dates != k.dates or old.node.linking != k.node.linking
        ):
            return False
    return True


def affected(
    site: SiteInputs, last: Last, suggestions: Callable[[], Suggestions]
) -> tuple[set[str], set[str]]:
    """The entries whose page may show something new of another entry, and those of them whose
    suggestions may change. A changed entry, and for each whose title or links changed, every
    entry that shows it or is shown by it; for each whose links, tags or causes changed, those
    and every entry sharing a tag or cause with it also get their suggestions again (a new
    title changes none)."""
    assert last.also is not None
    retitled, relinked = set(), set()
    for i, k in site.entries.items():
        old = last.entries.get(i)
        if old is k:
            continue
        if old is None or old.node.linking != k.node.linking:
            relinked.add(i)
        elif old.card.title != k.card.title:
            retitled.add(i)
    relinked.update(last.entries.keys() - site.entries.keys())
    if not retitled and not relinked:
        return set(), set()
    changed = retitled | relinked
    found, again = set(retitled), set(relinked)
    for j, also in last.also.items():
        if not changed.isdisjoint(also):
            for i in changed.intersection(also):
                (found if i in retitled else again).add(j)
    for i in changed:
        near = found if i in retitled else again
        near.update(site.links.backlinks.get(i, ()))
        for seen in (site.entries.get(i), last.entries.get(i)):
            if seen is not None:
                near.update(seen.node.targets)
                if i in relinked:
                    near.update(suggestions().sharing(seen.node))
    return (found | again) & site.entries.keys(), again & site.entries.keys()


@dataclass
class Written:
    """What writing the site gives the next build's state."""

    keys: dict[str, str]
    """Every file of the site to its key."""
    spans: dict[str, dict[str, tuple[int, int]]]
    """Every joined file's record spans."""
    also: dict[str, tuple[str, ...]]
    """Every entry's suggestions."""
    rendered: int
    """Files rendered and written (the others were kept)."""


def write(
    context: Context, request: Request, writer: SiteWriter, site: SiteInputs, last: Last
) -> Written:
    """Write every file whose key is not the one it had, keep the others (records of joined
    files are copied from `last.located`)."""
    keys: dict[str, str] = {}
    tasks = []
    suggestions = cache(lambda: Suggestions(site.links))
    changed, again = (
        (set(site.entries),) * 2 if last.also is None else affected(site, last, suggestions)
    )
    cards = site.cards
    also: dict[str, tuple[str, ...]] = {}
    for i, kept in site.entries.items():
        path = f"entries/{i}.html"
        old = last.pages.get(path)
        if i in changed or i in site.fresh or old is None or last.also is None:
            also[i] = (
                suggestions().also(kept.node) if i in again or last.also is None else last.also[i]
            )
        else:  # nothing it shows changed
            also[i] = last.also[i]
            if writer.keep(path):
                keys[path] = old
                continue
        path, inputs = plan.entry(kept.node, site.links, cards, also[i], kept.key, kept.dates)
        keys[path] = site.key(plan.fingerprint((path, inputs)))
        if old != keys[path] or not writer.keep(path):  # (kept, unless gone from the site)
            tasks.append(PageTask(kept.node.path, inputs))
    with context.workers(request.jobs or 1, len(tasks), request.parallel_min):
        one = partial(per_entry.write_entry_page, context, writer, site.config, site.theme)
        writer.adopt(context.map(one, tasks))
    rendered = len(tasks)
    new_spans: dict[str, dict[str, tuple[int, int]]] = {}
    for path, k, make in others(context, site, last.pages if shown_alike(site, last) else None):
        keys[path] = k
        if last.pages.get(path) == k and writer.keep(path):
            if path in last.spans:
                new_spans[path] = last.spans[path]
            continue
        made = make()
        if isinstance(made, Joined):
            new_spans[path] = writer.write_joined(path, made, last.located)
        else:
            writer.write(path, made)
        rendered += 1
    return Written(keys=keys, spans=new_spans, also=also, rendered=rendered)
