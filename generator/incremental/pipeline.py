"""`nanopedia build`: validated entries to a cross-linked static site, as one short pipeline.

load -> link -> plan -> write:

- load: every entry file is hashed (one whose size, mtime and inode the last build saw is not read
  again). An entry the last build saw with the same bytes and dates keeps its `Kept` summary from
  the build state; the others are parsed, validated and rendered, or taken from the per-entry
  cache, on every core when there are many.
- link: the `Node` of every entry is linked; no entry is read for it.
- plan: every file of the site with a key, a hash of everything it shows.
- write: a file whose key is the one the last build wrote is kept (a hard link to it in the new
  folder); the others are rendered. The new folder takes the old one's place in one step.

A build holds the site's lock from before it reads the state until the next state is locked for
saving, so two builds of one site (`serve` and a `build`, two CI steps) run one after the other.
"Up to date" needs the inputs of the last build and its site: the same folder (the state records
its inode) holding the files it recorded (size and modification time of each).

The output never depends on which path made it: an edit rebuild is byte-identical to a cold build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, TypeVar

from markupsafe import Markup

from nanopedia import config as site_config
from nanopedia.config import Config
from nanopedia.content.catalog import Links, Node, link, node
from nanopedia.content.corpus import display, display_prefix, load_entry, load_tags, misnamed_files
from nanopedia.content.load import read_file
from nanopedia.errors import NanopediaError, Problem, problem
from nanopedia.incremental import background, gitdates
from nanopedia.incremental import state as saved
from nanopedia.incremental.cache import CACHE_DIR, Cache, key, open_cache, stale
from nanopedia.incremental.inputs import Listing, entry_names, site_files
from nanopedia.incremental.lock import SiteLock, lock_timeout, recover, sweep
from nanopedia.incremental.state import Kept, State
from nanopedia.incremental.write import MARKER, SiteWriter, Span
from nanopedia.model import Dates, Entry, Tag
from nanopedia.site import feed, search, views
from nanopedia.site.joined import EMPTY, Joined, identity
from nanopedia.site.render import THEME, keep_compiled, render, static_files

PARALLEL_MIN = 200
"""Below this many entries to load or pages to render, worker processes cost more than they save."""
CHUNK = 16

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Report:
    """What a build did, for the CLI to print."""

    entries: int = 0
    pages: int = 0
    reused: int = 0
    """Entries whose parsed and rendered form came from the last build or the cache."""
    up_to_date: bool = False
    """Nothing changed since the last build and the site is intact: nothing was written."""
    rendered: int = 0
    """Files rendered and written; the others were kept from the last build."""
    warnings: list[Problem] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = time.perf_counter() - start


@dataclass(frozen=True, slots=True)
class Parsed:
    """What loading one entry gives the corpus-wide stages (the page itself is rendered from the
    entry, read back from the cache)."""

    key: str
    """Cache key of the entry file's path and bytes."""
    node: Node
    card: views.Card
    data: dict[str, bytes]
    """The entry's record of each joined file (`entries.json` without the dates)."""
    postings: search.Postings
    """The entry's terms in the search index (its shard's script is computed from them)."""


KINDS = ("export", "search", "text", "diagnose", "answer")
"""The joined files an entry has a record in: entries.json, search/index.js, a search text
shard, static/diagnose-data.js, search/answers.js."""

# The build cache, set before the workers fork so they share it.
_cache: Cache


