"""The `nanopedia` command: its arguments, and the exit code of every way a command can end.

Only this module and the handlers it runs (`nanopedia/commands/entry_cli.py`, `log_cli.py` and
`site_cli.py`) print to the terminal. Exit codes: 0 clean, 1 problems found, 2 usage errors (bad
arguments, missing paths), 3 an internal error (a bug: the message says how to get the
traceback).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from nanopedia import __version__
from nanopedia.errors import USAGE, NanopediaError, format_problems
from nanopedia.incremental import background

Command = Callable[[argparse.Namespace], int]


def _handler(module: str, name: str) -> Command:
    """The handler `name` of `nanopedia.commands.<module>`, imported only when its command runs:
    `build` imports none of the other commands' code before it starts listing files."""

    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(f"nanopedia.commands.{module}"), name)(args))

    return run


def _byte_size(text: str) -> int:
    """`2G`, `512M`, `64k` or plain bytes (binary units), for --max-file-bytes."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(text[-1:].lower(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2G, 512M)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a size cannot be negative: {text!r}")
    return value


def _options() -> dict[str, argparse.ArgumentParser]:
    """The options several commands share, each declared once (as mkdocs declares its shared
    options once); a command names the ones it takes as its parents."""

    def one(*names: str, **how: Any) -> argparse.ArgumentParser:
        holder = argparse.ArgumentParser(add_help=False)
        holder.add_argument(*names, **how)
        return holder

    return {
        "entries": one(
            "--entries",
            default="entries",
            metavar="DIR",
            help="entries directory (default: entries)",
        ),
        "shipped": one(
            "--entries",
            default=None,
            metavar="DIR",
            help="use the entries in DIR (default: the encyclopedia this nanopedia ships)",
        ),
        "config": one("--config", help="site settings (default: nanopedia.toml when present)"),
        "no-cache": one("--no-cache", action="store_true", help="ignore .nanopedia-cache/"),
        "base-url": one(
            "--base-url",
            default=None,
            help="link entries under this URL (default: nanopedia.toml's base_url)",
        ),
    }


def parser() -> argparse.ArgumentParser:
    """The argument parser; each command module registers its own subcommand here."""
    p = argparse.ArgumentParser(
        prog="nanopedia",
        description="The open encyclopedia of ML "
        "training failures: check entries and build the site.",
    )
    p.add_argument("--version", action="version", version=f"nanopedia {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = _options()

    def takes(*names: str) -> dict[str, Any]:
        return {"parents": [shared[n] for n in names]}

    check = sub.add_parser(
        "check", help="validate entries and report every problem", **takes("entries")
    )
    check.add_argument("paths", nargs="*", help="entry files or directories (default: entries/)")
    check.add_argument(
        "--format",
        choices=("text", "github", "json"),
        default="text",
        help="output format (default: text)",
    )
    check.set_defaults(run=_handler("entry_cli", "run_check"))

    schema = sub.add_parser("schema", help="print the JSON Schema of an entry")
    schema.set_defaults(run=_handler("entry_cli", "run_schema"))

    diag = sub.add_parser(
        "diagnose",
        help="match training logs against every entry's fingerprints",
        **takes("shipped", "base-url"),
    )
    diag.add_argument("logs", nargs="+", metavar="LOG", help="log files, plain or .gz ('-': stdin)")
    diag.add_argument(
        "--top", type=int, default=5, metavar="N", help="candidates shown (default 5)"
    )
    diag.add_argument(
        "--format",
        choices=("text", "json", "markdown", "github"),
        default="text",
        help="text (default), json (every line whole), markdown (for a GitHub "
        "or Slack paste), or github (workflow commands: ::error on the first "
        "failing line, ::notice per further candidate)",
    )
    diag.add_argument("--json", action="store_true", help="the same as --format json")
    diag.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="stop and name the slowest pattern after this long (default 300)",
    )
    diag.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0)),
        metavar="N",
        help="processes that scan a large plain log together (default: one per "
        "core); the answer does not depend on it",
    )
    diag.set_defaults(run=_handler("log_cli", "run_diagnose"))

    show = sub.add_parser(
        "show",
        help="print an entry in the terminal: quick answer, causes, fix, how to confirm",
        **takes("shipped", "base-url"),
    )
    show.add_argument("id", metavar="ENTRY_ID", help="the entry id (its file name)")
    show.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="COLUMNS",
        help="columns to fit (default: the terminal's width)",
    )
    show.set_defaults(run=_handler("show_cli", "run_show"))

    fleet = sub.add_parser(
        "triage",
        help="diagnose every job under some folders and summarise the fleet: entries "
        "by jobs, hosts failing first again and again, failures no entry knows (exit 0 all "
        "read, 1 some file skipped, 2 usage error, 3 internal error)",
        **takes("shipped", "base-url"),
    )
    fleet.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="folders of jobs, or log files (each file is a job)",
    )
    fleet.add_argument(
        "--format",
        choices=("text", "json", "csv", "markdown", "github"),
        default="text",
        help="text (default), json (every job's record and the summary, written "
        "as jobs finish), csv (one row per job), markdown, or github (workflow "
        "commands per job, written as jobs finish)",
    )
    fleet.add_argument(
        "--job-pattern",
        metavar="GLOB",
        help="a glob (not a regex) on paths relative to each PATH naming the jobs: "
        "a matching folder is one job with every log below it, a matching file "
        "a job ('*' and '?' stay within one folder, '**' crosses folders; "
        "e.g. 'runs/*' or '**/job-*'); default: torchrun run folders, folders "
        "of rank logs, then each other log file",
    )
    fleet.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="worker processes, or the CPUs of a local Ray (default: one per core)",
    )
    fleet.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the jobs as a Ray Data map on the cluster at ADDRESS (bare "
        "--ray, after the paths: a local Ray of --jobs CPUs); needs "
        "pip install 'nanopedia[ray]', and the logs on a filesystem every node "
        "sees",
    )
    fleet.add_argument(
        "--top", type=int, default=3, metavar="N", help="candidates kept per job (default 3)"
    )
    fleet.add_argument(
        "--max-file-bytes",
        type=_byte_size,
        default=2 << 30,
        metavar="SIZE",
        help="skip files larger than this once unpacked (default 2G; 0: no limit)",
    )
    fleet.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="per job: files not read by then are skipped (default 300)",
    )
    fleet.set_defaults(run=_handler("log_cli", "run_triage"))

    wrap = sub.add_parser(
        "run",
        help="run a training command (nanopedia run -- torchrun ... train.py), its output "
        "passed through unchanged; when it fails, print the verdict at the end of its output and "
        "write it as JSON (exit: the command's own code, 128+N when signal N killed it)",
        **takes("shipped", "base-url"),
    )
    wrap.add_argument(
        "--json",
        default="nanopedia-verdict.json",
        metavar="PATH",
        help="where the verdict JSON goes when the command fails (default: "
        "nanopedia-verdict.json; the run's error files and dumps are kept beside "
        "it in nanopedia-run-XXXX/)",
    )
    wrap.add_argument(
        "--no-env",
        action="store_true",
        help="set no variable (by default torchrun's log folder, torchelastic's "
        "error file, the Flight Recorder and unbuffered Python output are switched "
        "on where unset)",
    )
    wrap.add_argument(
        "cmd",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ...",
        help="the command and its arguments, after '--'",
    )
    wrap.set_defaults(run=_handler("wrap", "run_command"))

    check_repros = sub.add_parser(
        "verify",
        help="run every entry's repros and check its code examples against the "
        "installed libraries (the pinned repro environment: make verify)",
        **takes("entries"),
    )
    check_repros.add_argument(
        "ids", nargs="*", metavar="ENTRY_ID", help="entries to verify (default: all)"
    )
    check_repros.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    check_repros.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="repros run at once (default: one per core)",
    )
    check_repros.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="per script; a script past it is killed (default 120)",
    )
    check_repros.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the repros without the bubblewrap sandbox, as you, with "
        "your files and network: only for repros you trust (yours, or a "
        "reviewed pull request's); never on an unreviewed pull request",
    )
    check_repros.set_defaults(run=_handler("entry_cli", "run_verify"))

    create = sub.add_parser(
        "new", help="start a new entry from the skeleton (exit 2 if taken)", **takes("entries")
    )
    create.add_argument("id", help="the entry id: lower-case words joined by hyphens")
    create.add_argument("--title", help="the failure's name as an engineer would search for it")
    create.add_argument(
        "--tag", action="append", default=[], help="a tag from entries/tags.yaml (repeatable)"
    )
    create.add_argument("--category", help="the family of the failure, e.g. mixed-precision")
    create.set_defaults(run=_handler("entry_cli", "run_new"))

    changes = sub.add_parser(
        "diff",
        help="summarize what a change does to the entries, as Markdown for a PR comment",
        **takes("entries"),
    )
    changes.add_argument("base", help="git revision before the change, e.g. origin/main")
    changes.add_argument("head", nargs="?", default="HEAD", help="revision after (default HEAD)")
    changes.set_defaults(run=_handler("entry_cli", "run_diff"))

    live = sub.add_parser(
        "serve",
        help="build, serve on 127.0.0.1 and rebuild and reload on save",
        **takes("entries", "config"),
    )
    live.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    live.add_argument("--out", help="where the site is built (default: a temporary folder)")
    live.set_defaults(run=_handler("site_cli", "run_serve"))

    site = sub.add_parser(
        "build",
        help="build the static site (the previous one stays on error)",
        **takes("entries", "config", "no-cache"),
    )
    site.add_argument("--out", default="site", help="output directory (default: site)")
    site.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="worker processes (default: one per core)",
    )
    site.set_defaults(run=_handler("site_cli", "run_build"))

    pack = sub.add_parser(
        "bundle",
        help="the site as a reproducible zip, or as one HTML file",
        **takes("entries", "config", "no-cache"),
    )
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument(
        "--single-file",
        action="store_true",
        help="write dist/nanopedia-<version>.html with every page, search inlined",
    )
    pack.set_defaults(run=_handler("site_cli", "run_bundle"))

    data = sub.add_parser(
        "export",
        help="write the diagnosis data of an entries folder (the site's "
        "static/diagnose-data.js) for the VS Code extension's extra entries",
        **takes("entries"),
    )
    data.add_argument(
        "-o",
        "--out",
        metavar="FILE",
        help="where to write it (default: DIR/.nanopedia/diagnose-data.js, where the "
        "extension looks)",
    )
    data.set_defaults(run=_handler("site_cli", "run_export"))
    return p


def main(argv: Sequence[str] | None = None, detach: bool = False) -> int:
    """Run one command; with `detach` (the console script), a build leaves saving its state
    and deleting replaced files to `background.detach`."""
    args = parser().parse_args(argv)
    if detach and args.command == "build":
        background.defer()
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("nanopedia: interrupted", file=sys.stderr)
        return 130
    except NanopediaError as err:  # a command that did not catch its own located problems
        print(format_problems(err.problems, "text"), file=sys.stderr)
        return 2 if all(p.code == USAGE for p in err.problems) else 1
    except BrokenPipeError:
        # The reader went away (`nanopedia diagnose LOG | head`): stop quietly, as a tool killed
        # by SIGPIPE would, and point stdout at /dev/null so the final flush cannot fail again.
        _silence_stdout()
        return 141
    except Exception as err:  # a bug of nanopedia's, not of the input: say so, exit 3
        if os.environ.get("NANOPEDIA_DEBUG"):
            raise
        print(
            f"nanopedia: internal error: {type(err).__name__}: {err}\n"
            "this is a bug in nanopedia; run again with NANOPEDIA_DEBUG=1 for the traceback "
            "and report it",
            file=sys.stderr,
        )
        return 3


def run() -> NoReturn:
    """The console script: `main`, then exit without tearing the interpreter down (freeing the
    objects of a 10,000-entry build one by one took 0.4 s). Every file is closed by then, and
    the build's last jobs run in a process of their own (`background.detach`)."""
    code = main(detach=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    background.detach()
    background.finish()  # the jobs of a command that did not queue them (`serve`)
    os._exit(code)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file (captured in tests): nothing left to flush
