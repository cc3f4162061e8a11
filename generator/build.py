"""`nanopedia build`: validated entries to a cross-linked static site, as one short pipeline.

Work that depends on one entry alone (parsing, validation, markdown, highlighting) is cached by the
entry's content hash and, for large corpora, spread over every core; pages are then rendered from
the linked catalog and written through the one writer, which swaps the site in at the end.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, TypeVar

from . import config as site_config
from . import feed, gitdates, search, views
from .cache import CACHE_DIR, Cache, key
from .catalog import Catalog
from .config import Config
from .corpus import Loaded, display, gather, load_entry
from .errors import NanopediaError, Problem, problem
from .load import Document
from .render import THEME, render, static_files
from .validate import Source, markdown_fields
from .write import MARKER, SiteWriter

PARALLEL_MIN = 200
"""Below this many entries, starting worker processes costs more than it saves."""
CHUNK = 16

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Report:
    """What a build did, for the CLI to print."""

    entries: int = 0
    pages: int = 0
    reused: int = 0
    """Entries whose parsed and rendered form came from the cache."""
    up_to_date: bool = False
    """Nothing changed since the last build and the site is intact: nothing was written."""
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
class Extras:
    """What the loader computes beside the `Source`, from the same entry."""

    key: str
    card: views.Card
    export: str
    search: search.Document
    """The entry's search index data (`search.document`)."""
    cached: bool
    """Taken from the cache rather than computed in this build."""


# The build cache, set before the workers fork so they share it.
_cache: Cache


def build(entries: Path, out: Path, config_path: Path | None = None, use_cache: bool = True,
          jobs: int | None = None, cache_root: Path | None = None,
          theme: Path = THEME,
          dates: Mapping[str, gitdates.Dates] | None = None) -> Report:
    """Build the site from `entries` into `out`; raise `NanopediaError` and leave `out` untouched
    when anything is wrong. `theme` holds the templates and static files (the single-file
    bundle swaps its base template).
    `dates` (file stem to dates) defaults to the git history of `entries`;
    tests pass fixed ones so a golden site does not change with every commit of its fixtures."""
    report = Report()
    jobs = jobs or os.cpu_count() or 1
    with TemporaryDirectory(prefix="nanopedia-cache-") as scratch:
        root = (cache_root or Path(CACHE_DIR)) if use_cache else Path(scratch)
        global _cache
        _cache = Cache(root)
        # 1. Settings and the fingerprint of every input: unchanged inputs and an intact site
        #    mean there is nothing to do.
        with report.stage("config"):
            config = site_config.read(config_path)
            history = gitdates.history(entries) if dates is None else dates
            inputs = _fingerprint(entries, config, out, history)
            if use_cache and _intact(out, _cache.get("builds", inputs)):
                report.up_to_date = True
                return report
        # 2. Load, validate and link every entry (cached per file, parallel when large).
        #    The worker processes start now, while this process is small.
        with _workers(jobs, sum(1 for _ in entries.glob("*.yaml"))):
            with report.stage("load"):
                extras: dict[str, Extras] = {}
                catalog, problems = gather(entries, load=_loader(extras))
                errors = [p for p in problems if p.severity == "error"]
                if errors:
                    raise NanopediaError(problems)
                report.warnings = problems
                report.entries = len(catalog.sources)
                report.reused = sum(e.cached for e in extras.values())
                fallback = gitdates.fallback()
                dated = {i: gitdates.entry_dates(history, i, s.entry.aliases, fallback)
                         for i, s in catalog.by_id.items()}
            # 3. Render every page (entry pages in the workers, which write them too), then
            #    swap the new site in.
            with report.stage("render+write"), SiteWriter(out) as writer:
                previous = _cache.get("pages", _site_key(out)) or {}
                report.pages, pages = _write_site(writer, catalog, config, extras, dated, theme,
                                                  _reusable(out, previous))
                writer.commit()
        # 4. Remember what was written, so an unchanged rebuild can stop at step 1 and an edit
        #    renders only the entry pages whose inputs changed.
        if use_cache:
            manifest = _manifest(out)
            _cache.put("builds", inputs, manifest)
            _cache.put("pages", _site_key(out), {
                path: (k, *manifest[str(out / path)]) for path, k in pages.items()})
    return report