def build(entries: Path, out: Path, config_path: Path | None = None, use_cache: bool = True,
          jobs: int | None = None, cache_root: Path | None = None,
          theme: Path = THEME,
          dates: Mapping[str, Dates] | None = None,
          changed: Collection[Path] | None = None, listed: Listing | None = None,
          scratch: bool = False, waiting: Callable[[str], None] | None = None) -> Report:
    """Build the site from `entries` into `out`; raise `NanopediaError` and leave `out` untouched
    when anything is wrong. `theme` holds the templates and static files (the single-file
    bundle swaps its base template).
    `dates` (file stem to dates) defaults to the git history of `entries`;
    tests pass fixed ones so a golden site does not change with every commit of its fixtures.
    `changed` (from `serve`'s file watcher) lists the entry files changed since the last build
    of this process: the others are not stat'ed, and the site is taken to be as that build
    left it (at 10,000 entries, the two scans were a fifth of a rebuild). `listed` is the entry
    files and the site as the caller found them (the console script, while it imported).
    `scratch`: `out` is a temporary folder (a bundle's), so no state is kept for it.
    `waiting` is told when another build of the site holds it (by default, stderr)."""
    report = Report()
    jobs = jobs or os.cpu_count() or 1
    background.settle()  # the state the last build is saving
    # Without the cache, a scratch one (removing even an empty folder can wait a tenth of a
    # second for the file system's journal after a large write, so only then).
    with SiteLock(out, lock_timeout(), waiting or _say) as lock, \
            nullcontext(cache_root or CACHE_DIR) if use_cache else \
            TemporaryDirectory(prefix="nanopedia-cache-") as root:
        global _cache
        _cache = open_cache(Path(root))
        for gone in stale(Path(root)):
            background.discard(gone)
        # The site as builds that died left it, mended: holding the lock, this one may.
        trash = Path(root) / TRASH if use_cache else None
        if recover(out) or lock.waited:
            listed = None  # what was listed before is not the site any more
        for gone in sweep(out, trash):
            background.discard(gone)
        if theme == THEME or not scratch:  # a bundle's copy of the theme is gone next time
            keep_compiled(_cache.root / "templates", theme)
        # 1. Settings and the fingerprint of every input: unchanged inputs and an intact site
        #    mean there is nothing to do.
        with report.stage("config"):
            config = site_config.read(config_path)
            setting = repr((config, theme, _theme_version(theme)))
            history: Mapping[str, Dates]
            if dates is None:
                walking = _history(entries)
                history, dated_by = walking, walking.head
            else:
                walking, history, dated_by = None, dates, repr(sorted(dates.items()))
            dated_by = repr((dated_by, gitdates.fallback()))
            state, warm = saved.load(_cache, _site_key(out)) if use_cache and not scratch \
                else (None, False)
            names = listed.names if listed else entry_names(entries)
            trust = set(names) - {p.name for p in changed} if changed is not None and warm \
                else set()
            stamps, hashes = _file_hashes(entries, names, state.stamps if state else {}, trust,
                                          listed)
            inputs = key(repr((setting, display(out), dated_by)).encode(),
                         *(f"{n}\0".encode() + hashes[n] for n in names))
            folder = _folder(out)
            same_folder = state is not None and state.folder == folder
            current = dict(state.manifest) if trust and state and same_folder else \
                listed.site if listed else site_files(out)
            if not (out / MARKER).exists():
                current = {}
            intact = same_folder and state is not None and current == state.manifest
            if intact and state is not None and state.inputs == inputs:
                report.up_to_date = True
                return report
            if state is None or intact:  # (usual) every file as the last build left it
                previous = state.pages if state else {}
                spans = state.spans if state else {}
            else:
                trusted = {p for p, v in current.items() if state.manifest.get(p) == v}
                previous = {p: k for p, k in state.pages.items() if p in trusted}
                spans = {p: t for p, t in state.spans.items() if p in trusted}
            located = {name: (p, *span) for p, table in spans.items()
                       for name, span in table.items()}
            last = _Last(previous, {k.node.id: k for k in state.entries.values()},
                         state.also if state.setting == setting else None) if state \
                else _Last({}, {}, None)
        with ExitStack() as workers:
            if walking is not None:
                workers.callback(walking.close)  # git log, should the build fail (even here)
            # Before any worker: on an error, the workers stop before its folder is removed.
            writer = workers.enter_context(SiteWriter(out))
            # 2. Load what changed, keep the rest, link all.
            with report.stage("load"):
                fallback = gitdates.fallback()
                prefix = display_prefix(entries)
                known = state.entries if state else {}
                old_stamps = state.stamps if state else {}
                # Records of the last build no trusted joined file holds (usually none).
                lost = {n for k in known.values() for n in k.names}
                lost.difference_update(located.keys(), (EMPTY,))
                kept: dict[str, Kept] = {}
                # Same history: an entry of the same bytes has the same dates.
                redated = state is None or state.dated_by != dated_by
                for name in names:
                    old = known.get(name)
                    if old is None:
                        continue
                    stamp = old_stamps.get(name)
                    same = stamp is not None and stamp[3] == hashes[name] and \
                        old.node.path == prefix + name
                    if (same or old.key == key(f"{prefix}{name}".encode(), hashes[name])) and \
                            (not redated or old.dates == gitdates.entry_dates(
                                history, old.node.id, old.node.aliases, fallback)) and \
                            not (lost and not lost.isdisjoint(old.names)):
                        kept[name] = old
                todo = [entries / n for n in names if n not in kept]
                # Forked now, while this process is small, the workers also render the pages.
                workers.enter_context(_workers(jobs, len(todo)))
                loaded = list(_map(_load_one, [(p, known[p.name].key if p.name in known else None)
                                               for p in todo]))
                tags, tags_doc, problems = load_tags(entries)
                problems += misnamed_files(entries)
                parsed: dict[str, Parsed] = {}
                invalid: set[str] = set()
                for path, (one, found, reused) in zip(todo, loaded, strict=True):
                    problems += found
                    report.reused += reused
                    if one is None:
                        invalid.add(path.stem)
                    else:
                        parsed[path.name] = one
                nodes = [k.node for k in kept.values()] + [p.node for p in parsed.values()]
                links, linked = _relink(state, known, parsed, nodes, tags) or \
                    link(nodes, tags, tags_doc, frozenset(invalid))
                problems = sorted(problems + linked, key=Problem.sort_key)
                if any(p.severity == "error" for p in problems):
                    raise NanopediaError(problems)
                report.warnings = problems
                report.entries = len(nodes)
                report.reused += len(kept)
                warned = {p.location.path for p in problems}
                fresh: dict[str, dict[str, bytes]] = {}
                for name, one in parsed.items():
                    kept[name], fresh[one.node.id] = _keep(one, gitdates.entry_dates(
                        history, one.node.id, one.node.aliases, fallback))
                postings = {one.node.id: one.postings for one in parsed.values()}
                parsed.clear()  # its records are in `fresh`, dated: hold them once
                by_id = {k.node.id: k for k in sorted(kept.values(), key=lambda k: k.node.id)}
            # 3. Plan every file, then write those whose key changed.
            with report.stage("render+write"):
                if not any(k.dates for k in by_id.values()):  # no feed can be dated
                    config = dataclasses.replace(config, feeds=False)
                    setting = repr((config, theme, _theme_version(theme)))
                site = _Site(links, by_id, fresh, config, theme, setting, postings)
                if state is None or state.tags != links.tags:
                    last = _Last(last.pages, last.entries, None)
                pages, spans, also = _write(writer, site, last, spans, located, jobs, report)
                writer.commit(trash)
                manifest = _updated(out, current, writer.written, writer.files) if current \
                    else site_files(out)
        # 4. Remember what was written: the state is locked for saving before the site is
        #    released, so the next build of it reads this state.
        if use_cache and walking is not None:
            _remember(entries, walking)
        if use_cache and not scratch:
            site_key = _site_key(out)
            background.later(saved.save, _cache, site_key, State(
                saved.VERSION, inputs, stamps,
                {n: k for n, k in kept.items() if k.node.path not in warned},
                pages, spans, manifest, _folder(out), setting, links.tags, also,
                dataclasses.replace(links, nodes={}), dated_by=dated_by), state,
                held=saved.hold(_cache, site_key))
        if writer.garbage is not None:  # after the state, which the next build waits for
            if trash is None:  # a scratch cache: nowhere to leave it out of sight
                shutil.rmtree(writer.garbage, ignore_errors=True)
            else:
                background.discard(writer.garbage)
    return report


