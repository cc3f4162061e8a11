"""Mutation score per module: mutmut 3 plants small bugs in one module group at a time and runs
the tests that cover each one; a bug no test notices is a test the project lacks.

Not part of the default test run (it is slow: each mutant runs the tests that reach the mutated
function). Run it from the repository root in a venv with the test extra and the `mutation` extra
(mutmut), one group at a time on a shared machine:

    python3 -m venv /tmp/mutvenv && /tmp/mutvenv/bin/pip install -e '.[test,mutation]'
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py triage --budget 1800
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py --report          # scores so far
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py triage --rerun    # after new tests

mutmut reads `[tool.mutmut]` in pyproject.toml. It imports mutants from `src/`, so each group
runs in a workspace, `.cache/mutation/<group>/`, that links the package in as
`src/nanopedia` beside the theme, entries and tests, with that section plus the group's modules
(`only_mutate`) and tests (`pytest_add_cli_args_test_selection`). Results stay there: a later run
tests only mutants not yet tested, `--rerun` tests the survivors and the untested again (killed
mutants stay killed: tests are only added), `--fresh` starts the group over. Changing a group's
modules or tests changes its `[tool.mutmut]`, and mutmut then tests every mutant again.

The score is killed / (mutants - equivalent): a mutant whose tests time out counts as killed (the
bug hangs the code), an unchecked one (a run stopped by `--budget`) as not killed. Equivalent
mutants (the code means the same) are listed with the reason in `bench/mutation-equivalent.md`;
one listed there that a test kills is named, to be taken off the list.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".cache" / "mutation"
EQUIVALENT = ROOT / "bench" / "mutation-equivalent.md"
#: What the tests read beside the package: linked into each workspace, copied by mutmut.
LINKED = ("theme", "entries", "reviews", "tests", "bench")


@dataclass(frozen=True)
class Group:
    """Modules mutated together (globs below `nanopedia/`) and the tests that cover them."""

    modules: tuple[str, ...]
    tests: tuple[str, ...]
    exclude: tuple[str, ...] = ()


GROUPS: dict[str, Group] = {
    # The rules a reader sees first: which entry ranks first, which line and rank failed first,
    # what a timestamp says, which Root Cause block torchrun meant.
    "diagnosis": Group(
        ("diagnosis/rank.py", "diagnosis/lines.py", "diagnosis/elastic.py"),
        (
            "tests/unit/test_rank.py",
            "tests/unit/test_lines.py",
            "tests/unit/test_elastic.py",
            "tests/unit/test_readers.py",
            "tests/unit/test_tails.py",
            "tests/integration/test_ranking_cases.py",
            "tests/integration/test_report.py",
        ),
    ),
    "triage": Group(
        ("diagnosis/triage.py", "diagnosis/triage_report.py", "diagnosis/hosts.py"),
        (
            "tests/unit/test_triage.py",
            "tests/unit/test_triage_report.py",
            "tests/unit/test_hosts.py",
            "tests/unit/test_inert_text.py",
            "tests/unit/test_triage_evidence.py",
        ),
    ),
    # What a reader of `diagnose` sees: the verdict, confidence word, first failure, likely
    # cause and fix, evidence by rank and its cuts, in text, Markdown and JSON, and the answer
    # when nothing matched.
    "report": Group(
        (
            "diagnosis/report.py",
            "diagnosis/result.py",
            "diagnosis/text_report.py",
            "diagnosis/unmatched.py",
        ),
        (
            "tests/unit/test_report.py",
            "tests/unit/test_text_report.py",
            "tests/unit/test_result.py",
            "tests/unit/test_unmatched.py",
            "tests/unit/test_inert_text.py",
            "tests/integration/test_report.py",
        ),
    ),
    # What is read beside the logs and how it is handed on: error files, Flight Recorder dumps,
    # jobs, versions, the JSON contract, GitHub annotations and triage's evidence.
    "readers": Group(
        (
            "diagnosis/readers.py",
            "diagnosis/flight.py",
            "diagnosis/jobs.py",
            "diagnosis/contract.py",
            "diagnosis/versions.py",
            "diagnosis/github.py",
            "diagnosis/triage_evidence.py",
        ),
        (
            "tests/unit/test_readers.py",
            "tests/unit/test_flight.py",
            "tests/unit/test_jobs.py",
            "tests/unit/test_contract.py",
            "tests/unit/test_versions.py",
            "tests/unit/test_github_format.py",
            "tests/unit/test_triage_evidence.py",
        ),
    ),
    # Which lines a log holds and which of them a fingerprint found: reading (gzip, UTF-16,
    # CRLF, colour, terminal wraps, huge lines, stretches), line numbers, the late lines of a big
    # log, the wrapper's tails and the error lines of an unmatched job.
    "scan": Group(
        (
            "diagnosis/scan.py",
            "diagnosis/logs.py",
            "diagnosis/tails.py",
            "diagnosis/error_lines.py",
        ),
        (
            "tests/unit/test_scan.py",
            "tests/unit/test_logs.py",
            "tests/unit/test_tails.py",
            "tests/unit/test_error_lines.py",
        ),
    ),
    # Which fingerprints a buffer holds: RE2's set, or Hyperscan's database of the programs
    # widened for bytes, stored with its hash (a damaged file is compiled again).
    "presence": Group(("diagnosis/presence.py",), ("tests/unit/test_presence.py",)),
    # A triage job's files read into a record (binary, one-line, too large, unreadable skips)
    # and the compiled catalogue a diagnosis reads its entries from.
    "workers": Group(
        ("diagnosis/workers.py", "diagnosis/catalogue.py"),
        (
            "tests/unit/test_workers.py",
            "tests/unit/test_catalogue.py",
            "tests/unit/test_triage.py",
        ),
    ),
    # Which entries a small log can match at all (the literals every match needs), and the
    # records an entry is stored as in the catalogue and read back from.
    "prefilter": Group(
        ("diagnosis/prefilter.py", "diagnosis/views.py"),
        ("tests/unit/test_prefilter.py", "tests/unit/test_catalogue.py"),
    ),
    "mkdocs": Group(("mkdocs/markdown.py",), ("tests/integration/test_mkdocs_markdown.py",)),
    "bundle": Group(("commands/bundle.py",), ("tests/unit/test_bundle.py",)),
    "lock": Group(
        ("incremental/lock.py",), ("tests/unit/test_lock.py", "tests/unit/test_write.py")
    ),
    "verify": Group(("commands/verify.py",), ("tests/unit/test_verify.py",)),
    "links": Group(
        ("content/links.py",),
        (
            "tests/unit/test_links.py",
            "tests/unit/test_validate.py",
            "tests/integration/test_mkdocs_markdown.py",
        ),
    ),
    # What a contributor sees first: an entry read, checked against the schema and the rules,
    # each problem at its line with a hint, its fingerprints proven (examples, slowness), the
    # PR check's gates, the portable export.
    "content": Group(
        ("content/*.py", "model.py", "errors.py"),
        (
            "tests/unit/test_validate.py",
            "tests/unit/test_schema.py",
            "tests/unit/test_load.py",
            "tests/unit/test_catalog.py",
            "tests/unit/test_portable.py",
            "tests/unit/test_advice.py",
            "tests/unit/test_files.py",
            "tests/unit/test_errors.py",
            "tests/integration/test_load.py",
            "tests/integration/test_apicheck.py",
            "tests/integration/test_hostile_entries.py",
            "tests/integration/test_check_golden.py",
            "tests/integration/test_check_cli.py",
            "tests/integration/test_fingerprint_guard.py",
            "tests/integration/test_reviews.py",
            "tests/integration/test_suggestions.py",
        ),
        exclude=("content/links.py",),
    ),
    # What a reader sees of an entry: markdown made safe, code highlighted, the page views, the
    # search index and its shards, the feed, the terminal page, the site's settings.
    "site": Group(
        ("site/*.py", "config.py"),
        (
            "tests/unit/test_config.py",
            "tests/unit/test_render.py",
            "tests/unit/test_plan.py",
            "tests/unit/test_joined.py",
            "tests/unit/test_views.py",
            "tests/integration/test_markdown_plain.py",
            "tests/integration/test_mkdocs_markdown.py",
            "tests/integration/test_highlight.py",
            "tests/integration/test_search.py",
            "tests/integration/test_feed.py",
            "tests/integration/test_hostile_entries.py",
        ),
    ),
    # The build that reuses the last one: its cache, state, plan of what to render again, the
    # writing of the new site beside the old, git dates (the lock has a group of its own).
    "incremental": Group(
        ("incremental/*.py",),
        (
            "tests/unit/test_cache.py",
            "tests/unit/test_context.py",
            "tests/unit/test_state.py",
            "tests/unit/test_write.py",
            "tests/integration/test_gitdates.py",
            "tests/integration/test_incremental.py",
        ),
        exclude=("incremental/lock.py",),
    ),
}
"""Each group's tests are in-process and quick: a test that compiles the catalogue or starts
processes costs seconds of CPU for every mutant and trips mutmut's CPU limit, so the CLI and
integration suites are left to the default run."""

#: mutmut's exit codes for a mutant, by what they mean here.
KILLED = {1, 3}
TIMEOUT = {36, 24, -24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


def mutmut_section() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f)["tool"]["mutmut"])


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def prepare(name: str, group: Group, fresh: bool) -> Path:
    """The group's workspace: links to the package and what the tests read, and a pyproject
    whose `[tool.mutmut]` names the group's modules and tests."""
    work = WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for link, target in [("src", ROOT / "generator"), *[(p, ROOT / p) for p in LINKED]]:
        path = work / link
        if not path.is_symlink():
            path.symlink_to(target, target_is_directory=True)
    config = mutmut_section()
    config["only_mutate"] = [f"src/nanopedia/{m}" for m in group.modules]
    config["do_not_mutate"] = [
        *config.get("do_not_mutate", []),  # type: ignore[misc]
        *[f"src/nanopedia/{m}" for m in group.exclude],
    ]
    config["pytest_add_cli_args_test_selection"] = [t for t in group.tests if (ROOT / t).exists()]
    config["also_copy"] = [*LINKED, *config.get("also_copy", [])]  # type: ignore[misc]
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", project)
    section = "".join(f"{k} = {_toml(v)}\n" for k, v in config.items())
    (work / "pyproject.toml").write_text(f"{project}\n[tool.mutmut]\n{section}", encoding="utf-8")
    (work / "tmp").mkdir(exist_ok=True)
    return work


