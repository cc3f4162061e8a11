"""The terminal side of the commands on training logs: `diagnose` and `triage`.

Each handler takes the parsed arguments, prints its report (results on stdout, warnings and
progress on stderr) and returns the exit code (`nanopedia/cli.py` states the policy); bad
arguments or unreadable logs fail with a located E050 problem (exit 2).
"""

from __future__ import annotations

import argparse
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
        rank,
        report,
        scan,
        text_report,
        unmatched,
        versions,
    )
    from nanopedia.incremental.catalogue import user_store

    compiled = catalogue.load(root, user_store())
    usable, skipped = compiled.entries, compiled.skipped
    for first in skipped:
        print(
            f"nanopedia: warning: {first.location}: entry left out of the diagnosis: "
            f"{first.message} (run 'nanopedia check')",
            file=sys.stderr,
        )
    matcher = scan.Matcher(usable)
    logs, found = _gather(args.logs)
    sizes = []
    for raw in logs:
        try:
            sizes.append(0 if raw == "-" else Path(raw).stat().st_size)
        except OSError as err:
            fail(raw, "E050", f"cannot read the log: {err.strerror or err}")
    bar = sys.stderr.isatty() and sum(sizes) >= PROGRESS_BYTES
    start = time.monotonic()
    deadline = start + args.deadline
    scans = []
    for raw, size in zip(logs, sizes, strict=True):
        name = "<stdin>" if raw == "-" else raw
        shown = _progress(name, size) if bar and size else None
        try:
            scans.append(scan.scan_file(raw, matcher, deadline, shown, args.jobs, name))
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
    scans += [scan.scan_error_file(e, matcher, deadline) for e in found.errors]
    result = rank.diagnose(scans, found.errors, found.report(), {e.id: e.title for e in usable})
    by_id = {e.id: e for e in usable}
    seen = versions.read_all(logs, scans[: len(logs)]) if result.matches else []
    base_url = args.base_url or _config_base_url()
    fmt = "json" if args.json else args.format
    flight = result.flight_report
    told = bool(result.error_files or flight)
    missed = None if result.matches or told else _unmatched(logs, scans[: len(logs)])
    if fmt == "json":
        out = report.with_answers(result, by_id, base_url, args.top, seen)
        out["skipped_entries"] = [p.as_dict() for p in skipped]
        if missed:
            out["unmatched"] = unmatched.as_json(missed[1], missed[0], base_url)
        print(json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False))
    elif missed and fmt == "markdown":
        print(unmatched.as_markdown(missed[1], missed[0], base_url))
    elif missed:
        print(unmatched.as_text(missed[1], missed[0], base_url, text_report.columns()))
    elif fmt == "markdown":
        print(report.as_markdown(result, by_id, base_url, args.top, seen))
    elif fmt == "github":
        from nanopedia.diagnosis.github import for_diagnosis

        print(for_diagnosis(result, by_id, base_url, args.top))
    else:
        print(text_report.as_text(result, by_id, base_url, args.top, seen, text_report.columns()))
    return 0 if result.matches or (flight and flight.findings) else 1


def _gather(paths: list[str]) -> tuple[list[str], Any]:
    """The logs among `paths`, and the error files and Flight Recorder dumps read from the rest
    (a folder: every log, error file and dump below it). Every file that cannot be read as
    what it is fails, all together, with its located E050 problem."""
    from nanopedia.diagnosis import jobs, readers
    from nanopedia.diagnosis.elastic import ReaderError
    from nanopedia.errors import problem

    found = readers.Found()
    logs: list[str] = []
    problems = []
    for raw in paths:
        files = [raw]
        if raw != "-" and os.path.isdir(raw):
            files, _ = jobs.logs_below(raw)
            if not files:
                problems.append(
                    problem(
                        raw,
                        "E050",
                        "no logs, torchelastic error files or "
                        "Flight Recorder dumps below this folder",
                    )
                )
        for path in files:
            what = "log" if path == "-" else readers.sniff(path)
            if what == "log":
                logs.append(path)
                continue
            try:
                found.add(readers.read_file(path, what))
            except ReaderError as err:
                problems.append(problem(path, "E050", err.message, err.hint))
    if problems:
        raise NanopediaError(problems)
    return logs, found


def _unmatched(paths: list[str], scans: list[Any]) -> tuple[dict[str, str], Any]:
    """When nothing matched: each input that is no log (by name), and the first error line of
    the logs, in the order given."""
    from nanopedia.diagnosis import unmatched

    problems: dict[str, str] = {}
    found = None
    for raw, one in zip(paths, scans, strict=True):
        try:
            problem, error = unmatched.read(raw, one.file)
        except (OSError, EOFError):
            continue
        if problem:
            problems[one.file] = problem
        found = found or error
    return problems, found


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