def _fingerprint(entries: Path, config: Config, out: Path,
                 history: Mapping[str, gitdates.Dates]) -> str:
    """Hash of every input file's bytes and every setting that reaches the output (the git dates
    too: a commit changes them without changing a byte of the files)."""
    state = (config, display(out), sorted(history.items()), gitdates.fallback())
    digest = hashlib.sha256(repr(state).encode())
    for name, content in _file_hashes(sorted(entries.glob("*.yaml"))):
        digest.update(name.encode() + b"\0" + content)
    return key(digest.digest())


STAT_TRUST_NS = 2_000_000_000
"""A file modified this recently may change again within its timestamp's tick: hash it anew."""


def _file_hashes(paths: list[Path]) -> Iterator[tuple[str, bytes]]:
    """(name, sha256 of the bytes) of every file; a file whose size, modification time and inode
    are those of the last build is not read again (measured at 10,000 entries: reading and
    hashing 80 MB was most of an unchanged rebuild)."""
    known: dict[str, tuple[int, int, int, bytes]] = _cache.get("stats", "entries") or {}
    seen: dict[str, tuple[int, int, int, bytes]] = {}
    recent = time.time_ns() - STAT_TRUST_NS
    for path in paths:
        info = path.stat()
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
        hit = known.get(str(path))
        content = hit[3] if hit is not None and hit[:3] == stamp else \
            hashlib.sha256(path.read_bytes()).digest()
        if info.st_mtime_ns < recent:
            seen[str(path)] = (*stamp, content)
        yield path.name, content
    if seen != known:
        _cache.put("stats", "entries", seen)