def results(work: Path) -> dict[str, dict[str, int | None]]:
    """Module name to {mutant name: exit code}, from the workspace's mutmut records."""
    out: dict[str, dict[str, int | None]] = {}
    for meta in sorted((work / "mutants" / "src").rglob("*.py.meta")):
        module = ".".join(meta.relative_to(work / "mutants" / "src").with_suffix("").parts)
        module = module.removesuffix(".py")
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        if codes:
            out[module] = codes
    return out


def equivalent() -> dict[str, str]:
    """Mutant name to the reason it changes nothing, from `bench/mutation-equivalent.md`
    (a line `- \\`name\\`: reason`)."""
    if not EQUIVALENT.exists():
        return {}
    found = re.findall(r"^- `([^`]+__mutmut_\d+)`: (.+)$", EQUIVALENT.read_text("utf-8"), re.M)
    return dict(found)


def in_group(module: str, group: Group) -> bool:
    path = module.removeprefix("nanopedia.").replace(".", "/") + ".py"
    return any(fnmatch.fnmatch(path, m) for m in group.modules) and not any(
        fnmatch.fnmatch(path, m) for m in group.exclude
    )


def report(name: str, group: Group, show_survivors: bool) -> tuple[int, int]:
    """Print each module's score; returns (killed, total less equivalent) for the group."""
    work = WORK / name
    known = equivalent()
    group_killed = group_scored = 0
    for module, codes in results(work).items():
        if not in_group(module, group):
            continue
        count = Counter(
            "killed"
            if c in KILLED
            else "timeout"
            if c in TIMEOUT
            else "survived"
            if c in SURVIVED
            else "no tests"
            if c in NO_TESTS
            else "unchecked"
            if c is None
            else "other"
            for c in codes.values()
        )
        eq = sum(1 for m, c in codes.items() if m in known and c in SURVIVED | NO_TESTS)
        for mutant in sorted(m for m, c in codes.items() if m in known and c in KILLED | TIMEOUT):
            print(f"    {mutant} is listed as equivalent but a test kills it: take it off the list")
        killed = count["killed"] + count["timeout"]
        scored = len(codes) - eq
        group_killed += killed
        group_scored += scored
        score = 100.0 * killed / scored if scored else 100.0
        print(
            f"{module:44} {len(codes):5} {killed:6} {count['survived']:8} {count['no tests']:8}"
            f" {count['unchecked'] + count['other']:9} {eq:5} {score:6.1f} %"
        )
        if show_survivors:
            for mutant, code in sorted(codes.items()):
                if mutant not in known and (code in SURVIVED or code in NO_TESTS):
                    print(f"    {'survived' if code in SURVIVED else 'no tests'}  {mutant}")
    return group_killed, group_scored


