"""`nanopedia build`: validated entries to a cross-linked static site, as a short list of steps.

inputs -> load -> write -> remember:

- inputs: the settings and a fingerprint of every entry file (one whose size, mtime and inode the
  last build saw is not read again). Unchanged inputs and an intact site: nothing to do.
- load: an entry the last build saw with the same bytes and dates keeps its `Kept` summary from
  the build state; the others are parsed, validated and rendered, or taken from the per-entry
  cache (`per_entry`), on every core when there are many. Then every entry's `Node` is linked; no
  entry is read for it.
- write: every file of the site is planned with a key, a hash of everything it shows; a file
  whose key is the one the last build wrote is kept, the others are rendered (`rewrite`). The new
  folder takes the old one's place in one step (`write`).
- remember: the build state, for the next build, saved in the background.

Each step is given the same two values: the `Request` (what to build, frozen) and the `Context`
(the cache, the worker pool, the markdown memo, the compiled templates; `context.py`).

A build holds the site's lock from before it reads the state until the next state is locked for
saving, so two builds of one site (`serve` and a `build`, two CI steps) run one after the other.
"Up to date" needs the inputs of the last build and its site: the same folder (the state records
its inode) holding the files it recorded (size and modification time of each).

The output never depends on which path made it: an edit rebuild is byte-identical to a cold build.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory

from nanopedia import config as site_config
from nanopedia.config import Config
from nanopedia.content.catalog import Links, Node, link
from nanopedia.content.corpus import display, display_prefix, load_tags, misnamed_files
from nanopedia.content.files import entry_names
from nanopedia.errors import NanopediaError, Problem
from nanopedia.incremental import background, gitdates, per_entry, rewrite
from nanopedia.incremental import state as saved
from nanopedia.incremental.cache import CACHE_DIR, Cache, key, open_cache, stale
from nanopedia.incremental.context import Context, Request
from nanopedia.incremental.inputs import site_files
from nanopedia.incremental.lock import SiteLock, lock_timeout, recover, sweep
from nanopedia.incremental.per_entry import KINDS, Parsed
from nanopedia.incremental.stamps import (
    file_hashes,
    folder_id,
    site_key,
    tags_hash,
    theme_version,
    updated_manifest,
)
from nanopedia.incremental.state import Kept, State
from nanopedia.incremental.write import MARKER, SiteWriter
from nanopedia.model import Dates, Tag
from nanopedia.site import exports, search
from nanopedia.site.joined import EMPTY, identity
from nanopedia.theme_dir import THEME


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


def build(request: Request, context: Context | None = None) -> Report:
    """Build the site `request` asks for; raise `NanopediaError` and leave `request.out`
    untouched when anything is wrong. `context`: what to reuse from earlier builds (`serve`
    keeps one); None: a new one. Returns once the replaced folders are deleted, unless
    `request.clean_up_later`."""
    try:
        return _build(request, context or Context())
    finally:
        if not request.clean_up_later:
            background.tidy()


def _build(request: Request, context: Context) -> Report:
    request = dataclasses.replace(request, jobs=request.jobs or os.cpu_count() or 1)
    out, report = request.out, Report()
    background.settle()  # the state the last build is saving
    with (
        SiteLock(out, lock_timeout(), request.waiting or _say) as lock,
        _cache_root(request) as root,
    ):
        context.use(
            open_cache(root),
            root / TRASH if request.use_cache else None,
            request.theme,
            compiled=request.theme == THEME or not request.scratch,
        )
        for gone in stale(root):
            background.discard(gone)
        # The site as builds that died left it, mended: holding the lock, this one may.
        if recover(out) or lock.waited:
            request = dataclasses.replace(request, listed=None)  # not the site any more
        for gone in sweep(out, context.trash):
            background.discard(gone)
        with report.stage("config"):
            seen = _inputs(request, context)
        if seen is None:
            report.up_to_date = True
            # a '.yml' file is no input (it is not read), so it is said again here
            report.warnings = misnamed_files(request.entries)
            return report
        with ExitStack() as stack:
            if seen.walking is not None:
                stack.callback(seen.walking.close)  # git log, should the build fail (even here)
            # Before any worker: on an error, the workers stop before its folder is removed.
            writer = stack.enter_context(SiteWriter(out))
            with report.stage("load"):
                loaded = _load(request, context, seen, stack)
            with report.stage("render+write"):
                written = _write(request, context, seen, loaded, writer)
        _save(request, context, seen, loaded, written)
        if writer.garbage is not None:  # after the state, which the next build waits for
            if context.trash is None:  # a scratch cache: nowhere to leave it out of sight
                shutil.rmtree(writer.garbage, ignore_errors=True)
            else:
                background.discard(writer.garbage)
    report.entries, report.pages = len(loaded.by_id), len(written.keys)
    report.reused, report.rendered, report.warnings = (
        loaded.reused,
        written.rendered,
        loaded.warnings,
    )
    return report


def _cache_root(request: Request) -> AbstractContextManager[Path]:
    """The cache's folder; without the cache, a scratch one (removing even an empty folder can
    wait a tenth of a second for the file system's journal after a large write, so only
    then)."""
    if request.use_cache:
        return nullcontext(request.cache_root or Path(CACHE_DIR))
    return _scratch_cache()


@contextmanager
def _scratch_cache() -> Iterator[Path]:
    with TemporaryDirectory(prefix="nanopedia-cache-") as root:
        yield Path(root)


@dataclass(frozen=True, slots=True)
class _Seen:
    """The inputs of a build that has something to do, and what the last build left."""

    config: Config
    theme: bytes
    """The hash of the theme's files."""
    setting: str
    walking: gitdates.Walking | None
    history: Mapping[str, Dates]
    dated_by: str
    names: list[str]
    stamps: dict[str, tuple[int, int, int, bytes]]
    hashes: dict[str, bytes]
    inputs: str
    current: dict[str, tuple[int, int]]
    """The site's files as found (size, mtime_ns), or {} when there is no site."""
    state: State | None
    last: rewrite.Last
    """What the last build wrote that is still as it wrote it."""