TRASH = "trash"
"""The folder of the cache that old sites are moved to, to be deleted in the background."""


def _say(message: str) -> None:
    """Tell the person at the terminal (serve and bundle build too, so not through the CLI)."""
    print(f"nanopedia: {message}", file=sys.stderr, flush=True)


def _folder(out: Path) -> tuple[int, int]:
    """The site folder's identity: (device, inode); (-1, -1) when there is none."""
    try:
        info = os.stat(out)
    except OSError:
        return (-1, -1)
    return (info.st_dev, info.st_ino)


STAT_TRUST_NS = 2_000_000_000
"""A file modified this recently may change again within its timestamp's tick: hash it anew."""


def _file_hashes(root: Path, names: list[str],
                 known: Mapping[str, tuple[int, int, int, bytes]], trust: Collection[str] = (),
                 listed: Listing | None = None
                 ) -> tuple[dict[str, tuple[int, int, int, bytes]], dict[str, bytes]]:
    """The sha256 of every file's bytes, by name; a file whose size, modification time and inode
    are those of the last build is not read again (measured at 10,000 entries: reading and
    hashing 80 MB was most of an unchanged rebuild); stamps already `listed` are not taken
    again. Also the stamps to trust next time."""
    seen: dict[str, tuple[int, int, int, bytes]] = {}
    hashes: dict[str, bytes] = {}
    recent = (listed.taken_ns if listed else time.time_ns()) - STAT_TRUST_NS
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return seen, dict.fromkeys(names, b"")
    try:
        for name in names:
            if name in trust and name in known:  # unchanged, says the caller's file watcher
                seen[name] = known[name]
                hashes[name] = known[name][3]
                continue
            try:
                if listed is None:
                    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                    stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
                elif name in listed.stamps:
                    stamp = listed.stamps[name]
                else:
                    raise FileNotFoundError(name)
                hit = known.get(name)
                if hit is not None and hit[:3] == stamp:
                    content = hit[3]
                else:
                    content = hashlib.sha256(read_file(name, name, folder)).digest()
            except (OSError, NanopediaError):  # unreadable: loading it reports where and why
                hashes[name] = b""
                continue
            if stamp[1] < recent:
                seen[name] = (*stamp, content)
            hashes[name] = content
    finally:
        os.close(folder)
    return seen, hashes


