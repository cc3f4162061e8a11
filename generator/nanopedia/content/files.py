"""What an entries folder holds: the tag registry and the entry files, by name.

Nothing but `os` is imported here: the console script lists the entry files in a process forked
before it imports the rest of the generator (`incremental/inputs.py`).
"""

from __future__ import annotations

import os
from pathlib import Path

TAGS_FILE = "tags.yaml"


def entry_names(root: Path) -> list[str]:
    """The file names of the entries of a directory: every `*.yaml` but the tag registry,
    sorted."""
    try:
        return sorted(n for n in os.listdir(root) if n.endswith(".yaml") and n != TAGS_FILE)
    except OSError:
        return []
