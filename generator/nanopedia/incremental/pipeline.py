"""`nanopedia build`: validated entries to a cross-linked static site, as a short list of steps.

inputs -> load -> write -> remember:

- inputs: the settings and a fingerprint of every entry file (one whose size, mtime and inode the
  last build saw is not read again). Unchanged inputs and an intact site: nothing to do.
- load: an entry the last build saw with the same bytes and dates keeps its `Kept` summary from
  the build state; the others are parsed, validated and rendered, or taken from the per-entry
  cache (`workers`), on every core when there are many. Then every entry's `Node` is linked; no
  entry is read for it.
- write: every file of the site is planned with a key, a hash of everything it shows; a file
  whose key is the one the last build wrote is kept, the others are rendered (`pages`). The new
  folder takes the old one's place in one step (`write`).
- remember: the build state, for the next build, saved in the background.

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
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

from nanopedia import config as site_config
from nanopedia.config import Config
from nanopedia.content.catalog import Links, Node, link
from nanopedia.content.corpus import display, display_prefix, load_tags, misnamed_files
from nanopedia.content.files import entry_names
from nanopedia.errors import NanopediaError, Problem
from nanopedia.incremental import background, gitdates, pages, workers
from nanopedia.incremental import state as saved
from nanopedia.incremental.cache import CACHE_DIR, Cache, key, open_cache, stale
from nanopedia.incremental.inputs import Listing, site_files
from nanopedia.incremental.lock import SiteLock, lock_timeout, recover, sweep
from nanopedia.incremental.stamps import (
    file_hashes,
    folder_id,
    site_key,
    tags_hash,
    theme_version,
    updated_manifest,
)
from nanopedia.incremental.state import Kept, State
from nanopedia.incremental.workers import KINDS, Parsed
from nanopedia.incremental.write import MARKER, SiteWriter, Span
from nanopedia.model import Dates, Tag
from nanopedia.site import exports, search
from nanopedia.site.joined import EMPTY, identity
from nanopedia.site.render import THEME, keep_compiled


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


def build(entries: Path, out: Path, config_path: Path | None = None, use_cache: bool = True,
          jobs: int | None = None, cache_root: Path | None = None,
          theme: Path = THEME,
          dates: Mapping[str, Dates] | None = None,
          changed: Collection[Path] | None = None, listed: Listing | None = None,
          scratch: bool = False, waiting: Callable[[str], None] | None = None,
          clean_up_later: bool = False) -> Report:
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
    `waiting` is told when another build of the site holds it (by default, stderr).
    The replaced folders are deleted in the background and waited for before this returns (no
    folder of the cache disappears under the caller's walk of it), unless `clean_up_later`
    (`serve`, which reloads its tabs at once; the console script's build queues the deletions
    for a detached process instead)."""
    try:
        return _build(entries, out, config_path, use_cache, jobs, cache_root, theme, dates,
                      changed, listed, scratch, waiting)
    finally:
        if not clean_up_later:
            background.tidy()


def _build(entries: Path, out: Path, config_path: Path | None, use_cache: bool,
           jobs: int | None, cache_root: Path | None, theme: Path,
           dates: Mapping[str, Dates] | None, changed: Collection[Path] | None,
           listed: Listing | None, scratch: bool,
           waiting: Callable[[str], None] | None) -> Report:
    report = Report()
    background.settle()  # the state the last build is saving
    # Without the cache, a scratch one (removing even an empty folder can wait a tenth of a
    # second for the file system's journal after a large write, so only then).
    with SiteLock(out, lock_timeout(), waiting or _say) as lock, \
            nullcontext(cache_root or CACHE_DIR) if use_cache else \
            TemporaryDirectory(prefix="nanopedia-cache-") as root:
        run = _Run(entries, out, theme, jobs or os.cpu_count() or 1, use_cache, scratch,
                   workers.use(open_cache(Path(root))),
                   Path(root) / TRASH if use_cache else None, report)
        for gone in stale(Path(root)):
            background.discard(gone)
        # The site as builds that died left it, mended: holding the lock, this one may.
        if recover(out) or lock.waited:
            listed = None  # what was listed before is not the site any more
        for gone in sweep(out, run.trash):
            background.discard(gone)
        if theme == THEME or not scratch:  # a bundle's copy of the theme is gone next time
            keep_compiled(run.cache.root / "templates", theme)
        with report.stage("config"):
            seen = _inputs(run, config_path, dates, changed, listed)
        if seen is None:
            report.up_to_date = True
            return report
        with ExitStack() as stack:
            if seen.walking is not None:
                stack.callback(seen.walking.close)  # git log, should the build fail (even here)
            # Before any worker: on an error, the workers stop before its folder is removed.
            writer = stack.enter_context(SiteWriter(out))
            with report.stage("load"):
                loaded = _load(run, seen, stack)
            with report.stage("render+write"):
                site = _site(run, seen, loaded)
                written, manifest = _write(run, seen, site, writer)
        _save(run, seen, loaded, site.setting, written, manifest)
        if writer.garbage is not None:  # after the state, which the next build waits for
            if run.trash is None:  # a scratch cache: nowhere to leave it out of sight
                shutil.rmtree(writer.garbage, ignore_errors=True)
            else:
                background.discard(writer.garbage)
    return report


