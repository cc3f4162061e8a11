"""Gathering a corpus: every entry file of a directory loaded, validated and linked.

`check`, `build`, `serve` and the MkDocs plugin all start here, so they agree on what is valid.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from nanopedia.content.catalog import Catalog, link_entries
from nanopedia.content.files import TAGS_FILE, entry_names
from nanopedia.content.files import display as display  # where the commands import it from
from nanopedia.content.files import display_prefix as display_prefix
from nanopedia.content.load import Document, read
from nanopedia.content.lookalike import lookalike_problems
from nanopedia.content.validate import Source, check_entry, check_tags, review_problems
from nanopedia.errors import Location, NanopediaError, Problem
from nanopedia.model import Tag


def entry_files(root: Path) -> list[Path]:
    """The entry files of a directory, sorted."""
    return [root / name for name in entry_names(root)]


def _where(path: Path) -> Path:
    """The one name of an entry file, whichever way it was named: its folder resolved, its own
    name kept (every entry file is a regular file, so a symlink is not followed: one that loops
    would make `resolve` raise, one that points elsewhere is refused when read)."""
    return _resolved(path.parent, os.getcwd()) / path.name


@lru_cache(maxsize=64)
def _resolved(folder: Path, cwd: str) -> Path:
    return folder.resolve()


def misnamed_files(root: Path) -> list[Problem]:
    """A warning for each `.yml` file of an entries folder: entries end in `.yaml`, so it is not
    read (`check` reports the same files as errors)."""
    try:
        names = sorted(n for n in os.listdir(root) if n.endswith(".yml"))
    except OSError:
        return []
    return [
        Problem(
            Location(display(root / n), 0, 0),
            "E007",
            "a '.yml' file in the entries folder is not read",
            f"rename it to '{n[:-4]}.yaml'",
            "warning",
        )
        for n in names
    ]


def load_entry(path: Path) -> tuple[Source | None, list[Problem]]:
    """Read and validate one entry file."""
    try:
        doc = read(path, display(path))
    except NanopediaError as err:
        return None, err.problems
    return check_entry(doc, path.stem)


Loaded = tuple[Source | None, list[Problem]]
Loader = Callable[[list[Path]], list[Loaded]]
"""Loads many entry files at once; `build` passes one that is cached and parallel."""


def load_entries(paths: list[Path]) -> list[Loaded]:
    """The plain loader: one file after the other."""
    return [load_entry(p) for p in paths]


def load_tags(root: Path) -> tuple[dict[str, Tag], Document | None, list[Problem]]:
    """Read and validate the tag registry of a corpus directory."""
    path = root / TAGS_FILE
    if not os.path.lexists(path):  # a dangling symlink is there, and refused by `read`
        return {}, None, []
    try:
        doc = read(path, display(path))
    except NanopediaError as err:
        return {}, None, err.problems
    tags, found = check_tags(doc)
    return tags, doc, found


REVIEWS = "reviews"
"""The folder of review records, beside the entries folder: `reviews/<id>.md`."""
_REVIEW_DATE = re.compile(r"^- Date: (\d{4}-\d{2}-\d{2})\b", re.MULTILINE)
_MAX_RECORD = 256 * 1024


def load_reviews(root: Path) -> dict[str, str | None] | None:
    """The review records beside the entries folder `root`: entry id to the date of its
    record's `- Date:` line (None when the record has none, or cannot be read as text); None
    when there is no such folder (entries copied on their own, as a team's MkDocs site does:
    their dates are then shown as given)."""
    folder = root.parent / REVIEWS
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".md"))
    except OSError:
        return None
    found: dict[str, str | None] = {}
    for name in names:
        path = folder / name
        try:
            if not path.is_file() or path.is_symlink():
                continue
            with open(path, "rb") as f:
                text = f.read(_MAX_RECORD).decode("utf-8", "replace")
        except OSError:
            continue
        date = _REVIEW_DATE.search(text)
        found[name[:-3]] = date.group(1) if date else None
    return found


def gather(
    root: Path, files: Iterable[Path] | None = None, load: Loader = load_entries
) -> tuple[Catalog, list[Problem]]:
    """Load, validate and link a corpus directory; return the catalog and every problem found.

    With `files`, only those entries are validated in full, while the rest of the directory is
    still loaded so cross-references resolve; problems are then reported for `files` only.
    """
    tags, tags_doc, found = load_tags(root)
    wanted = {_where(p) for p in files} if files is not None else None
    sources: list[Source] = []
    invalid: set[str] = set()
    paths = {_where(p): p for p in entry_files(root)}
    for p in files or ():
        paths.setdefault(_where(p), p)
    ordered = [path for _, path in sorted(paths.items(), key=lambda item: item[0].parts)]
    for path, (src, problems) in zip(ordered, load(ordered), strict=True):
        if src is not None:
            sources.append(src)
        else:
            invalid.add(path.stem)
        if wanted is None or _where(path) in wanted:
            found.extend(problems)
    catalog, linked = link_entries(sources, tags, tags_doc, frozenset(invalid))
    records = load_reviews(root)
    if records is not None:
        linked += review_problems(sources, records, display_prefix(root.parent / REVIEWS))
    linked += lookalike_problems(
        (src.doc.path, name, getattr(src.entry, name), src.at(name))
        for src in sources
        for name in ("id", "title")
    )
    if wanted is not None:
        shown = {display(p) for p in wanted}
        linked = [p for p in linked if p.location.path in shown]
        found = [
            p for p in found if p.location.path in shown or p.location.path.endswith(TAGS_FILE)
        ]
    return catalog, sorted(found + linked, key=Problem.sort_key)
