"""The `nanopedia` command: the only place that prints to the terminal or chooses an exit code.

Exit codes: 0 clean, 1 problems found, 2 usage errors (bad arguments, missing paths), 3 an
internal error (a bug: the message says how to get the traceback).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from nanopedia import __version__
from nanopedia.errors import NanopediaError, format_problems
from nanopedia.incremental import background
from nanopedia.incremental.inputs import TAGS_FILE

Command = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad arguments or paths: reported on stderr with exit code 2."""


def _check(args: argparse.Namespace) -> int:
    from nanopedia.content.corpus import (
        gather,  # each command imports what it needs: `build` lists files sooner
    )

    roots: dict[Path, list[Path] | None] = {}
    for raw in args.paths or [args.entries]:
        path = Path(raw)
        if path.is_dir() or (path.name == TAGS_FILE and path.is_file()):  # it affects every entry
            roots[(path if path.is_dir() else path.parent).resolve()] = None
        elif os.path.lexists(path):  # a FIFO or a symlink too: loading refuses it, located
            files = roots.setdefault(path.parent.resolve(), [])
            if files is not None:
                files.append(path)
        else:
            raise UsageError(f"no such file or directory: {raw}")
    from nanopedia.content.corpus import display
    from nanopedia.content.gates import browser_slowness, fingerprint_gates
    from nanopedia.content.validate import checked_with_problem
    from nanopedia.errors import problem

    problems = []
    timed = []  # the checked entries: their patterns are timed in the browser's engine at once
    for root, files in roots.items():
        catalog, found = gather(root, files)
        problems.extend(found)
        shown = None if files is None else {display(p) for p in files}
        timed += [s for s in catalog.sources if shown is None or s.doc.path in shown]
        for src in catalog.sources:
            if shown is None or src.doc.path in shown:
                advice = checked_with_problem(src)
                problems += [advice] if advice else []
        problems += [p for p in fingerprint_gates(catalog.sources)
                     if shown is None or p.location.path in shown]
        if files is None:
            problems += [problem(display(p), 0, 0, "E007", "a '.yml' file in the entries folder "
                                 "is not read", f"rename it to '{p.stem}.yaml'")
                         for p in sorted(root.glob("*.yml"))]
    problems += browser_slowness(timed, problems)
    if problems or args.format == "json":
        out = format_problems(problems, args.format)
        if out:
            print(out)
    errors = sum(p.severity == "error" for p in problems)
    if args.format == "text":
        warned = len(problems) - errors
        summary = f"{errors} problem(s) found" if errors else "all entries are valid"
        print(summary + (f", {warned} warning(s)" if warned else ""), file=sys.stderr)
    return 1 if errors else 0