def _inputs(request: Request, context: Context) -> _Seen | None:
    """Step 1: the settings and the fingerprint of every input; None when they are the last
    build's and its site is intact (nothing to do)."""
    config = site_config.read(request.config)
    theme = theme_version(request.theme)
    setting = _setting(config, request.theme, theme)
    walking: gitdates.Walking | None
    history: Mapping[str, Dates]
    if request.dates is None:
        walking = _history(request, context)
        history, dated_by = walking, walking.head
    else:
        walking, history, dated_by = None, request.dates, repr(sorted(request.dates.items()))
    dated_by = repr((dated_by, gitdates.fallback()))
    state, warm = (
        saved.load(context.build_cache, site_key(request.out), context.states)
        if request.use_cache and not request.scratch
        else (None, False)
    )
    listed, changed = request.listed, request.changed
    names = listed.names if listed else entry_names(request.entries)
    trust = set(names) - {p.name for p in changed} if changed is not None and warm else set()
    stamps, hashes = file_hashes(
        request.entries, names, state.stamps if state else {}, trust, listed
    )
    inputs = key(
        repr((setting, display(request.out), dated_by)).encode(),
        tags_hash(request.entries),
        *(f"{n}\0".encode() + hashes[n] for n in names),
    )
    same_folder = state is not None and state.folder == folder_id(request.out)
    current = (
        dict(state.manifest)
        if trust and state and same_folder
        else listed.site
        if listed
        else site_files(request.out)
    )
    if not (request.out / MARKER).exists():
        current = {}
    intact = same_folder and state is not None and current == state.manifest
    if intact and state is not None and state.inputs == inputs:
        if walking is not None:
            walking.close()
        return None
    if state is None or intact:  # (usual) every file as the last build left it
        previous = state.pages if state else {}
        spans = state.spans if state else {}
    else:
        trusted = {p for p, v in current.items() if state.manifest.get(p) == v}
        previous = {p: k for p, k in state.pages.items() if p in trusted}
        spans = {p: t for p, t in state.spans.items() if p in trusted}
    located = {name: (p, *span) for p, table in spans.items() for name, span in table.items()}
    last = (
        rewrite.Last(
            pages=previous,
            entries={k.node.id: k for k in state.entries.values()},
            also=state.also,
            spans=spans,
            located=located,
        )
        if state
        else rewrite.Last(pages={}, entries={}, also=None, spans={}, located={})
    )
    return _Seen(
        config=config,
        theme=theme,
        setting=setting,
        walking=walking,
        history=history,
        dated_by=dated_by,
        names=names,
        stamps=stamps,
        hashes=hashes,
        inputs=inputs,
        current=current,
        state=state,
        last=last,
    )