HEADER = (
    f"{'module':44} {'total':>5} {'killed':>6} {'survived':>8} {'no tests':>8} "
    f"{'unchecked':>9} {'equiv':>5} {'score':>8}"
)


def run(name: str, work: Path, children: int, budget: float | None, rerun: bool) -> float:
    """One mutmut run in the workspace, stopped (its records kept) after `budget` seconds."""
    mutmut = Path(sys.executable).parent / "mutmut"
    names: list[str] = []
    if rerun:
        known = equivalent()
        names = [
            m
            for codes in results(work).values()
            for m, c in codes.items()
            if (c in SURVIVED or c in NO_TESTS) and m not in known
        ]
        if not names:
            print(f"{name}: no survivors to test again")
            return 0.0
    env = {**os.environ, "TMPDIR": str(work / "tmp"), "NANOPEDIA_CACHE": str(work / "tmp")}
    start = time.monotonic()
    log = (work / "mutmut.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [str(mutmut), "run", "--max-children", str(children), *names],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        print(f"{name}: stopped after the budget of {budget:.0f} s; the rest stays unchecked")
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log.close()
    if proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
        print(f"{name}: mutmut exited {proc.returncode}; see {work / 'mutmut.log'}")
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"groups to run (of {', '.join(GROUPS)})")
    parser.add_argument("--report", action="store_true", help="only print the scores so far")
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    parser.add_argument("--rerun", action="store_true", help="test survivors and untested again")
    parser.add_argument("--fresh", action="store_true", help="start the groups over")
    parser.add_argument("--budget", type=float, help="seconds per group before it is stopped")
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once")
    args = parser.parse_args()
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    chosen = args.groups or list(GROUPS)
    timings: dict[str, float] = {}
    if not args.report:
        for name in chosen:
            work = prepare(name, GROUPS[name], args.fresh)
            timings[name] = run(name, work, args.max_children, args.budget, args.rerun)
    print(HEADER)
    total_killed = total_scored = 0
    for name in chosen:
        if not (WORK / name / "mutants").exists():
            print(f"{name}: not run yet")
            continue
        killed, scored = report(name, GROUPS[name], args.survivors)
        total_killed += killed
        total_scored += scored
        took = f", {timings[name]:.0f} s" if name in timings else ""
        score = 100.0 * killed / scored if scored else 100.0
        print(
            f"{'= ' + name:44} {'':5} {killed:6} {'':>8} {'':>8} {'':>9} {'':>5} {score:6.1f} %"
            f"{took}"
        )
    if total_scored:
        print(
            f"all groups run: {total_killed} / {total_scored} = "
            f"{100.0 * total_killed / total_scored:.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
