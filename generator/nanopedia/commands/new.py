"""`nanopedia new`: a fresh entry file from the skeleton in `theme/skeleton/entry.yaml`.

The skeleton stubs every section with a `TODO` value; `check` reports exactly those values (E060,
with the field's documentation as the hint), so a contributor's first `check` is a to-do list
rather than a wall of schema errors. Refusals (bad or taken id, unknown tag or category) are
located problems with code E050 so the CLI reports them like any other usage error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

from jinja2 import Environment, StrictUndefined

from nanopedia.content.corpus import display, entry_files
from nanopedia.content.files import TAGS_FILE
from nanopedia.content.load import read
from nanopedia.content.schema import PLACEHOLDER, slugify
from nanopedia.errors import NanopediaError, problem, suggest
from nanopedia.model import MAX_ID, SLUG_PATTERN, Action, Category, Domain, RefKind, Stack
from nanopedia.theme_dir import THEME

SKELETON = THEME / "skeleton" / "entry.yaml"
# YAML, not HTML: nothing to escape, and a missing variable must fail loudly.
_ENV = Environment(autoescape=False, keep_trailing_newline=True, undefined=StrictUndefined)


def skeleton(
    entry_id: str,
    title: str | None = None,
    tags: Sequence[str] = (),
    category: str | None = None,
    template: str | None = None,
) -> str:
    """The text of a new entry: the skeleton with the known values filled in, the rest `TODO`."""
    text = template if template is not None else SKELETON.read_text(encoding="utf-8")
    return _ENV.from_string(text).render(
        id=entry_id,
        # A JSON string is a valid double-quoted YAML scalar, whatever the title contains.
        title=json.dumps(title, ensure_ascii=False) if title else f'"{PLACEHOLDER}: a title"',
        tags=f"[{', '.join(tags)}]" if tags else f"[{PLACEHOLDER}]",
        category=category or PLACEHOLDER,
        categories=", ".join(get_args(Category)),
        stacks=", ".join(get_args(Stack)),
        kinds=", ".join(get_args(RefKind)),
        domains=", ".join(get_args(Domain)),
        actions=", ".join(get_args(Action)),
    )


def _taken(root: Path, entry_id: str) -> str | None:
    """The file that already owns `entry_id` as its id or an alias, or None."""
    path = root / f"{entry_id}.yaml"
    if path.exists() or path.is_symlink():
        return display(path)
    for other in entry_files(root):
        try:
            aliases = read(other).data.get("aliases") or []
        except (NanopediaError, AttributeError):
            continue  # an unreadable or odd file is `check`'s business, not ours
        if isinstance(aliases, list) and entry_id in aliases:
            return f"{display(other)} (as an alias)"
    return None


def create(
    root: Path,
    entry_id: str,
    title: str | None = None,
    tags: Sequence[str] = (),
    category: str | None = None,
) -> Path:
    """Write `root/<entry_id>.yaml` from the skeleton, or raise every reason it cannot be made."""
    where = display(root / f"{entry_id}.yaml")
    found = []
    if not re.fullmatch(SLUG_PATTERN, entry_id) or len(entry_id) > MAX_ID:
        found.append(
            problem(
                where,
                "E050",
                f"'{entry_id}' is not a valid entry id",
                f"use lower-case words joined by hyphens (at most {MAX_ID} characters), "
                f"e.g. '{slugify(entry_id)}'",
            )
        )
    elif (owner := _taken(root, entry_id)) is not None:
        found.append(
            problem(
                where,
                "E050",
                f"entry '{entry_id}' already exists: {owner}",
                "edit that file, or choose another id",
            )
        )
    if not root.is_dir():
        found.append(
            problem(
                display(root),
                "E050",
                "no entries directory here",
                "run this in the repository root or pass --entries DIR",
            )
        )
    known = _tag_names(root)
    for tag in tags:
        if tag not in known:
            found.append(
                problem(
                    display(root / TAGS_FILE),
                    "E050",
                    f"unknown tag '{tag}'",
                    suggest(tag, known) or "add it to entries/tags.yaml first",
                )
            )
    categories = get_args(Category)
    if category is not None and category not in categories:
        found.append(
            problem(
                where,
                "E050",
                f"unknown category '{category}'",
                suggest(category, categories) or f"one of: {', '.join(categories)}",
            )
        )
    if found:
        raise NanopediaError(found)
    path = root / f"{entry_id}.yaml"
    text = skeleton(entry_id, title, tags, category)
    try:
        with path.open("x", encoding="utf-8") as handle:  # "x": never overwrite, even in a race
            handle.write(text)
    except OSError as err:
        raise NanopediaError(
            [problem(where, "E041", f"cannot write the entry: {err.strerror}")]
        ) from None
    return path


def _tag_names(root: Path) -> list[str]:
    """The registered tag slugs (unvalidated: `new` only needs the names)."""
    try:
        data = read(root / TAGS_FILE).data
    except NanopediaError:
        return []
    return sorted(data) if isinstance(data, dict) else []