@dataclass(frozen=True, slots=True)
class _Run:
    """What every step of one build is given."""

    entries: Path
    out: Path
    theme: Path
    jobs: int
    use_cache: bool
    scratch: bool
    cache: Cache
    trash: Path | None
    """The cache's folder for old sites, deleted in the background; None with a scratch cache."""
    report: Report


@dataclass(frozen=True, slots=True)
class _Seen:
    """The inputs of a build that has something to do, and what the last build left."""

    config: Config
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
    spans: dict[str, dict[str, tuple[int, int]]]
    """The record spans of the last build's joined files that are still as it wrote them."""
    located: dict[str, Span]
    last: pages.Last


def _inputs(run: _Run, config_path: Path | None, dates: Mapping[str, Dates] | None,
            changed: Collection[Path] | None, listed: Listing | None) -> _Seen | None:
    """Step 1: the settings and the fingerprint of every input; None when they are the last
    build's and its site is intact (nothing to do)."""
    config = site_config.read(config_path)
    setting = _setting(config, run.theme)
    walking: gitdates.Walking | None
    history: Mapping[str, Dates]
    if dates is None:
        walking = _history(run)
        history, dated_by = walking, walking.head
    else:
        walking, history, dated_by = None, dates, repr(sorted(dates.items()))
    dated_by = repr((dated_by, gitdates.fallback()))
    state, warm = saved.load(run.cache, site_key(run.out)) \
        if run.use_cache and not run.scratch else (None, False)
    names = listed.names if listed else entry_names(run.entries)
    trust = set(names) - {p.name for p in changed} if changed is not None and warm else set()
    stamps, hashes = file_hashes(run.entries, names, state.stamps if state else {}, trust,
                                  listed)
    inputs = key(repr((setting, display(run.out), dated_by)).encode(), tags_hash(run.entries),
                 *(f"{n}\0".encode() + hashes[n] for n in names))
    same_folder = state is not None and state.folder == folder_id(run.out)
    current = dict(state.manifest) if trust and state and same_folder else \
        listed.site if listed else site_files(run.out)
    if not (run.out / MARKER).exists():
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
    last = pages.Last(previous, {k.node.id: k for k in state.entries.values()}, state.also) \
        if state else pages.Last({}, {}, None)
    return _Seen(config, setting, walking, history, dated_by, names, stamps, hashes, inputs,
                 current, state, spans, located, last)


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
    warned: set[str]
    """Entry files with warnings (loaded again next time, to report them again)."""


def _load(run: _Run, seen: _Seen, stack: ExitStack) -> _Loaded:
    """Step 2: load what changed, keep the rest, link all; raise on any error."""
    fallback = gitdates.fallback()
    prefix = display_prefix(run.entries)
    state = seen.state
    known = state.entries if state else {}
    old_stamps = state.stamps if state else {}
    # Records of the last build no trusted joined file holds (usually none).
    lost = {n for k in known.values() for n in k.names}
    lost.difference_update(seen.located.keys(), (EMPTY,))
    kept: dict[str, Kept] = {}
    # Same history: an entry of the same bytes has the same dates.
    redated = state is None or state.dated_by != seen.dated_by
    for name in seen.names:
        old = known.get(name)
        if old is None:
            continue
        stamp = old_stamps.get(name)
        same = stamp is not None and stamp[3] == seen.hashes[name] and \
            old.node.path == prefix + name
        if (same or old.key == key(f"{prefix}{name}".encode(), seen.hashes[name])) and \
                (not redated or old.dates == gitdates.entry_dates(
                    seen.history, old.node.id, old.node.aliases, fallback)) and \
                not (lost and not lost.isdisjoint(old.names)):
            kept[name] = old
    todo = [run.entries / n for n in seen.names if n not in kept]
    # Forked now, while this process is small, the workers also render the pages.
    stack.enter_context(workers.workers(run.jobs, len(todo)))
    loaded = list(workers.pmap(workers.load_one, [
        (p, known[p.name].key if p.name in known else None) for p in todo]))
    tags, tags_doc, problems = load_tags(run.entries)
    problems += misnamed_files(run.entries)
    parsed: dict[str, Parsed] = {}
    invalid: set[str] = set()
    for path, (one, found, reused) in zip(todo, loaded, strict=True):
        problems += found
        run.report.reused += reused
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
    run.report.warnings = problems
    run.report.entries = len(nodes)
    run.report.reused += len(kept)
    fresh: dict[str, dict[str, bytes]] = {}
    for name, one in parsed.items():
        kept[name], fresh[one.node.id] = _keep(one, gitdates.entry_dates(
            seen.history, one.node.id, one.node.aliases, fallback))
    postings = {one.node.id: one.postings for one in parsed.values()}
    by_id = {k.node.id: k for k in sorted(kept.values(), key=lambda k: k.node.id)}
    return _Loaded(links, kept, by_id, fresh, postings, {p.location.path for p in problems})


