"""The terminal side of the commands that make the site: `build`, `bundle`, `serve` and `export`.

Each handler takes the parsed arguments, prints the located problems on stdout and what it made
on stderr, and returns the exit code (`nanopedia/cli.py` states the policy); a missing entries
folder or config file fails with a located E050 problem (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from nanopedia.errors import NanopediaError, fail, format_problems


def _site_inputs(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The entries directory and optional config file of build, bundle and serve, checked."""
    entries = Path(args.entries)
    if not entries.is_dir():
        fail(args.entries, "E050", "no such entries directory", "pass --entries DIR")
    config = Path(args.config) if args.config else None
    if config is not None and not config.is_file():
        fail(args.config, "E050", "no such config file")
    return entries, config


def run_build(args: argparse.Namespace) -> int:
    from nanopedia.incremental import inputs as listing

    entries, config = _site_inputs(args)
    # Listed in a process of its own while this one imports the generator (the second core).
    listed = listing.prefetch(entries, Path(args.out))
    from nanopedia.incremental import pipeline
    from nanopedia.incremental.context import Request

    try:
        report = pipeline.build(
            Request(
                entries,
                Path(args.out),
                config,
                use_cache=not args.no_cache,
                jobs=args.jobs,
                listed=listed(),
            )
        )
    except NanopediaError as err:
        print(format_problems(err.problems, "text"))
        print(f"{len(err.problems)} problem(s) found; {args.out}/ was not changed", file=sys.stderr)
        return 1
    if report.warnings:
        print(format_problems(report.warnings, "text"))
    if report.up_to_date:
        print(f"{args.out}/ is up to date", file=sys.stderr)
        return 0
    stages = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in report.timings.items())
    print(
        f"built {report.pages} files from {report.entries} entries "
        f"({report.reused} from cache) into {args.out}/: {stages}",
        file=sys.stderr,
    )
    return 0


def run_bundle(args: argparse.Namespace) -> int:
    from nanopedia.commands import bundle

    entries, config = _site_inputs(args)
    make = bundle.single_file if args.single_file else bundle.zip_bundle
    try:
        made = make(entries, Path(args.out), config, use_cache=not args.no_cache)
    except NanopediaError as err:
        print(format_problems(err.problems, "text"))
        print(f"{len(err.problems)} problem(s) found; nothing was written", file=sys.stderr)
        return 1
    print(f"wrote {made.path} ({made.size:,} bytes, sha256 {made.sha256})", file=sys.stderr)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Runs until Ctrl-C (exit 130); a broken entry never stops it."""
    from nanopedia.commands import serve

    entries, config = _site_inputs(args)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def ready(port: int) -> None:
        log(f"serving http://127.0.0.1:{port}/ (watching {args.entries}/ and theme/; Ctrl-C stops)")

    with tempfile.TemporaryDirectory(prefix="nanopedia-serve-") as scratch:
        out = Path(args.out) if args.out else Path(scratch) / "site"
        try:
            serve.serve(entries, out, config, args.port, log, ready)
        except OSError as err:
            fail(
                f"127.0.0.1:{args.port}",
                "E050",
                f"cannot serve: {err.strerror}",
                "pass --port with a free port",
            )
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Writes the data the entries folder gives the diagnosis (as `nanopedia diagnose --entries`
    loads it); an entry it leaves out is a problem (exit 1), the rest is still written."""
    from nanopedia.diagnosis import catalogue
    from nanopedia.incremental.catalogue import user_store
    from nanopedia.site.exports import EXPORT_FILE, diagnose_file

    entries = Path(args.entries)
    if not entries.is_dir():
        fail(args.entries, "E050", "no such entries directory", "pass --entries DIR")
    compiled = catalogue.load(entries, user_store())
    for first in compiled.skipped:
        print(
            f"nanopedia: warning: {first.location}: entry left out of the export: "
            f"{first.message} (run 'nanopedia check')",
            file=sys.stderr,
        )
    out = Path(args.out) if args.out else entries / EXPORT_FILE
    data = diagnose_file(compiled.entries)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", delete=False) as f:
            f.write(data)
        os.chmod(f.name, 0o644)  # readable like the site's files, not the scratch file's 0600
        os.replace(f.name, out)
    except OSError as err:
        fail(str(out), "E050", f"cannot write the export: {err.strerror or err}")
    print(
        f"wrote {out} ({len(compiled.entries)} entries, {len(data):,} bytes)",
        file=sys.stderr,
    )
    return 1 if compiled.skipped else 0
