"""The terminal side of the commands on entries: `check`, `schema`, `verify`, `new` and `diff`.

Each handler takes the parsed arguments, prints its report (results on stdout, notes on stderr)
and returns the exit code (`nanopedia/cli.py` states the policy); bad arguments or paths fail
with a located E050 problem (exit 2). Each imports what it needs when it runs: a command loads
only its own code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from nanopedia.content.files import TAGS_FILE
from nanopedia.errors import NanopediaError, fail, format_problems


def run_check(args: argparse.Namespace) -> int:
    from nanopedia.content.corpus import gather

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
            fail(raw, "E050", "no such file or directory")
    from nanopedia.content.advice import advice_problems
    from nanopedia.content.corpus import display
    from nanopedia.content.gates import browser_slowness, fingerprint_gates
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
                problems += advice_problems(src)
        problems += [
            p
            for p in fingerprint_gates(catalog.sources)
            if shown is None or p.location.path in shown
        ]
        if files is None:
            problems += [
                problem(
                    display(p),
                    "E007",
                    "a '.yml' file in the entries folder is not read",
                    f"rename it to '{p.stem}.yaml'",
                )
                for p in sorted(root.glob("*.yml"))
            ]
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


def run_schema(args: argparse.Namespace) -> int:
    from nanopedia.model import entry_json_schema

    print(json.dumps(entry_json_schema(), indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """Exit 0 when every repro and example passed, 1 when some failed, 2 for a usage or an
    environment error (no torch where repros need it, no sandbox without --no-sandbox)."""
    from nanopedia import pins
    from nanopedia.commands import sandbox, verify
    from nanopedia.content.corpus import gather
    from nanopedia.diagnosis.report import shorten
    from nanopedia.errors import Location, Problem

    root = Path(args.entries)
    if not root.is_dir():
        fail(args.entries, "E050", "no such entries directory", "pass --entries DIR")
    catalog, problems = gather(root)
    errors = sum(p.severity == "error" for p in problems)
    if errors:  # an entry that did not load is not verified; `check` is the gate for the rest
        print(
            f"nanopedia: warning: {errors} problem(s) in the entries (run 'nanopedia check'); "
            "verifying the entries that load",
            file=sys.stderr,
        )
    by_id = {s.entry.id: s for s in catalog.sources}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        fail(args.entries, "E050", f"no such entry, or it does not load: {', '.join(unknown)}")
    chosen = [by_id[i] for i in (args.ids or sorted(by_id))]
    absent = verify.missing_imports([s.entry for s in chosen])
    if absent:
        fail(
            sys.executable,
            "E050",
            f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed here",
            "the repros need the pinned environment: run 'make verify' (it creates "
            ".venv-repro/), or pip install -e '.[repro]' and run verify from there",
        )
    sandboxed = not args.no_sandbox
    if sandboxed:
        box = sandbox.find()
        if box is None:
            fail(
                "bwrap",
                "E050",
                "cannot run the repros in a sandbox: bwrap is not installed"
                + (" (or setpriv, needed as root)" if os.geteuid() == 0 else ""),
                sandbox.MISSING_HINT,
            )
        why = sandbox.probe(box, sys.executable, verify.script_env(1, "/tmp", sys.executable))
        if why is not None:
            fail(
                box.bwrap,
                "E050",
                f"cannot run the repros in a sandbox: {shorten(why)}",
                "bwrap needs user namespaces (or root); " + sandbox.MISSING_HINT,
            )
    text = args.format == "text"
    for line in pins.installed_mismatches():
        print(f"nanopedia: warning: {line}; results may differ from the pages", file=sys.stderr)

    def done(outcome: verify.Outcome) -> None:
        if not text:
            return
        r = outcome.repro
        head = f"{outcome.entry}/{r.id} ({r.ranks} rank{'s' * (r.ranks > 1)}"
        times = f"broken {outcome.broken.seconds:.1f} s" + (
            f", fixed {outcome.fixed.seconds:.1f} s" if outcome.fixed else ""
        )
        if outcome.passed:
            print(f"PASS {head}, {times})", flush=True)
            return
        print(f"FAIL {head}, {times}): " + shorten("; ".join(outcome.failures), 2000), flush=True)
        for name, run in (("broken", outcome.broken), ("fixed", outcome.fixed)):
            if run is not None:
                # a script's output is a stranger's text: its escapes must not drive the terminal
                shown = verify.tail(run.output) or "(no output)"
                print(f"  {name} output, last lines:", flush=True)
                print(
                    "\n".join("    | " + shorten(line, 1000) for line in shown.splitlines()),
                    flush=True,
                )

    start = time.monotonic()
    outcomes = verify.verify_all(
        catalog.entries, [s.entry for s in chosen], args.jobs, args.timeout, done, sandboxed
    )
    checked = verify.check_examples(chosen, args.timeout, sandboxed)
    found = [Problem(Location(*f.where), "E070", f.message) for f in checked.findings]
    seconds = time.monotonic() - start
    failed = [o for o in outcomes if not o.passed] + checked.failed_runs
    if text:
        if found:
            print(format_problems(found, "text"))
        for run in checked.failed_runs:
            print(f"FAIL {run.name}: {shorten(run.reason, 1000)}")
        print(
            f"examples: {checked.checked} checked, {checked.ran} run on CPU"
            + (f", not checked ({checked.missing_text()})" if checked.missing else "")
        )
        passed = sum(o.passed for o in outcomes)
        print(
            f"repros: {passed} of {len(outcomes)} passed in {seconds:.1f} s "
            f"({verify.environment()}, {args.jobs} jobs)"
        )
    else:
        print(
            json.dumps(
                verify.as_json(outcomes, checked, found, seconds),
                indent=2,
                sort_keys=True,
                ensure_ascii=False,
            )
        )
    return 1 if failed or found else 0


def run_new(args: argparse.Namespace) -> int:
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


def run_diff(args: argparse.Namespace) -> int:
    """Markdown on stdout, exit 0 whatever changed; exit 2 for a bad revision or no git."""
    from nanopedia.commands import diff

    try:
        print(diff.diff(Path(args.entries), args.base, args.head), end="")
    except NanopediaError as err:
        print(format_problems(err.problems, "text"), file=sys.stderr)
        return 2
    return 0