def _history(entries: Path) -> gitdates.Walking:
    """The git dates of the entries, walking only the commits made since the last build's
    walk; `git log` runs while the entries load."""
    return gitdates.start(entries, _cache.get("git", _walk_key(entries), gitdates.Walk))


def _remember(entries: Path, walking: gitdates.Walking) -> None:
    """Keep a walk that read new commits for the next build."""
    walk = walking.walk()
    if walk is not None and walking.read:
        background.later(_cache.put, "git", _walk_key(entries), walk)


def _walk_key(entries: Path) -> str:
    return key(b"git", str(entries.resolve()).encode())


def _updated(out: Path, manifest: dict[str, tuple[int, int]], written: list[str],
             files: set[str]) -> dict[str, tuple[int, int]]:
    """The manifest of the new site: the files written are stat'ed; those kept are links to (or
    copies of) the old site's, with its sizes and modification times."""
    new = {p: v for p, v in manifest.items() if p in files}
    for path in written:
        info = (out / path).stat()
        new[path] = (info.st_size, info.st_mtime_ns)
    return new


_pool: Any = None
"""The build's worker pool, while one runs."""


@contextmanager
def _workers(jobs: int, count: int) -> Iterator[None]:
    """Worker processes for `_map`, when `count` items make them worthwhile. For a cold build
    they are forked before any entry is loaded, so none of them carries a copy of the corpus."""
    global _pool
    if jobs <= 1 or count < PARALLEL_MIN or _pool is not None:
        yield
        return
    import multiprocessing  # here: a rebuild of a few entries never forks, nor imports it

    background.finish()  # no thread may run when the workers fork
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        _pool = pool
        try:
            yield
        finally:
            _pool = None


def _map(fn: Callable[[T], R], items: Iterable[T]) -> Iterable[R]:
    """`map`, over the worker processes when they run."""
    if _pool is None:
        return map(fn, items)
    return _pool.imap(fn, items, CHUNK)


def _relink(state: State | None, known: Mapping[str, Kept], parsed: Mapping[str, Parsed],
            nodes: list[Node], tags: dict[str, Tag]) -> tuple[Links, list[Problem]] | None:
    """The last build's links, when no entry was added or removed and none of the loaded ones
    changed what it links to (linking 10,000 entries took a tenth of a second): only the nodes,
    whose positions may have moved, are new."""
    if state is None or state.links is None or state.tags != tags or \
            len(nodes) != len(state.links.backlinks):
        return None
    for name, one in parsed.items():
        old = known.get(name)
        if old is None or old.node.linking != one.node.linking:
            return None
    last = state.links
    by_id = {n.id: n for n in sorted(nodes, key=lambda n: n.id)}
    if by_id.keys() != last.backlinks.keys():
        return None
    return Links(by_id, last.tags, last.aliases, last.backlinks, last.by_tag), []


def _entry_key(path: Path) -> str:
    """The cache key of an entry file: its path and the hash of its bytes."""
    try:
        raw = read_file(path, path.name)
    except NanopediaError:
        raw = b""
    return key(display(path).encode(), hashlib.sha256(raw).digest())


