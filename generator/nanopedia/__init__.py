"""Nanopedia: validate failure entries and publish them as a static, offline-first site.

The public API, imported on first use so that `nanopedia` (the console script) starts fast:

- `gather(folder)`: every entry of a folder loaded, validated and linked, with its problems;
- `build(Request(entries, out, ...))`: the site, incrementally (`Request`: what to build);
- `diagnose(paths, entries=None)`: the entries a set of log files points at, best first;
- `Problem`: the one located error type every stage reports through.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nanopedia.diagnosis.rank import Diagnosis

__version__ = "0.1.0"
__all__ = ["Problem", "Request", "build", "diagnose", "gather"]

_LAZY = {
    "gather": ("nanopedia.content.corpus", "gather"),
    "build": ("nanopedia.incremental.pipeline", "build"),
    "Request": ("nanopedia.incremental.context", "Request"),
    "Problem": ("nanopedia.errors", "Problem"),
}


def diagnose(paths: list[str | Path], entries: str | Path | None = None) -> Diagnosis:
    """Diagnose log files (one per rank, or one combined) against the shipped encyclopedia, or
    against the entries folder `entries`; entries that fail to load are left out."""
    from nanopedia.diagnosis import catalogue, rank, scan
    from nanopedia.incremental.catalogue import user_store
    from nanopedia.theme_dir import locate_entries

    root = Path(entries) if entries else locate_entries()
    matcher = scan.Matcher(catalogue.load(root, user_store()).entries)
    return rank.diagnose([scan.scan_file(str(p), matcher) for p in paths])


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nanopedia' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    return getattr(importlib.import_module(module), attr)