def _schema(args: argparse.Namespace) -> int:
    from nanopedia.model import entry_json_schema

    print(json.dumps(entry_json_schema(), indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    from nanopedia.theme_dir import locate_entries

    root = Path(args.entries) if args.entries else locate_entries()
    if not root.is_dir():
        raise UsageError(f"no such entries directory: {root}")
    from nanopedia.diagnosis import report
    from nanopedia.diagnosis import scan as diagnose

    usable, skipped = diagnose.usable_entries(root)
    for first in skipped:
        print(f"nanopedia: warning: {first.location}: entry left out of the diagnosis: "
              f"{first.message} (run 'nanopedia check')", file=sys.stderr)
    matcher = diagnose.Matcher(usable)
    sizes = []
    for raw in args.logs:
        try:
            sizes.append(0 if raw == "-" else Path(raw).stat().st_size)
        except OSError as err:
            raise UsageError(f"cannot read {raw}: {err.strerror or err}") from err
    bar = sys.stderr.isatty() and sum(sizes) >= PROGRESS_BYTES
    start = time.monotonic()
    deadline = start + args.deadline
    scans = []
    for raw, size in zip(args.logs, sizes, strict=True):
        name = "<stdin>" if raw == "-" else raw
        shown = _progress(name, size) if bar and size else None
        try:
            scans.append(diagnose.scan_file(raw, matcher, deadline, shown, args.jobs, name))
        except diagnose.DiagnoseTimeout as err:
            print(f"nanopedia: error: diagnosis stopped after {time.monotonic() - start:.1f} s "
                  f"(--deadline {args.deadline:g}): {err}; raise --deadline or fix that pattern",
                  file=sys.stderr)
            return 2
        except (OSError, EOFError) as err:
            raise UsageError(f"cannot read {name}: {err.strerror or err}") from err
        finally:
            if shown:
                print(file=sys.stderr)
    result = diagnose.diagnose(scans)
    by_id = {e.id: e for e in usable}
    base_url = args.base_url or _config_base_url()
    fmt = "json" if args.json else args.format
    if fmt == "json":
        out = report.with_answers(result, by_id, base_url, args.top)
        out["skipped_entries"] = [p.as_dict() for p in skipped]
        print(json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False))
    elif not result.matches:
        print("no known failure matched", file=sys.stderr)
    elif fmt == "markdown":
        print(report.as_markdown(result, by_id, base_url, args.top))
    else:
        print(report.as_text(result, by_id, base_url, args.top))
    return 0 if result.matches else 1


def _config_base_url() -> str | None:
    """`base_url` of ./nanopedia.toml, so links in a report point at the published site."""
    from nanopedia import config

    try:
        return config.read(None).base_url or None
    except NanopediaError:
        return None


def _triage(args: argparse.Namespace) -> int:
    """Exit 0 when every file was read, 1 when some file or folder was skipped (each is named
    in the output), 2 for a usage error."""
    import itertools

    from nanopedia.diagnosis import triage, triage_report

    if args.ray and os.path.exists(args.ray) and ":" not in args.ray:
        raise UsageError(f"--ray took {args.ray!r} as the cluster address; put a bare --ray after "
                         "the paths, or write --ray=ADDRESS")
    options = triage.Options(args.top, args.base_url or _config_base_url(),
                             args.max_file_bytes, args.deadline)
    try:
        used, left_out = triage.load_entries(args.entries)
        for first in left_out:
            print(f"nanopedia: warning: {first.location}: entry left out of the triage: "
                  f"{first.message} (run 'nanopedia check')", file=sys.stderr)
        items = triage.stream(args.paths, used, jobs=args.jobs, ray=args.ray,
                              job_pattern=args.job_pattern, options=options)
        head = list(itertools.islice(items, 1))  # the cluster is joined, the paths walked
    except triage.TriageError as err:
        raise UsageError(str(err)) from None
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
            print("\r" + progress_line(jobs, files, read, last - start), end="",
                  file=sys.stderr, flush=True)
        yield item
    print("\r" + progress_line(jobs, files, read, time.monotonic() - start), file=sys.stderr)


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


def _verify(args: argparse.Namespace) -> int:
    """Exit 0 when every repro and example passed, 1 when some failed, 2 for a usage or an
    environment error (no torch where repros need it)."""
    from nanopedia import pins
    from nanopedia.commands import verify
    from nanopedia.content.corpus import gather
    from nanopedia.errors import Location, Problem

    root = Path(args.entries)
    if not root.is_dir():
        raise UsageError(f"no such entries directory: {args.entries}")
    catalog, problems = gather(root)
    errors = sum(p.severity == "error" for p in problems)
    if errors:  # an entry that did not load is not verified; `check` is the gate for the rest
        print(f"nanopedia: warning: {errors} problem(s) in the entries (run 'nanopedia check'); "
              "verifying the entries that load", file=sys.stderr)
    by_id = {s.entry.id: s for s in catalog.sources}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        raise UsageError(f"no such entry, or it does not load: {', '.join(unknown)}")
    chosen = [by_id[i] for i in (args.ids or sorted(by_id))]
    absent = verify.missing_imports([s.entry for s in chosen])
    if absent:
        raise UsageError(
            f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed for "
            f"{sys.executable}; the repros need the pinned environment: run 'make verify' (it "
            "creates .venv-repro/), or pip install -e '.[repro]' and run verify from there")
    text = args.format == "text"
    for line in pins.installed_mismatches():
        print(f"nanopedia: warning: {line}; results may differ from the pages", file=sys.stderr)

    def done(outcome: verify.Outcome) -> None:
        if not text:
            return
        r = outcome.repro
        head = f"{outcome.entry}/{r.id} ({r.ranks} rank{'s' * (r.ranks > 1)}"
        times = f"broken {outcome.broken.seconds:.1f} s" + (
            f", fixed {outcome.fixed.seconds:.1f} s" if outcome.fixed else "")
        if outcome.passed:
            print(f"PASS {head}, {times})", flush=True)
            return
        print(f"FAIL {head}, {times}): " + "; ".join(outcome.failures), flush=True)
        for name, run in (("broken", outcome.broken), ("fixed", outcome.fixed)):
            if run is not None:
                shown = verify.tail(run.output) or "(no output)"
                print(f"  {name} output, last lines:", flush=True)
                print("\n".join("    | " + line for line in shown.splitlines()), flush=True)

    start = time.monotonic()
    outcomes = verify.verify_all(catalog.entries, [s.entry for s in chosen], args.jobs,
                                 args.timeout, done)
    checked = verify.check_examples(chosen, args.timeout)
    found = [Problem(Location(*f.where), "E070", f.message) for f in checked.findings]
    seconds = time.monotonic() - start
    failed = [o for o in outcomes if not o.passed] + checked.failed_runs
    if text:
        if found:
            print(format_problems(found, "text"))
        for run in checked.failed_runs:
            print(f"FAIL {run.name}: {run.reason}")
        print(f"examples: {checked.checked} checked, {checked.ran} run on CPU"
              + (f", not checked ({checked.missing_text()})" if checked.missing else ""))
        passed = sum(o.passed for o in outcomes)
        print(f"repros: {passed} of {len(outcomes)} passed in {seconds:.1f} s "
              f"({verify.environment()}, {args.jobs} jobs)")
    else:
        print(json.dumps(verify.as_json(outcomes, checked, found, seconds), indent=2,
                         sort_keys=True, ensure_ascii=False))
    return 1 if failed or found else 0


#: Logs at least this large get a progress bar on a terminal.
PROGRESS_BYTES = 64 << 20


def _new(args: argparse.Namespace) -> int:
    """Exit 2 (a usage error) when the id is invalid or taken or a tag is unknown."""
    from nanopedia.commands import new

    try:
        path = new.create(Path(args.entries), args.id, args.title, args.tag, args.category)
    except NanopediaError as err:
        print(format_problems(err.problems, "text"), file=sys.stderr)
        return 2
    print(path.as_posix())
    print(
        f"next: fill in every TODO, then run `nanopedia check {path.as_posix()}`",
        file=sys.stderr,
    )
    return 0


def _site_inputs(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The entries directory and optional config file of build, bundle and serve, checked."""
    entries = Path(args.entries)
    if not entries.is_dir():
        raise UsageError(f"no such directory: {args.entries}")
    config = Path(args.config) if args.config else None
    if config is not None and not config.is_file():
        raise UsageError(f"no such file: {args.config}")
    return entries, config


def _serve(args: argparse.Namespace) -> int:
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
            raise UsageError(f"cannot serve on 127.0.0.1:{args.port}: {err.strerror}") from None
    return 0


def _diff(args: argparse.Namespace) -> int:
    """Markdown on stdout, exit 0 whatever changed; exit 2 for a bad revision or no git."""
    from nanopedia.commands import diff

    try:
        print(diff.diff(Path(args.entries), args.base, args.head), end="")
    except NanopediaError as err:
        print(format_problems(err.problems, "text"), file=sys.stderr)
        return 2
    return 0


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


def _build(args: argparse.Namespace) -> int:
    from nanopedia.incremental import inputs as listing

    entries, config = _site_inputs(args)
    # Listed in a process of its own while this one imports the generator (the second core).
    listed = listing.prefetch(entries, Path(args.out))
    from nanopedia.incremental import pipeline as build

    try:
        report = build.build(entries, Path(args.out), config, use_cache=not args.no_cache,
                             jobs=args.jobs, listed=listed())
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
    print(f"built {report.pages} files from {report.entries} entries "
          f"({report.reused} from cache) into {args.out}/: {stages}", file=sys.stderr)
    return 0


def _bundle(args: argparse.Namespace) -> int:
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

    diag = sub.add_parser("diagnose", help="match training logs against every entry's fingerprints")
    diag.add_argument("logs", nargs="+", metavar="LOG", help="log files, plain or .gz ('-': stdin)")
    diag.add_argument(
        "--top", type=int, default=5, metavar="N", help="candidates shown (default 5)"
    )
    diag.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                      help="text (default), json (every line whole), or markdown (for a GitHub "
                      "or Slack paste)")
    diag.add_argument("--json", action="store_true", help="the same as --format json")
    diag.add_argument(
        "--base-url", default=None,
        help="link entries under this URL (default: nanopedia.toml's base_url, else site/)"
    )
    diag.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="stop and name the slowest pattern after this long (default 300)",
    )
    diag.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), metavar="N",
                      help="processes that scan a large plain log together (default: one per "
                      "core); the answer does not depend on it")
    diag.add_argument("--entries", default=None, metavar="DIR",
                      help="match against the entries in DIR (default: the encyclopedia this "
                      "nanopedia ships)")
    diag.set_defaults(run=_diagnose)

    fleet = sub.add_parser(
        "triage", help="diagnose every job under some folders and summarise the fleet: entries "
        "by jobs, hosts failing first again and again, failures no entry knows (exit 0 all "
        "read, 1 some file skipped, 2 usage error, 3 internal error)")
    fleet.add_argument("paths", nargs="+", metavar="PATH",
                       help="folders of jobs, or log files (each file is a job)")
    fleet.add_argument("--format", choices=("text", "json", "csv", "markdown"), default="text",
                       help="text (default), json (every job's record and the summary, written "
                       "as jobs finish), csv (one row per job), or markdown")
    fleet.add_argument("--job-pattern", metavar="GLOB",
                       help="a glob (not a regex) on paths relative to each PATH naming the jobs: "
                       "a matching folder is one job with every log below it, a matching file "
                       "a job ('*' and '?' stay within one folder, '**' crosses folders; "
                       "e.g. 'runs/*' or '**/job-*'); default: torchrun run folders, folders "
                       "of rank logs, then each other log file")
    fleet.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="worker processes, or the CPUs of a local Ray (default: one per core)")
    fleet.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                       help="run the jobs as a Ray Data map on the cluster at ADDRESS (bare "
                       "--ray, after the paths: a local Ray of --jobs CPUs); needs "
                       "pip install 'nanopedia[ray]', and the logs on a filesystem every node "
                       "sees")
    fleet.add_argument("--top", type=int, default=3, metavar="N",
                       help="candidates kept per job (default 3)")
    fleet.add_argument("--max-file-bytes", type=_byte_size, default=2 << 30, metavar="SIZE",
                       help="skip files larger than this once unpacked (default 2G; 0: no limit)")
    fleet.add_argument("--deadline", type=float, default=300.0, metavar="SECONDS",
                       help="per job: files not read by then are skipped (default 300)")
    fleet.add_argument("--base-url", default=None,
                       help="link entries under this URL (default: nanopedia.toml's base_url)")
    fleet.add_argument("--entries", default=None, metavar="DIR",
                       help="match against the entries in DIR (default: the shipped ones)")
    fleet.set_defaults(run=_triage)

    check_repros = sub.add_parser(
        "verify", help="run every entry's repros and check its code examples against the "
        "installed libraries (the pinned repro environment: make verify)")
    check_repros.add_argument("ids", nargs="*", metavar="ENTRY_ID",
                              help="entries to verify (default: all)")
    check_repros.add_argument("--entries", default="entries",
                              help="entries directory (default: entries)")
    check_repros.add_argument("--format", choices=("text", "json"), default="text",
                              help="output format (default: text)")
    check_repros.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                              help="repros run at once (default: one per core)")
    check_repros.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                              help="per script; a script past it is killed (default 120)")
    check_repros.set_defaults(run=_verify)

    create = sub.add_parser("new", help="start a new entry from the skeleton (exit 2 if taken)")
    create.add_argument("id", help="the entry id: lower-case words joined by hyphens")
    create.add_argument("--title", help="the failure's name as an engineer would search for it")
    create.add_argument(
        "--tag", action="append", default=[], help="a tag from entries/tags.yaml (repeatable)"
    )
    create.add_argument("--category", help="the family of the failure, e.g. mixed-precision")
    create.add_argument("--entries", default="entries", help="entries directory (default: entries)")
    create.set_defaults(run=_new)

    changes = sub.add_parser(
        "diff", help="summarize what a change does to the entries, as Markdown for a PR comment"
    )
    changes.add_argument("base", help="git revision before the change, e.g. origin/main")
    changes.add_argument("head", nargs="?", default="HEAD", help="revision after (default HEAD)")
    changes.add_argument(
        "--entries", default="entries", help="entries directory (default: entries)"
    )
    changes.set_defaults(run=_diff)

    live = sub.add_parser("serve", help="build, serve on 127.0.0.1 and rebuild and reload on save")
    live.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    live.add_argument("--entries", default="entries", help="entries directory (default: entries)")
    live.add_argument("--out", help="where the site is built (default: a temporary folder)")
    live.add_argument("--config", help="site settings (default: nanopedia.toml when present)")
    live.set_defaults(run=_serve)

    site = sub.add_parser("build", help="build the static site (the previous one stays on error)")
    site.add_argument("--entries", default="entries", help="entries directory (default: entries)")
    site.add_argument("--out", default="site", help="output directory (default: site)")
    site.add_argument("--config", help="site settings (default: nanopedia.toml when present)")
    site.add_argument("--no-cache", action="store_true", help="ignore .nanopedia-cache/")
    site.add_argument("--jobs", type=int, default=None, metavar="N",
                      help="worker processes (default: one per core)")
    site.set_defaults(run=_build)

    pack = sub.add_parser("bundle", help="the site as a reproducible zip, or as one HTML file")
    pack.add_argument("--entries", default="entries", help="entries directory (default: entries)")
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument("--config", help="site settings (default: nanopedia.toml when present)")
    pack.add_argument("--no-cache", action="store_true", help="ignore .nanopedia-cache/")
    pack.add_argument("--single-file", action="store_true",
                      help="write dist/nanopedia-<version>.html with every page, search inlined")
    pack.set_defaults(run=_bundle)
    return p


def main(argv: Sequence[str] | None = None, detach: bool = False) -> int:
    """Run one command; with `detach` (the console script), a build leaves saving its state
    and deleting replaced files to `background.detach`."""
    args = parser().parse_args(argv)
    if detach and args.run is _build:
        background.defer()
    try:
        return int(args.run(args))
    except UsageError as err:
        print(f"nanopedia: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nanopedia: interrupted", file=sys.stderr)
        return 130
    except NanopediaError as err:  # a command that did not catch its own located problems
        print(format_problems(err.problems, "text"), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`nanopedia diagnose LOG | head`): stop quietly, as a tool killed
        # by SIGPIPE would, and point stdout at /dev/null so the final flush cannot fail again.
        _silence_stdout()
        return 141
    except Exception as err:  # a bug of nanopedia's, not of the input: say so, exit 3
        if os.environ.get("NANOPEDIA_DEBUG"):
            raise
        print(f"nanopedia: internal error: {type(err).__name__}: {err}\n"
              "this is a bug in nanopedia; run again with NANOPEDIA_DEBUG=1 for the traceback "
              "and report it", file=sys.stderr)
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
