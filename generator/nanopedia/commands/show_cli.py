"""`nanopedia show ID`: one entry as plain text, fitted to the terminal.

The entry file is read and validated alone (not the whole corpus); an unknown id fails with a
located E050 problem that suggests the closest id.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from nanopedia.errors import NanopediaError, fail, suggest


def run_show(args: argparse.Namespace) -> int:
    from nanopedia.commands.log_cli import _config_base_url
    from nanopedia.content.corpus import load_entry
    from nanopedia.content.files import entry_names
    from nanopedia.site.terminal import entry_text
    from nanopedia.theme_dir import locate_entries

    root = Path(args.entries) if args.entries else locate_entries()
    if not root.is_dir():
        fail(str(root), "E050", "no such entries directory", "pass --entries DIR")
    ids = [name.removesuffix(".yaml") for name in entry_names(root)]
    if args.id not in ids:
        fail(
            args.id,
            "E050",
            f"no entry '{args.id}' in {root}",
            suggest(args.id, ids) or "the ids are the file names under entries/",
        )
    source, problems = load_entry(root / f"{args.id}.yaml")
    if source is None:
        raise NanopediaError(problems)
    width = args.width or shutil.get_terminal_size((80, 24)).columns
    base = args.base_url or _config_base_url()
    link = f"{base.rstrip('/')}/entries/{args.id}.html" if base else None
    print(entry_text(source.entry, width, link))
    return 0
