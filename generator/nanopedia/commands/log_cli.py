"""The terminal side of the commands on training logs: `diagnose` and `triage`.

Each handler takes the parsed arguments, prints its report (results on stdout, warnings and
progress on stderr) and returns the exit code (`nanopedia/cli.py` states the policy); bad
arguments or unreadable logs fail with a located E050 problem (exit 2).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nanopedia.errors import NanopediaError, fail

#: Logs at least this large get a progress bar on a terminal.
PROGRESS_BYTES = 64 << 20


def run_diagnose(args: argparse.Namespace) -> int:
    from nanopedia.theme_dir import locate_entries

    root = Path(args.entries) if args.entries else locate_entries()
    if not root.is_dir():
        fail(str(root), "E050", "no such entries directory", "pass --entries DIR")
    from nanopedia.diagnosis import (
        catalogue,
        prefilter,
        presence,
        readers,
        report,
        result,
        scan,
        text_report,
    )
    from nanopedia.incremental.catalogue import user_store

    compiled = catalogue.compiled(root, user_store())
    skipped = catalogue.catalogue(compiled, root, ()).skipped
    for first in skipped:
        print(
            f"nanopedia: warning: {first.location}: entry left out of the diagnosis: "
            f"{first.message} (run 'nanopedia check')",
            file=sys.stderr,
        )
    logs, found = readers.gather(args.logs)
    found.raise_problems()
    sizes = []
    for raw in logs:
        try:
            sizes.append(0 if raw == "-" else Path(raw).stat().st_size)
        except OSError as err:
            fail(raw, "E050", f"cannot read the log: {err.strerror or err}")
    held = _held(logs, found)
    names = None
    if held is not None:
        texts = [*held.values(), *(e.traceback.encode("utf-8", "replace") for e in found.errors)]
        names = compiled.prefilter.candidates(prefilter.normalised(t) for t in texts)
    usable = catalogue.catalogue(compiled, root, names).entries
    matcher = scan.Matcher(usable)
    if held is None and max(sizes, default=0) >= presence.ACCELERATE_BYTES:
        matcher.accelerate(user_store())
    bar = sys.stderr.isatty() and sum(sizes) >= PROGRESS_BYTES
    start = time.monotonic()
    deadline = start + args.deadline
    scans = []
    for raw, size in zip(logs, sizes, strict=True):
        name = "<stdin>" if raw == "-" else raw
        shown = _progress(name, size) if bar and size else None
        try:
            scans.append(
                scan.scan(
                    io.BytesIO(held[raw]), name, matcher, deadline, None, prefilter.HELD_BYTES
                )
                if held is not None
                else scan.scan_file(raw, matcher, deadline, shown, args.jobs, name)
            )
            if scans[-1].open_at_deadline:
                print(
                    f"nanopedia: warning: {report.shorten(name, 200)}: still open at the "
                    f"deadline (--deadline {args.deadline:g}); diagnosed the "
                    f"{scans[-1].lines:,} line(s) read before it",
                    file=sys.stderr,
                )
        except scan.DiagnoseTimeout as err:
            fail(
                name,
                "E050",
                f"diagnosis stopped after {time.monotonic() - start:.1f} s "
                f"(--deadline {args.deadline:g}): {err}",
                "raise --deadline or fix that pattern",
            )
        except (OSError, EOFError) as err:
            why = err.strerror if isinstance(err, OSError) else None
            fail(name, "E050", f"cannot read the log: {why or err}")
        finally:
            if shown:
                print(file=sys.stderr)
    res = result.from_scans(
        logs,
        scans,
        usable,
        found,
        matcher=matcher,
        stop=deadline,
        base_url=args.base_url or _config_base_url(),
        skipped=skipped,
    )
    fmt = "json" if args.json else args.format
    if fmt == "json":
        print(json.dumps(res.as_json(args.top), indent=2, sort_keys=True, ensure_ascii=False))
    elif fmt == "markdown":
        print(res.as_markdown(args.top))
    elif fmt == "github" and not res.missed:
        print(res.as_github(args.top))
    else:
        print(res.as_text(args.top, text_report.columns()))
    flight = res.diagnosis.flight_report
    return 0 if res.matches or (flight and flight.findings) else 1


def _held(logs: list[str], found: Any) -> dict[str, bytes] | None:
    """Each log's bytes, read whole before the scan when together they are small: the scan
    reads them from memory, so the prefilter (`diagnosis.prefilter`) and the scan see the same
    bytes of a log still being written. None when the logs are large or a pipe, or when
    Flight Recorder dumps are given (their findings name entries by themselves)."""
    from nanopedia.diagnosis import prefilter

    if found.dumps:
        return None
    held: dict[str, bytes] = {}
    left = prefilter.HELD_BYTES
    for raw in logs:
        data = prefilter.hold(raw, left)
        if data is None:
            return None
        held[raw] = data
        left -= len(data)
    return held


def _progress(name: str, size: int) -> Callable[[int], None]:
    """A one-line progress bar on stderr, driven by the bytes of the file read (gzip: packed)."""
    start = time.monotonic()

    def show(done: int) -> None:
        rate = done / max(time.monotonic() - start, 1e-6) / 1e6
        filled = int(30 * done / size)
        print(
            f"\r{name} [{'#' * filled}{'.' * (30 - filled)}] {100 * done // size:3d}% "
            f"{rate:.0f} MB/s",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return show


def _config_base_url() -> str | None:
    """`base_url` of ./nanopedia.toml, so links in a report point at the published site."""
    from nanopedia import config

    try:
        return config.read(None).base_url or None
    except NanopediaError:
        return None


def run_triage(args: argparse.Namespace) -> int:
    """Exit 0 when every file was read, 1 when some file or folder was skipped (each is named
    in the output), 2 for a usage error."""
    import itertools

    from nanopedia.diagnosis import triage, triage_report

    if args.ray and os.path.exists(args.ray) and ":" not in args.ray:
        fail(
            "--ray",
            "E050",
            f"took {args.ray!r} as the cluster address",
            "put a bare --ray after the paths, or write --ray=ADDRESS",
        )
    options = triage.Options(
        args.top, args.base_url or _config_base_url(), args.max_file_bytes, args.deadline
    )
    from nanopedia.incremental.catalogue import user_store

    try:
        used, left_out = triage.load_entries(args.entries, user_store())
        for first in left_out:
            print(
                f"nanopedia: warning: {first.location}: entry left out of the triage: "
                f"{first.message} (run 'nanopedia check')",
                file=sys.stderr,
            )
        items = triage.stream(
            args.paths,
            used,
            jobs=args.jobs,
            ray=args.ray,
            job_pattern=args.job_pattern,
            options=options,
        )
        head = list(itertools.islice(items, 1))  # the cluster is joined, the paths walked
    except triage.TriageError as err:
        fail("nanopedia triage", "E050", str(err))
    items = itertools.chain(head, items)
    if sys.stderr.isatty():
        items = _triage_progress(items, triage.Skip)
    summary = triage.Summary()
    entries = {"used": len(used), "skipped": [p.as_dict() for p in left_out]}
    for chunk in triage_report.render(args.format, items, summary, entries, options.base_url):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return 1 if sum(summary.skip_reasons.values()) else 0


def _triage_progress(items: Any, skip: type) -> Any:
    """The items, with a progress line on stderr at most five times a second."""
    from nanopedia.diagnosis.triage_report import progress_line

    start = last = time.monotonic()
    jobs = files = read = 0
    for item in items:
        if not isinstance(item, skip):
            jobs, files, read = jobs + 1, files + len(item["files"]), read + item["bytes"]
        if time.monotonic() - last > 0.2:
            last = time.monotonic()
            print(
                "\r" + progress_line(jobs, files, read, last - start),
                end="",
                file=sys.stderr,
                flush=True,
            )
        yield item
    print("\r" + progress_line(jobs, files, read, time.monotonic() - start), file=sys.stderr)