@dataclass(frozen=True, slots=True)
class _Loaded:
    """Every entry, linked."""

    links: Links
    kept: dict[str, Kept]
    """Entry file name to what is kept of it."""
    by_id: dict[str, Kept]
    """The same by entry id, sorted."""
    fresh: dict[str, dict[str, bytes]]
    """Records of the entries loaded in this build (dated), by entry id."""
    postings: dict[str, search.Postings]
    warnings: list[Problem]
    warned: set[str]
    """Entry files with warnings (loaded again next time, to report them again)."""
    reused: int
    """Entries whose parsed and rendered form came from the last build or the cache."""


def _load(request: Request, context: Context, seen: _Seen, stack: ExitStack) -> _Loaded:
    """Step 2: load what changed, keep the rest, link all; raise on any error."""
    fallback = gitdates.fallback()
    prefix = display_prefix(request.entries)
    state = seen.state
    known = state.entries if state else {}
    old_stamps = state.stamps if state else {}
    # Records of the last build no trusted joined file holds (usually none).
    lost = {n for k in known.values() for n in k.names}
    lost.difference_update(seen.last.located.keys(), (EMPTY,))
    kept: dict[str, Kept] = {}
    # Same history: an entry of the same bytes has the same dates.
    redated = state is None or state.dated_by != seen.dated_by
    for name in seen.names:
        old = known.get(name)
        if old is None:
            continue
        stamp = old_stamps.get(name)
        same = (
            stamp is not None and stamp[3] == seen.hashes[name] and old.node.path == prefix + name
        )
        if (
            (same or old.key == key(f"{prefix}{name}".encode(), seen.hashes[name]))
            and (
                not redated
                or old.dates
                == gitdates.entry_dates(seen.history, old.node.id, old.node.aliases, fallback)
            )
            and not (lost and not lost.isdisjoint(old.names))
        ):
            kept[name] = old
    todo = [request.entries / n for n in seen.names if n not in kept]
    # Forked now, while this process is small, the workers also render the pages.
    stack.enter_context(context.workers(request.jobs or 1, len(todo), request.parallel_min))
    loaded = list(
        context.map(
            partial(per_entry.load_one, context),
            [(p, known[p.name].key if p.name in known else None) for p in todo],
        )
    )
    tags, tags_doc, problems = load_tags(request.entries)
    problems += misnamed_files(request.entries)
    parsed: dict[str, Parsed] = {}
    invalid: set[str] = set()
    reused = len(kept)
    for path, (one, found, from_cache) in zip(todo, loaded, strict=True):
        problems += found
        reused += from_cache
        if one is None:
            invalid.add(path.stem)
        else:
            parsed[path.name] = one
    nodes = [k.node for k in kept.values()] + [p.node for p in parsed.values()]
    links, linked = _relink(state, known, parsed, nodes, tags) or link(
        nodes, tags, tags_doc, frozenset(invalid)
    )
    problems = sorted(problems + linked, key=Problem.sort_key)
    if any(p.severity == "error" for p in problems):
        raise NanopediaError(problems)
    fresh: dict[str, dict[str, bytes]] = {}
    for name, one in parsed.items():
        kept[name], fresh[one.node.id] = _keep(
            one, gitdates.entry_dates(seen.history, one.node.id, one.node.aliases, fallback)
        )
    postings = {one.node.id: one.postings for one in parsed.values()}
    by_id = {k.node.id: k for k in sorted(kept.values(), key=lambda k: k.node.id)}
    return _Loaded(
        links=links,
        kept=kept,
        by_id=by_id,
        fresh=fresh,
        postings=postings,
        warnings=problems,
        warned={p.location.path for p in problems},
        reused=reused,
    )


def _write(
    request: Request, context: Context, seen: _Seen, loaded: _Loaded, writer: SiteWriter
) -> _Written:
    """Step 3: plan every file, write those whose key changed, and commit the new site; also
    its manifest."""
    site = _site_inputs(request, seen, loaded)
    last = seen.last
    if (
        seen.state is None
        or seen.state.tags != site.links.tags
        or seen.state.setting != site.setting
    ):  # every page may show them: none kept unseen
        last = dataclasses.replace(last, also=None)
    written = rewrite.write(context, request, writer, site, last)
    writer.commit(context.trash)
    manifest = (
        updated_manifest(request.out, seen.current, writer.written, writer.files)
        if seen.current
        else site_files(request.out)
    )
    return _Written(
        keys=written.keys,
        spans=written.spans,
        also=written.also,
        rendered=written.rendered,
        manifest=manifest,
        setting=site.setting,
    )