def _load_one(item: tuple[Path, str | None]) -> tuple[Parsed | None, list[Problem], bool]:
    """Parse, validate and render one entry file, or take it from the cache (then True); the
    second item is the key of the file's last version, if any. The key is hashed from the bytes
    read here, not taken from the caller: a file saved in between must not be cached under its
    former key."""
    path, before = item
    k = _entry_key(path)
    hit = _cached(k)
    if hit is not None:
        return hit[1], [], True
    src, problems = load_entry(path)
    if src is None:
        return None, problems, False
    e = src.entry
    doc = search.document(e)
    text = search.records(doc)
    one = Parsed(k, node(src), views.card(e), {
        "export": views.export_record(e).encode(), "search": text[0], "text": text[1],
        "diagnose": views.diagnose_record(e), "answer": text[2]}, search.postings(doc))
    if not problems:
        _cache.put("entries", k, (e, one, views.fragments(e, _highlighted(before))))
    return one, problems, False


def _cached(k: str) -> tuple[Entry, Parsed, dict[str, Any]] | None:
    """An entry's cached (entry, what loading it gave, rendered fragments), or None: missing,
    damaged, or not of that shape (the cache is a file anyone can write; never trust its type)."""
    hit = _cache.get("entries", k, tuple)
    if hit is None or len(hit) != 3 or not isinstance(hit[0], Entry) or \
            not isinstance(hit[1], Parsed) or not isinstance(hit[2], dict):
        return None
    return hit


def _highlighted(k: str | None) -> dict[tuple[str, str], str]:
    """The highlighted code (examples, repro scripts, fix lines) of an entry's cached version, by
    (code, language): an edit that leaves them alone runs no Pygments lexer (the first use of one
    compiles its patterns, a tenth of a second for Python's)."""
    hit = _cached(k) if k else None
    if hit is None:
        return {}
    entry, _, frags = hit
    return {(code, language): frags[key]
            for key, code, language in views.highlighted_sources(entry) if key in frags}


def _keep(one: Parsed, dates: Dates | None) -> tuple[Kept, dict[str, bytes]]:
    """What the state keeps of a freshly loaded entry, and its records with the dates in."""
    data = dict(one.data, export=views.with_dates(one.data["export"], dates))
    return Kept(one.key, one.node, one.card, identity(repr(one.card).encode()), dates,
                tuple(identity(data[kind]) for kind in KINDS)), data


@dataclass(frozen=True, slots=True)
class _Site:
    """Everything the pages are planned from."""

    links: Links
    entries: dict[str, Kept]
    """Every entry by id, sorted."""
    fresh: dict[str, dict[str, bytes]]
    """Records of the entries loaded in this build, by entry id."""
    config: Config
    theme: Path
    setting: str
    postings: dict[str, search.Postings]
    """Search index terms of the entries loaded in this build, by entry id."""

    def records(self, kind: str) -> tuple[list[str], dict[str, bytes]]:
        """Every entry's record name for one joined file, and the bytes of the fresh ones."""
        at = KINDS.index(kind)
        names = [k.names[at] for k in self.entries.values()]
        fresh = {self.entries[i].names[at]: data[kind] for i, data in self.fresh.items()}
        return names, fresh

    @property
    def cards(self) -> dict[str, views.Card]:
        return {i: k.card for i, k in self.entries.items()}


Make = Callable[[], bytes | Iterable[bytes] | Joined]
_lists: dict[str, Markup] = {}
"""The home page's rendered entry lists by key, kept by `serve` between rebuilds."""


