"""What a build is asked to do (`Request`: paths and settings, frozen) and what it works with
(`Context`: the cache, the worker pool, the markdown memo, the compiled templates, the states
this process saved), the two values `pipeline.build` hands its four steps.

A context may outlive a build: `serve` keeps one, so its rebuilds find the templates compiled
and the texts rendered; jinja hangs its caches on its `Environment` the same way. Nothing else in
`site/` or `incremental/` keeps anything between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from nanopedia.incremental import background
from nanopedia.incremental.cache import Cache
from nanopedia.incremental.inputs import Listing
from nanopedia.incremental.state import Remembered
from nanopedia.model import Dates
from nanopedia.site.markdown import Markdown
from nanopedia.site.render import Templates
from nanopedia.theme_dir import THEME

PARALLEL_MIN = 200
"""Below this many entries to load or pages to render, worker processes cost more than they save."""
CHUNK = 16

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Request:
    """One build: where from, where to, and how."""

    entries: Path
    out: Path
    config: Path | None = None
    """The settings file (`nanopedia.toml`); None: the defaults."""
    use_cache: bool = True
    """False: a scratch cache, deleted after the build (`--no-cache`)."""
    jobs: int | None = None
    """Worker processes; None: one per core."""
    cache_root: Path | None = None
    """The cache folder; None: `.nanopedia-cache` in the working folder."""
    theme: Path = THEME
    """The templates and static files (the single-file bundle swaps its base template)."""
    dates: Mapping[str, Dates] | None = None
    """File stem to dates; None: the git history of `entries`. Tests pass fixed ones so a
    golden site does not change with every commit of its fixtures."""
    changed: Collection[Path] | None = None
    """From `serve`'s file watcher: the entry files changed since the last build of this
    process. The others are not stat'ed, and the site is taken to be as that build left it
    (at 10,000 entries, the two scans were a fifth of a rebuild)."""
    listed: Listing | None = None
    """The entry files and the site as the caller found them (the console script, while it
    imported)."""
    scratch: bool = False
    """`out` is a temporary folder (a bundle's), so no state is kept for it."""
    waiting: Callable[[str], None] | None = None
    """Told when another build of the site holds it (None: stderr)."""
    parallel_min: int = PARALLEL_MIN
    """Fewer entries to load or pages to render than this, and no worker process is forked."""
    clean_up_later: bool = False
    """The replaced folders are deleted in the background and waited for before `build`
    returns (no folder of the cache disappears under the caller's walk of it), unless this
    (`serve`, which reloads its tabs at once; the console script's build queues the deletions
    for a detached process instead)."""


@dataclass(eq=False)
class Context:
    """What builds work with: the cache, the worker pool while one runs, and what rendering
    remembers (a markdown memo, each theme's compiled templates). One per build unless the
    caller keeps one across builds (`serve`); a forked worker gets its parent's."""

    markdown: Markdown = field(default_factory=Markdown)
    templates: dict[Path, Templates] = field(default_factory=dict)
    """Each theme's templates, compiled once."""
    states: Remembered = field(default_factory=dict)
    """The state file each build of this context saved, with its stamp: `serve` does not read
    back what it wrote (unpickling it took a third of a second at 10,000 entries)."""
    cache: Cache | None = None
    """The cache of the build that runs (set before any worker forks, so they share it)."""
    trash: Path | None = None
    """The cache's folder for old sites, deleted in the background; None with a scratch cache."""
    pool: Any = None
    """The worker pool, while one runs."""

    def use(self, cache: Cache, trash: Path | None, theme: Path, compiled: bool) -> None:
        """Start a build: entries are loaded from and cached in `cache`, old sites moved to
        `trash`, pages rendered with `theme`, kept compiled in the cache when `compiled`."""
        self.cache, self.trash = cache, trash
        if theme not in self.templates:
            self.templates[theme] = Templates(theme, cache.root / "templates" if compiled else None)

    @property
    def build_cache(self) -> Cache:
        """The cache of the build that runs."""
        if self.cache is None:
            raise RuntimeError("no build runs in this context (Context.use)")
        return self.cache

    @contextmanager
    def workers(self, jobs: int, count: int, least: int = PARALLEL_MIN) -> Iterator[None]:
        """Worker processes for `map`, when `count` items (at least `least`) make them
        worthwhile. For a cold build they are forked before any entry is loaded, so none of
        them carries a copy of the corpus."""
        if jobs <= 1 or count < least or self.pool is not None:
            yield
            return
        import multiprocessing  # here: a rebuild of a few entries never forks, nor imports it

        background.finish()  # no thread may run when the workers fork
        with multiprocessing.get_context("fork").Pool(jobs, _adopt, (self,)) as pool:
            self.pool = pool
            try:
                yield
            finally:
                self.pool = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterable[R]:
        """`map`, over the worker processes when they run."""
        if self.pool is None:
            return map(fn, items)
        return self.pool.imap(fn, items, CHUNK)

    def __reduce__(self) -> tuple[Callable[[], Context], tuple[()]]:
        # A task sent to a worker names the context the worker was forked with (`_adopt`),
        # never a copy of it: the memo and the templates stay where they are.
        return _inherited, ()


def _adopt(context: Context) -> None:
    """In a forked worker: the context it was forked with, for the tasks sent to it."""
    import multiprocessing

    context.pool = None
    multiprocessing.current_process().nanopedia_context = context  # type: ignore[attr-defined]


def _inherited() -> Context:
    import multiprocessing

    found: Context = multiprocessing.current_process().nanopedia_context  # type: ignore[attr-defined]
    return found