@dataclass(frozen=True, slots=True)
class _Written:
    """What the site's files were written with, for the next build's state."""

    keys: dict[str, str]
    """Every file of the site to its key."""
    spans: dict[str, dict[str, tuple[int, int]]]
    """Every joined file's record spans."""
    also: dict[str, tuple[str, ...]]
    """Every entry's suggestions."""
    rendered: int
    """Files rendered and written (the others were kept)."""
    manifest: dict[str, tuple[int, int]]
    """Every file of the site to its (size, mtime_ns)."""
    setting: str
    """The settings every key holds."""


def _site_inputs(request: Request, seen: _Seen, loaded: _Loaded) -> rewrite.SiteInputs:
    """What every file is planned from. The settings are the file's, with no feeds when no
    entry is dated (every page links to the feeds it has)."""
    config, setting = seen.config, seen.setting
    if not any(k.dates for k in loaded.by_id.values()):
        config = dataclasses.replace(config, feeds=False)
        setting = _setting(config, request.theme, seen.theme)
    return rewrite.SiteInputs(
        links=loaded.links,
        entries=loaded.by_id,
        cards={i: k.card for i, k in loaded.by_id.items()},
        fresh=loaded.fresh,
        config=config,
        theme=request.theme,
        setting=setting,
        postings=loaded.postings,
    )


def _setting(config: Config, theme: Path, version: bytes) -> str:
    """What every key holds beside the page's inputs: the settings, the theme and the hash of
    its files."""
    return repr((config, theme, version))


def _save(
    request: Request, context: Context, seen: _Seen, loaded: _Loaded, written: _Written
) -> None:
    """Step 4: remember what was written. The state is locked for saving before the site is
    released, so the next build of it reads this state."""
    cache = context.build_cache
    if request.use_cache and seen.walking is not None:
        _remember(request, cache, seen.walking)
    if not request.use_cache or request.scratch:
        return
    where = site_key(request.out)
    state = State(
        version=saved.VERSION,
        inputs=seen.inputs,
        stamps=seen.stamps,
        entries={n: k for n, k in loaded.kept.items() if k.node.path not in loaded.warned},
        pages=written.keys,
        spans=written.spans,
        manifest=written.manifest,
        folder=folder_id(request.out),
        setting=written.setting,
        tags=loaded.links.tags,
        also=written.also,
        links=dataclasses.replace(loaded.links, nodes={}),
        dated_by=seen.dated_by,
    )
    background.later(
        saved.save,
        cache,
        where,
        state,
        seen.state,
        held=saved.hold(cache, where),
        remembered=context.states,
    )


TRASH = "trash"
"""The folder of the cache that old sites are moved to, to be deleted in the background."""


def _say(message: str) -> None:
    """Tell the person at the terminal (serve and bundle build too, so not through the CLI)."""
    print(f"nanopedia: {message}", file=sys.stderr, flush=True)


def _history(request: Request, context: Context) -> gitdates.Walking:
    """The git dates of the entries, walking only the commits made since the last build's
    walk; `git log` runs while the entries load."""
    walked = context.build_cache.get("git", _walk_key(request.entries), gitdates.Walk)
    return gitdates.start(request.entries, walked)


def _remember(request: Request, cache: Cache, walking: gitdates.Walking) -> None:
    """Keep a walk that read new commits for the next build."""
    walk = walking.walk()
    if walk is not None and walking.read:
        background.later(cache.put, "git", _walk_key(request.entries), walk)


def _walk_key(entries: Path) -> str:
    return key(b"git", str(entries.resolve()).encode())


def _relink(
    state: State | None,
    known: Mapping[str, Kept],
    parsed: Mapping[str, Parsed],
    nodes: list[Node],
    tags: dict[str, Tag],
) -> tuple[Links, list[Problem]] | None:
    """The last build's links, when no entry was added or removed and none of the loaded ones
    changed what it links to (linking 10,000 entries took a tenth of a second): only the nodes,
    whose positions may have moved, are new."""
    if (
        state is None
        or state.links is None
        or state.tags != tags
        or len(nodes) != len(state.links.backlinks)
    ):
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


def _keep(one: Parsed, dates: Dates | None) -> tuple[Kept, dict[str, bytes]]:
    """What the state keeps of a freshly loaded entry, and its records with the dates in."""
    data = dict(one.data, export=exports.with_dates(one.data["export"], dates))
    return Kept(
        key=one.key,
        node=one.node,
        card=one.card,
        dates=dates,
        names=tuple(identity(data[kind]) for kind in KINDS),
    ), data
