"""What an entries folder holds: the tag registry and the entry files, by name.

Nothing but `os`, `functools` and `pathlib` is imported here (diagnosis reads the shipped
catalogue with only these, too): the console script lists the entry files in a process forked
before it imports the rest of the generator (`incremental/inputs.py`).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

TAGS_FILE = "tags.yaml"


def entry_names(root: Path) -> list[str]:
    """The file names of the entries of a directory: every `*.yaml` but the tag registry,
    sorted."""
    try:
        return sorted(n for n in os.listdir(root) if n.endswith(".yaml") and n != TAGS_FILE)
    except OSError:
        return []


def display(path: Path) -> str:
    """How a path is shown in messages: relative to the working directory when below it (a
    symlink is shown where it is, not where it points)."""
    return display_prefix(path.parent) + path.name


def display_prefix(folder: Path) -> str:
    """What `display` puts before the name of a file in `folder`: "" or "entries/"."""
    shown = _display(folder, os.getcwd())
    return "" if shown == "." else f"{shown}/"


@lru_cache(maxsize=64)
def _display(path: Path, cwd: str) -> str:
    """`display` of one path (resolving it is most of the cost: done once per folder)."""
    try:
        return path.resolve().relative_to(Path(cwd).resolve()).as_posix()
    except ValueError:
        return path.as_posix()