def _write(run: _Run, seen: _Seen, site: pages.Site,
           writer: SiteWriter) -> tuple[pages.Written, dict[str, tuple[int, int]]]:
    """Step 3: plan every file, write those whose key changed, and commit the new site; also
    its manifest."""
    last = seen.last
    if seen.state is None or seen.state.tags != site.links.tags or \
            seen.state.setting != site.setting:  # every page may show them: none kept unseen
        last = pages.Last(last.pages, last.entries, None)
    written = pages.write(writer, site, last, seen.spans, seen.located, run.jobs)
    run.report.rendered += written.rendered
    run.report.pages = len(written.keys)
    writer.commit(run.trash)
    manifest = updated_manifest(run.out, seen.current, writer.written, writer.files) \
        if seen.current else site_files(run.out)
    return written, manifest


def _site(run: _Run, seen: _Seen, loaded: _Loaded) -> pages.Site:
    """What every file is planned from. The settings are the file's, with no feeds when no
    entry is dated (every page links to the feeds it has)."""
    config, setting = seen.config, seen.setting
    if not any(k.dates for k in loaded.by_id.values()):
        config = dataclasses.replace(config, feeds=False)
        setting = _setting(config, run.theme)
    return pages.Site(loaded.links, loaded.by_id, {i: k.card for i, k in loaded.by_id.items()},
                      loaded.fresh, config, run.theme, setting, loaded.postings)


def _setting(config: Config, theme: Path) -> str:
    """What every key holds beside the page's inputs: the settings, the theme and its files."""
    return repr((config, theme, theme_version(theme)))


def _save(run: _Run, seen: _Seen, loaded: _Loaded, setting: str, written: pages.Written,
          manifest: dict[str, tuple[int, int]]) -> None:
    """Step 4: remember what was written. The state is locked for saving before the site is
    released, so the next build of it reads this state."""
    if run.use_cache and seen.walking is not None:
        _remember(run, seen.walking)
    if not run.use_cache or run.scratch:
        return
    where = site_key(run.out)
    state = State(saved.VERSION, seen.inputs, seen.stamps,
                  {n: k for n, k in loaded.kept.items() if k.node.path not in loaded.warned},
                  written.keys, written.spans, manifest, folder_id(run.out), setting,
                  loaded.links.tags, written.also, dataclasses.replace(loaded.links, nodes={}),
                  dated_by=seen.dated_by)
    background.later(saved.save, run.cache, where, state, seen.state,
                     held=saved.hold(run.cache, where))


TRASH = "trash"
"""The folder of the cache that old sites are moved to, to be deleted in the background."""


def _say(message: str) -> None:
    """Tell the person at the terminal (serve and bundle build too, so not through the CLI)."""
    print(f"nanopedia: {message}", file=sys.stderr, flush=True)


def _history(run: _Run) -> gitdates.Walking:
    """The git dates of the entries, walking only the commits made since the last build's
    walk; `git log` runs while the entries load."""
    return gitdates.start(run.entries, run.cache.get("git", _walk_key(run.entries), gitdates.Walk))


def _remember(run: _Run, walking: gitdates.Walking) -> None:
    """Keep a walk that read new commits for the next build."""
    walk = walking.walk()
    if walk is not None and walking.read:
        background.later(run.cache.put, "git", _walk_key(run.entries), walk)


def _walk_key(entries: Path) -> str:
    return key(b"git", str(entries.resolve()).encode())


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


def _keep(one: Parsed, dates: Dates | None) -> tuple[Kept, dict[str, bytes]]:
    """What the state keeps of a freshly loaded entry, and its records with the dates in."""
    data = dict(one.data, export=exports.with_dates(one.data["export"], dates))
    return Kept(one.key, one.node, one.card, dates,
                tuple(identity(data[kind]) for kind in KINDS)), data