def _manifest(out: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file of the site, to notice a hand-edited one."""
    found: dict[str, tuple[int, int]] = {}
    stack = [out]
    while stack:
        for item in os.scandir(stack.pop()):
            if item.is_dir(follow_symlinks=False):
                stack.append(Path(item.path))
            else:
                info = item.stat(follow_symlinks=False)
                found[item.path] = (info.st_size, info.st_mtime_ns)
    return found


def _intact(out: Path, manifest: dict[str, tuple[int, int]] | None) -> bool:
    return (manifest is not None and (out / MARKER).exists()
            and _manifest(out) == manifest)


_pool: Any = None
"""The build's worker pool, while one runs."""


@contextmanager
def _workers(jobs: int, count: int) -> Iterator[None]:
    """Worker processes for `_map`, when `count` entries make them worthwhile. They are forked
    before any entry is loaded, so none of them carries a copy of the corpus."""
    global _pool
    if jobs <= 1 or count < PARALLEL_MIN:
        yield
        return
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


def _loader(extras: dict[str, Extras]) -> Callable[[list[Path]], list[Loaded]]:
    """A `corpus.Loader` that keeps the cards and export records it computes in `extras`."""

    def load(paths: list[Path]) -> list[Loaded]:
        results = []
        for src, problems, extra in _map(_load_one, paths):
            if src is not None and extra is not None:
                extras[src.entry.id] = extra
            results.append((src, problems))
        return results

    return load


def _load_one(path: Path) -> tuple[Source | None, list[Problem], Extras | None]:
    """Parse, validate and render one entry, or take all three from the cache."""
    try:
        raw = path.read_bytes()
    except OSError:
        raw = b""
    k = key(display(path).encode(), raw)
    hit = _cache.get("entries", k)
    if hit is not None:
        src, extra, _ = hit
        return src, [], extra
    src, problems = load_entry(path)
    if src is None or problems:
        return src, problems, None
    src = _slim(src)
    extra = Extras(k, views.card(src.entry), views.export_record(src.entry),
                   search.document(src.entry), cached=True)
    _cache.put("entries", k, (src, extra, views.fragments(src.entry)))  # one file: opens are slow
    return src, [], Extras(k, extra.card, extra.export, extra.search, cached=False)


_MAY_LINK_ENTRY = re.compile(r"[&\\]|" + r"[\x00-\x20\x7f]*".join("entry:"), re.I)
"""Text that may hold an `entry:` link: the scheme as `markdown.link_scheme` reads it (blanks
and control characters ignored, any case), or an entity or escape that could spell it."""


def _slim(src: Source) -> Source:
    """The source without its parsed YAML data: only the marks linking may report at (the
    marks of texts with no possible entry link were a tenth of the build's memory)."""
    linked = {"id", "aliases", "related", "tags"}
    texts = {where for where, text in markdown_fields(src.entry) if _MAY_LINK_ENTRY.search(text)}
    doc = src.doc
    marks = {p: m for p, m in doc.marks.items() if (p and p[0] in linked) or p in texts}
    return Source(src.entry, Document(doc.path, None, marks, {}, doc.blocks & texts))


def _write_site(writer: SiteWriter, catalog: Catalog, config: Config, extras: dict[str, Extras],
                dated: dict[str, gitdates.Dates | None], theme: Path,
                reusable: dict[str, str]) -> tuple[int, dict[str, str]]:
    """Write every file of the site; return how many, and the key of every entry page.

    Entry pages go to the workers with only what they show of other entries: each worker reads
    its entries back from the cache. A page whose key (a hash of everything it shows) is in
    `reusable` is taken from the previous site as it is."""
    cards = {i: e.card for i, e in extras.items()}
    suggestions = views.Suggestions(catalog)
    setting = repr((config, theme, _theme_version(theme)))
    keys: dict[str, str] = {}

    def tasks() -> Iterator[_PageTask]:
        """Runs beside the workers, which start on the first pages while it makes the rest."""
        for i, src in catalog.by_id.items():
            task = _PageTask(src.doc.path, extras[i].key,
                             views.neighbours(src.entry, catalog, cards, suggestions), dated[i])
            path = f"entries/{i}.html"
            keys[path] = key(setting.encode(), repr((task.key, task.near, task.dates)).encode())
            if reusable.get(path) == keys[path]:
                writer.reuse(path, writer.out / path)
            else:
                yield task

    for _ in _map(partial(_write_entry_page, writer, config, theme), tasks()):
        pass
    count = len(keys)
    for path, data in _other_files(catalog, config, extras, cards, dated, theme):
        writer.write(path, data)
        count += 1
    return count, keys


def _site_key(out: Path) -> str:
    return key(str(out.resolve()).encode())


def _reusable(out: Path, previous: dict[str, tuple[str, int, int]]) -> dict[str, str]:
    """Entry pages of the previous site still as we wrote them (size and mtime): path to key."""
    found = {}
    for path, (k, size, mtime) in previous.items():
        try:
            info = (out / path).stat()
        except OSError:
            continue
        if (info.st_size, info.st_mtime_ns) == (size, mtime):
            found[path] = k
    return found


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
    dates: gitdates.Dates | None


def _write_entry_page(writer: SiteWriter, config: Config, theme: Path, task: _PageTask) -> None:
    """Render and write one entry page (in a worker for large corpora)."""
    hit = _cache.get("entries", task.key)
    if hit is None:  # removed from the cache folder while building
        src, _, extra = _load_one(Path(task.path))
        if src is None or extra is None or extra.key != task.key:
            raise NanopediaError([problem(task.path, 0, 0, "E042",
                                          "the entry changed while the site was being built",
                                          "build again")])
        frags = views.fragments(src.entry)
    else:
        src, _, frags = hit
    page = views.entry_page(src, task.near, config, frags, task.dates)
    writer.write(page.path, render(page, theme))


def _other_files(catalog: Catalog, config: Config, extras: dict[str, Extras],
                 cards: dict[str, views.Card], dated: dict[str, gitdates.Dates | None],
                 theme: Path) -> Iterator[tuple[str, bytes | Iterator[bytes]]]:
    """Every file of the site but the entry pages, as (path, bytes or parts)."""
    others = [views.index_page(catalog, config, cards),
              *views.tag_pages(catalog, config, cards),
              *views.redirect_pages(catalog, config, cards),
              views.diagnose_page(config), views.diagnose_data(catalog),
              views.not_found_page(config), views.search_page(config), views.stylesheet(),
              *feed.feeds(catalog, config, dated)]
    for page in others:
        yield page.path, render(page, theme)
    listed = [p.path for p in others
              if p.template in ("index.html", "tag.html", "tags.html", "diagnose.html")]
    sitemap = views.sitemap(config, listed + [f"entries/{i}.html" for i in catalog.by_id])
    if sitemap is not None:
        yield sitemap.path, render(sitemap)
    yield "entries.json", views.export(
        (views.with_dates(extras[i].export, dated[i]) for i in catalog.by_id), len(catalog.by_id),
        config)
    yield from search.index_files([extras[i].search for i in catalog.by_id], catalog)
    yield from static_files(theme)
