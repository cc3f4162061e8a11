"""Nanopedia: validate failure entries and publish them as a static, offline-first site.

The public API, imported on first use so that `nanopedia` (the console script) starts fast:

- `gather(folder)`: every entry of a folder loaded, validated and linked, with its problems;
- `build(Request(entries, out, ...))`: the site, incrementally (`Request`: what to build);
- `diagnose(source, entries=None)`: the entries log text, log files, run folders (error files,
  Flight Recorder dumps) or an exception point at, best first, as `diagnose --format json` shows
  them (`Result`);
- `Problem`: the one located error type every stage reports through.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from nanopedia.diagnosis.result import Result

__version__ = "0.1.0"
__all__ = ["Problem", "Request", "build", "diagnose", "gather"]

_LAZY = {
    "gather": ("nanopedia.content.corpus", "gather"),
    "build": ("nanopedia.incremental.pipeline", "build"),
    "Request": ("nanopedia.incremental.context", "Request"),
    "Problem": ("nanopedia.errors", "Problem"),
}


def diagnose(
    source: str | bytes | os.PathLike[str] | Sequence[str | os.PathLike[str]] | BaseException,
    entries: str | Path | None = None,
    *,
    name: str | None = None,
    base_url: str | None = None,
) -> Result:
    """Diagnose against the shipped encyclopedia (or the entries folder `entries`; entries that
    fail to load are left out, named in `Result.skipped`).

    `source` is what to read: log text (`str` or `bytes`), a path, or a list of paths (path
    strings too), or an exception, read as the traceback Python prints for it
    (`traceback.format_exception`). Paths are read as `nanopedia diagnose` reads them: log
    files (one per rank, or one combined), torchelastic error files (`error.json`), Flight
    Recorder JSON dumps (`rank3.json`), and run folders (every log, error file and dump below
    them); an error file or dump that cannot be read raises `NanopediaError`, each located. A
    `str` is always text, never a path: pass `Path("job.log")` or `["job.log"]` for a file.
    `name` is what evidence lines of a text or an exception cite as their file (`rank3` gives
    them rank 3); `base_url` is where the links point. The catalogue is the CLI's compiled one
    (cached). `Result.as_json()` is what `nanopedia diagnose --format json` prints for the same
    input, `unmatched` included.
    """
    from nanopedia.diagnosis import catalogue, result
    from nanopedia.incremental.catalogue import user_store
    from nanopedia.theme_dir import locate_entries

    root = Path(entries) if entries else locate_entries()
    loaded = catalogue.load(root, user_store())
    usable, skipped = list(loaded.entries), list(loaded.skipped)
    if isinstance(source, BaseException):
        text = result.exception_text(source).encode("utf-8", "replace")
        return result.from_texts([(name or result.EXCEPTION_NAME, text)], usable, base_url, skipped)
    if isinstance(source, str | bytes):
        data = source.encode("utf-8", "replace") if isinstance(source, str) else source
        return result.from_texts([(name or result.TEXT_NAME, data)], usable, base_url, skipped)
    if isinstance(source, os.PathLike):
        return result.from_paths([os.fspath(source)], usable, base_url, skipped)
    if isinstance(source, Sequence):
        paths = cast("Sequence[str | os.PathLike[str]]", source)  # str, bytes: taken above
        return result.from_paths([os.fspath(p) for p in paths], usable, base_url, skipped)
    raise TypeError(
        f"nanopedia.diagnose() reads text, a path, a list of paths or an exception, "
        f"not {type(source).__name__}"
    )


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nanopedia' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    return getattr(importlib.import_module(module), attr)