def _others(site: _Site) -> Iterator[tuple[str, str, Make]]:
    """Every file of the site but the entry pages: (path, key, how to make it)."""
    links, config, theme = site.links, site.config, site.theme
    cards = site.cards

    def page(made: Callable[[], views.Page]) -> Make:
        return lambda: render(made(), theme)

    def k(*parts: object) -> str:
        return key(site.setting.encode(), repr(parts).encode())

    # Tags by their fields: the repr of a pydantic model is slow (a thousand a build).
    shown = {t: (tag.title, tag.description) for t, tag in links.tags.items()}
    tag_list = [(t, shown[t], len(links.by_tag[t])) for t in links.tags]
    card_keys = {i: e.card_key for i, e in site.entries.items()}
    lists = views.entry_lists(cards)
    list_keys = {slug: k(repr(one.context)) for slug, one in lists.items()}

    def index() -> views.Page:
        rendered = {}
        for slug, one in lists.items():
            if list_keys[slug] not in _lists:
                if len(_lists) > 4 * len(views.CATEGORY_TITLES):
                    _lists.clear()
                _lists[list_keys[slug]] = Markup(render(one, theme).decode())
            rendered[slug] = _lists[list_keys[slug]]
        return views.index_page(links, config, len(cards), rendered)

    yield "index.html", k("index", list_keys, tag_list), page(index)
    for slug in links.tags:
        members = "".join(map(card_keys.__getitem__, links.by_tag[slug]))
        yield f"tags/{slug}.html", k("tag", slug, shown[slug], members), \
            page(partial(views.tag_page, slug, links, config, cards))
    yield "tags/index.html", k("tags", tag_list), page(lambda: views.tags_index(links, config))
    for alias, current in links.aliases.items():
        yield f"entries/{alias}.html", k("redirect", alias, cards[current]), \
            page(partial(views.redirect_page, alias, cards[current], config))
    dated = {i: e.dates for i, e in site.entries.items()}
    for one in feed.plan(links, config, dated):  # none when nothing is dated
        # Dates by their timestamps: repr-ing 9,000 of them took 25 ms a build.
        recent = [(i, d.first_published.timestamp(), d.last_updated.timestamp(),
                   site.entries[i].card_key) for i, d in one.recent]
        # `newest` too: a feed of undated entries is dated by the site's newest entry.
        yield one.path, k("feed", one.path, one.title, one.newest.timestamp(), recent), \
            page(partial(feed.page, one, cards, config))
    fixed = [views.diagnose_page(config), views.not_found_page(config),
             views.search_page(config), views.stylesheet()]
    for made in fixed:
        yield made.path, k(made.path), page(partial(lambda p: p, made))
    listed = ["index.html", *(f"tags/{t}.html" for t in links.tags), "tags/index.html",
              "diagnose.html", *(f"entries/{i}.html" for i in links.nodes)]
    sitemap = views.sitemap(config, listed)
    if sitemap is not None:
        yield sitemap.path, k("sitemap", listed), lambda: render(sitemap)
    (search_keys, fresh), (texts, fresh_texts) = site.records("search"), site.records("text")
    answers, fresh_answers = site.records("answer")
    joined = [("entries.json", views.export(*site.records("export"), config)),
              *search.index_files(search_keys, texts, answers,
                                  fresh | fresh_texts | fresh_answers, links),
              (views.DIAGNOSE_DATA, views.diagnose_data(*site.records("diagnose")))]
    for path, one_file in joined:
        yield path, key(one_file.key()), partial(lambda j: j, one_file)
    ids = list(site.entries)
    at = KINDS.index("search"), KINDS.index("text")
    for n, shard in enumerate(search.shards(len(ids))):
        part = ids[shard.start : shard.stop]
        names = [site.entries[i].names[at[0]] + site.entries[i].names[at[1]] for i in part]
        yield search.terms_file(n), k("terms", n, part, names), \
            partial(_terms_shard, site, n, part, names)
    for path, data in static_files(theme):
        yield path, k(path), partial(lambda d: d, data)


def _terms_shard(site: _Site, number: int, ids: list[str], names: list[str]) -> bytes:
    """Search index shard `number`. Its entries' postings come from this build or from the
    last build of the shard, kept in the cache under the shard's number and found by the names
    of their records: an edit loads no other entry again."""
    slot = key(b"search-terms", str(number).encode())
    last = _cache.get("search-terms", slot, dict) or {}
    entries = []
    for i, name in zip(ids, names, strict=True):
        found = site.postings.get(i) or last.get(name)
        if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], dict)):
            found = _entry_postings(site.entries[i])
        entries.append(found)
    _cache.put("search-terms", slot, dict(zip(names, entries, strict=True)))
    return search.terms_script(number, ids, entries)


def _entry_postings(kept: Kept) -> search.Postings:
    """A kept entry's postings from its cached form, or from its file should that be gone."""
    hit = _cached(kept.key)
    if hit is not None:
        return hit[1].postings
    path = Path(kept.node.path)
    src = load_entry(path)[0] if _entry_key(path) == kept.key else None
    if src is None:
        raise NanopediaError([problem(kept.node.path, 0, 0, "E042",
                                      "the entry changed while the site was being built",
                                      "build again")])
    return search.postings(search.document(src.entry))


