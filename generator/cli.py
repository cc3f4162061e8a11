"""The `nanopedia` command: the only place that prints to the terminal or chooses an exit code.

Exit codes: 0 clean, 1 problems found, 2 usage errors (bad arguments, missing paths).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from .corpus import gather
from .errors import format_problems
from .model import entry_json_schema

Command = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad arguments or paths: reported on stderr with exit code 2."""


def _check(args: argparse.Namespace) -> int:
    roots: dict[Path, list[Path] | None] = {}
    for raw in args.paths or [args.entries]:
        path = Path(raw)
        if path.is_dir():
            roots[path.resolve()] = None
        elif path.is_file() or path.is_symlink():
            files = roots.setdefault(path.parent.resolve(), [])
            if files is not None:
                files.append(path)
        else:
            raise UsageError(f"no such file or directory: {raw}")
    problems = []
    for root, files in roots.items():
        problems.extend(gather(root, files)[1])
    if problems or args.format == "json":
        out = format_problems(problems, args.format)
        if out:
            print(out)
    if args.format == "text":
        errors = sum(p.severity == "error" for p in problems)
        summary = f"{errors} problem(s) found" if problems else "all entries are valid"
        print(summary, file=sys.stderr)
    return 1 if problems else 0


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(entry_json_schema(), indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser; each command module registers its own subcommand here."""
    p = argparse.ArgumentParser(
        prog="nanopedia",
        description="The open encyclopedia of ML "
        "training failures: check entries and build the site.",
    )
    p.add_argument("--version", action="version", version=f"nanopedia {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="validate entries and report every problem")
    check.add_argument("paths", nargs="*", help="entry files or directories (default: entries/)")
    check.add_argument("--entries", default="entries", help=argparse.SUPPRESS)
    check.add_argument(
        "--format",
        choices=("text", "github", "json"),
        default="text",
        help="output format (default: text)",
    )
    check.set_defaults(run=_check)

    schema = sub.add_parser("schema", help="print the JSON Schema of an entry")
    schema.set_defaults(run=_schema)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as err:
        print(f"nanopedia: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nanopedia: interrupted", file=sys.stderr)
        return 130
