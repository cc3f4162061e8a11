"""The per-entry work of a build: load, validate and render one entry; write one entry page.
Each runs in a worker process when there are many (`Context.map`), with the build's context.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nanopedia.config import Config
from nanopedia.content.catalog import Node, node
from nanopedia.content.corpus import display, load_entry
from nanopedia.content.load import read_file
from nanopedia.errors import NanopediaError, Problem, fail
from nanopedia.incremental.cache import key
from nanopedia.incremental.context import Context
from nanopedia.incremental.write import SiteWriter
from nanopedia.model import Entry
from nanopedia.site import exports, search, views
from nanopedia.site.plan import EntryInputs

KINDS = ("export", "search", "text", "diagnose", "answer")
"""The joined files an entry has a record in: entries.json, search/index.js, a search text
shard, static/diagnose-data.js, search/answers.js."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """What loading one entry gives the corpus-wide stages (the page itself is rendered from the
    entry, read back from the cache)."""

    key: str
    """Cache key of the entry file's path and bytes."""
    node: Node
    card: views.Card
    data: dict[str, bytes]
    """The entry's record of each joined file (`entries.json` without the dates), by kind."""
    postings: search.Postings
    """The entry's terms in the search index (its shard's script is computed from them)."""


def entry_key(path: Path) -> str:
    """The cache key of an entry file: its path and the hash of its bytes."""
    try:
        raw = read_file(path, path.name)
    except NanopediaError:
        raw = b""
    return key(display(path).encode(), hashlib.sha256(raw).digest())


def load_one(
    context: Context, item: tuple[Path, str | None]
) -> tuple[Parsed | None, list[Problem], bool]:
    """Parse, validate and render one entry file, or take it from the cache (then True); the
    second item is the key of the file's last version, if any. The key is hashed from the bytes
    read here, not taken from the caller: a file saved in between must not be cached under its
    former key."""
    path, before = item
    k = entry_key(path)
    hit = cached(context, k)
    if hit is not None:
        return hit[1], [], True
    src, problems = load_entry(path)
    if src is None:
        return None, problems, False
    e = src.entry
    doc = search.document(e)
    text = search.records(doc)
    one = Parsed(
        key=k,
        node=node(src),
        card=views.card(e, context.markdown),
        data={
            "export": exports.export_record(e).encode(),
            "search": text[0],
            "text": text[1],
            "diagnose": exports.diagnose_record(e),
            "answer": text[2],
        },
        postings=search.postings(doc),
    )
    if not problems:
        frags = views.fragments(e, _highlighted(context, before), context.markdown)
        context.build_cache.put("entries", k, (e, one, frags))
    return one, problems, False


def cached(context: Context, k: str) -> tuple[Entry, Parsed, dict[str, Any]] | None:
    """An entry's cached (entry, what loading it gave, rendered fragments), or None: missing,
    damaged, or not of that shape (the cache is a file anyone can write; never trust its type)."""
    hit = context.build_cache.get("entries", k, tuple)
    if (
        hit is None
        or len(hit) != 3
        or not isinstance(hit[0], Entry)
        or not isinstance(hit[1], Parsed)
        or not isinstance(hit[2], dict)
    ):
        return None
    return hit


def _highlighted(context: Context, k: str | None) -> dict[tuple[str, str], str]:
    """The highlighted code (examples, repro scripts, fix lines) of an entry's cached version, by
    (code, language): an edit that leaves them alone runs no Pygments lexer (the first use of one
    compiles its patterns, a tenth of a second for Python's)."""
    hit = cached(context, k) if k else None
    if hit is None:
        return {}
    entry, _, frags = hit
    return {
        (code, language): frags[key]
        for key, code, language in views.highlighted_sources(entry)
        if key in frags
    }


def reload(path: str, k: str) -> Entry:
    """The entry of cache key `k`, from its file: its cached form is gone (removed meanwhile, or
    never cached for its warnings). Fails when the file no longer has those bytes."""
    src = load_entry(Path(path))[0] if entry_key(Path(path)) == k else None
    if src is None:
        fail(path, "E042", "the entry changed while the site was being built", "build again")
    return src.entry


@dataclass(frozen=True, slots=True)
class PageTask:
    """One entry page to render: small, so it travels to a worker."""

    path: str
    """The entry file, to load again should its cached form have vanished meanwhile."""
    inputs: EntryInputs


def write_entry_page(
    context: Context, writer: SiteWriter, config: Config, theme: Path, task: PageTask
) -> str:
    """Render and write one entry page (in a worker for large corpora); return its path."""
    inputs = task.inputs
    hit = cached(context, inputs.source)
    if hit is not None:
        entry, _, frags = hit
    else:
        entry = reload(task.path, inputs.source)
        frags = views.fragments(entry, markdown=context.markdown)
    page = views.entry_page(entry, inputs.near, config, frags, inputs.dates)
    writer.write(page.path, context.templates[theme].render(page))
    return page.path