@dataclass(frozen=True, slots=True)
class _Last:
    """What the last build's state says about the pages."""

    pages: dict[str, str]
    """Site file to its key, for the files still as that build wrote them."""
    entries: dict[str, Kept]
    """Entry id to what was kept of it."""
    also: dict[str, tuple[str, ...]] | None
    """Entry id to its suggestions; None when they must all be computed again (first build, or
    the settings or the tag registry changed)."""


def _affected(site: _Site, last: _Last,
              suggestions: Callable[[], views.Suggestions]) -> tuple[set[str], set[str]]:
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


def _write(writer: SiteWriter, site: _Site, last: _Last,
           spans: dict[str, dict[str, tuple[int, int]]], located: dict[str, Span], jobs: int,
           report: Report) -> tuple[dict[str, str], dict[str, dict[str, tuple[int, int]]],
                                    dict[str, tuple[str, ...]]]:
    """Write every file whose key is not the one it had, keep the others (records of joined
    files are copied from `located`); return the key of every file, the record spans of every
    joined file and every entry's suggestions."""
    keys: dict[str, str] = {}
    tasks = []
    suggestions = cache(lambda: views.Suggestions(site.links))
    affected, again = (set(site.entries),) * 2 if last.also is None else \
        _affected(site, last, suggestions)
    cards = site.cards
    also: dict[str, tuple[str, ...]] = {}
    for i, kept_entry in site.entries.items():
        path = f"entries/{i}.html"
        old = last.pages.get(path)
        if i in affected or i in site.fresh or old is None or last.also is None:
            also[i] = suggestions().also(kept_entry.node) if i in again or last.also is None \
                else last.also[i]
        else:  # nothing it shows changed
            also[i] = last.also[i]
            if writer.keep(path):
                keys[path] = old
                continue
        near = views.neighbours(kept_entry.node, site.links, cards, also[i])
        keys[path] = key(site.setting.encode(),
                         repr((kept_entry.key, near, kept_entry.dates)).encode())
        if old != keys[path] or not writer.keep(path):  # (kept, unless gone from the site)
            tasks.append(_PageTask(kept_entry.node.path, kept_entry.key, near, kept_entry.dates))
    with _workers(jobs, len(tasks)):
        writer.adopt(_map(partial(_write_entry_page, writer, site.config, site.theme), tasks))
    report.rendered += len(tasks)
    new_spans: dict[str, dict[str, tuple[int, int]]] = {}
    for path, k, make in _others(site):
        keys[path] = k
        if last.pages.get(path) == k and writer.keep(path):
            if path in spans:
                new_spans[path] = spans[path]
            continue
        made = make()
        if isinstance(made, Joined):
            new_spans[path] = writer.write_joined(path, made, located)
        else:
            writer.write(path, made)
        report.rendered += 1
    report.pages = len(keys)
    return keys, new_spans, also


def _site_key(out: Path) -> str:
    return key(str(out.resolve()).encode())


@cache
def _theme_version(theme: Path) -> bytes:
    """A hash of a theme's files (the repository's own theme is in `code_version` already)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in theme.rglob("*") if p.is_file()):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.digest()


@dataclass(frozen=True, slots=True)
class _PageTask:
    path: str
    """The entry file, to load again should its cached form have vanished meanwhile."""
    key: str
    near: views.Neighbours
    dates: Dates | None


def _write_entry_page(writer: SiteWriter, config: Config, theme: Path, task: _PageTask) -> str:
    """Render and write one entry page (in a worker for large corpora); return its path."""
    hit = _cached(task.key)
    if hit is not None:
        entry, _, frags = hit
    else:  # an entry with warnings, or removed from the cache folder meanwhile
        src = load_entry(Path(task.path))[0] if _entry_key(Path(task.path)) == task.key else None
        if src is None:
            raise NanopediaError([problem(task.path, 0, 0, "E042",
                                          "the entry changed while the site was being built",
                                          "build again")])
        entry, frags = src.entry, views.fragments(src.entry)
    page = views.entry_page(entry, task.near, config, frags, task.dates)
    writer.write(page.path, render(page, theme))
    return page.path
