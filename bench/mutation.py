"""Mutation score per module: mutmut 3 plants small bugs in one module group at a time and runs
the tests that cover each one; a bug no test notices is a test the project lacks.

Not part of the default test run (it is slow: each mutant runs the tests that reach the mutated
function). Run it from the repository root in a venv with the test extra and the `mutation` extra
(mutmut), one group at a time on a shared machine:

    python3 -m venv /tmp/mutvenv && /tmp/mutvenv/bin/pip install -e '.[test,mutation]'
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py triage --budget 1800
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py --report          # scores so far
    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py triage --rerun    # after new tests

mutmut reads `[tool.mutmut]` in pyproject.toml. It imports mutants from `src/`, so each group runs
in a workspace, `.cache/mutation/<group>/`, that links the package in as `src/nanopedia` beside the
theme, entries and tests, with that section plus the group's modules (`only_mutate`) and tests
(`pytest_add_cli_args_test_selection`). Results stay there: a later run tests only mutants not yet
tested, `--rerun` tests again the survivors and those no test reached (killed mutants stay killed:
tests are only added), `--fresh` starts the group over. mutmut keeps a mutant's result until the
code of its function changes, not when a group's tests change: after new tests, measure the group
again with `--fresh`.

The score is killed / (mutants - equivalent): a mutant whose tests time out counts as killed (the
bug hangs the code), an unchecked one (a run stopped by `--budget`) as not killed. mutmut times a
mutant's tests without their fixtures' setup, so a timeout is tested again with a minute more
(`confirm_timeouts`; `--confirm` does it for results already there) before it counts.

A whole group takes hours on two cores, so `--sample N` tests a random sample of it instead, the
classic way to estimate a mutation score (random mutant selection, Wong & Mathur 1995):

    nice -n 10 /tmp/mutvenv/bin/python bench/mutation.py site --sample 200 --seed 1

The mutants not yet tested whose function some test reaches are the population; N of them, chosen
with the seed, are tested, and `sample.json` in the workspace keeps both lists (a later `--sample`
adds to the sample). Tests written for a sample's survivors make it a biased sample: measure again
on a new one (`--fresh --sample N --seed S`), not with `--rerun`. The group's score is then
the mutants tested before the draw (counted as they are), those no test reaches (not killed: mutmut
would mark them so without a run), and the population's share killed in the sample (only the
sample's own: mutmut tests the fast mutants first, so a stopped run's are no sample), with its 95 %
interval (the Agresti–Coull share, corrected for the finite population); the report sums the groups
into the whole package, and names any module no group holds. Equivalent mutants (the code means the
same) are listed with the reason in `bench/mutation-equivalent.md`; one listed there that a test
kills is named, to be taken off the list.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import math
import os
import random
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".cache" / "mutation"
EQUIVALENT = ROOT / "bench" / "mutation-equivalent.md"
PACKAGE = ROOT / "generator" / "nanopedia"
SAMPLE = "sample.json"
#: A name no mutant has: a run given it generates the mutants and maps the tests, then stops.
NOTHING = "nanopedia.no_such_function__mutmut_*"
#: What the tests read beside the package: linked into each workspace, copied by mutmut.
LINKED = ("theme", "entries", "reviews", "tests", "bench", "contrib", "nanopedia.toml")


@dataclass(frozen=True)
class Group:
    """Modules mutated together (globs below `nanopedia/`) and the tests that cover them."""

    modules: tuple[str, ...]
    tests: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    #: Tests that read the mutated source itself and so fail on mutmut's code, not on a bug.
    deselect: tuple[str, ...] = ()


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
    "bundle": Group(
        ("commands/bundle.py",), ("tests/unit/test_bundle.py", "tests/integration/test_bundle.py")
    ),
    "lock": Group(
        ("incremental/lock.py",), ("tests/unit/test_lock.py", "tests/unit/test_write.py")
    ),
    "verify": Group(
        ("commands/verify.py",),
        (
            "tests/unit/test_verify.py",
            "tests/integration/test_verify.py",
            "tests/integration/test_verify_cli.py",
            "tests/integration/test_verify_sandbox.py",
        ),
    ),
    # The repro launcher, tested in-process: verify runs it as `python -c <its source>`, out of
    # mutmut's sight, and a mutated copy (some 150 kB) is over the kernel's limit on one argument
    # (128 kB), so no other group mutates it.
    "launcher": Group(("commands/repro_launch.py",), ("tests/unit/test_repro_launch.py",)),
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
            "tests/unit/test_gates.py",
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
            "tests/integration/test_show.py",
            "tests/integration/test_text_report.py",
            "tests/integration/test_build.py",
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
            "tests/unit/test_joined.py",
            "tests/unit/test_inputs.py",
            "tests/unit/test_folder_store.py",
            "tests/unit/test_per_entry.py",
            "tests/integration/test_gitdates.py",
            "tests/integration/test_incremental.py",
        ),
        exclude=("incremental/lock.py",),
        deselect=(
            "tests/unit/test_context.py::test_site_and_incremental_keep_nothing_in_module_globals",
        ),
    ),
    # What a user runs: the command line and each command (the bundle and verify have groups of
    # their own), the launcher wrapper's and the frameworks' hooks, the MkDocs plugin, the
    # package's root (its API).
    "cli": Group(
        (
            "cli.py",
            "commands/*.py",
            "hooks/*.py",
            "mkdocs/*.py",
            "pins.py",
            "theme_dir.py",
            "__init__.py",
            "__main__.py",
        ),
        (
            "tests/unit/test_api.py",
            "tests/unit/test_cli_surface.py",
            "tests/unit/test_files.py",
            "tests/unit/test_sandbox.py",
            "tests/unit/test_slurm.py",
            "tests/integration/test_build.py",
            "tests/integration/test_check_cli.py",
            "tests/integration/test_cli_messages.py",
            "tests/integration/test_diagnose.py",
            "tests/integration/test_diagnose_view.py",
            "tests/integration/test_diff.py",
            "tests/integration/test_export_cli.py",
            "tests/integration/test_github_cli.py",
            "tests/integration/test_hooks.py",
            "tests/integration/test_listing.py",
            "tests/integration/test_mkdocs_plugin.py",
            "tests/integration/test_new.py",
            "tests/integration/test_readers_cli.py",
            "tests/integration/test_run_wrapper.py",
            "tests/integration/test_serve.py",
            "tests/integration/test_show.py",
            "tests/integration/test_triage.py",
            "tests/integration/test_verify_cli.py",
        ),
        exclude=(
            "commands/bundle.py",
            "commands/verify.py",
            "commands/repro_launch.py",
            "mkdocs/markdown.py",
        ),
    ),
}
"""Each group's tests run the code in-process, where mutmut sees it (a child process's run is out
of its sight), and are the quickest that reach it: every mutant runs the tests that reach its
function, so a slow test costs its seconds once per mutant."""

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


def prepare(name: str, group: Group, fresh: bool, setup_seconds: float | None = None) -> Path:
    """The group's workspace: links to the package and what the tests read, and a pyproject
    whose `[tool.mutmut]` names the group's modules and tests (and, with `setup_seconds`, gives
    each mutant's tests that much more time: see `confirm_timeouts`)."""
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
    config["pytest_add_cli_args"] = [
        *config.get("pytest_add_cli_args", []),  # type: ignore[misc]
        *[arg for test in group.deselect for arg in ("--deselect", test)],
    ]
    config["also_copy"] = [*LINKED, *config.get("also_copy", [])]  # type: ignore[misc]
    if setup_seconds is not None:
        config["timeout_constant"] = setup_seconds
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


@dataclass(frozen=True)
class Score:
    """Mutants killed (an estimate where a sample stands for its population) of those scored
    (all less the equivalent), and the variance of `killed` (where a sample stands for some)."""

    killed: float
    scored: int
    variance: float = 0.0
    sampled: bool = False

    def __add__(self, other: Score) -> Score:
        return Score(
            self.killed + other.killed,
            self.scored + other.scored,
            self.variance + other.variance,
            self.sampled or other.sampled,
        )

    def __str__(self) -> str:
        if not self.scored:
            return "100.0 %"
        score = 100.0 * self.killed / self.scored
        if not self.sampled:
            return f"{score:5.1f} %"
        half = 196.0 * math.sqrt(self.variance) / self.scored
        return f"{score:5.1f} % ± {half:.1f} (95 %, sampled)"


def classify(code: int | None) -> str:
    if code in KILLED:
        return "killed"
    if code in TIMEOUT:
        return "timeout"
    if code in SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "unchecked" if code is None else "other"


def tests_by_function(work: Path) -> dict[str, list[str]]:
    """mutmut's map of each function (its mangled name) to the tests that reach it."""
    path = work / "mutants" / "mutmut-stats.json"
    if not path.exists():
        return {}
    found: dict[str, list[str]] = json.loads(path.read_text("utf-8"))[
        "tests_by_mangled_function_name"
    ]
    return found


def reached(mutant: str, tests: dict[str, list[str]]) -> bool:
    """Whether a test reaches the mutant's function (mutmut marks the others "no tests" unrun)."""
    return bool(tests.get(mutant.replace("__init__.", "").partition("__mutmut_")[0]))


def group_codes(work: Path, group: Group) -> dict[str, int | None]:
    """Each mutant of the group's modules with its exit code (None: not tested yet)."""
    return {
        m: c
        for module, codes in results(work).items()
        if in_group(module, group)
        for m, c in codes.items()
    }


def sample_of(work: Path) -> dict[str, Any] | None:
    """The group's sample as `draw` keeps it (`population`, `chosen`, `seed`), or None."""
    path = work / SAMPLE
    return json.loads(path.read_text("utf-8")) if path.exists() else None


def draw(work: Path, group: Group, n: int, seed: int) -> list[str]:
    """Adds `n` mutants to the group's sample (`sample.json`) and returns the sample's mutants
    not tested yet. The population is fixed by the first draw: the mutants then untested, not
    listed as equivalent, whose function a test reaches."""
    codes = group_codes(work, group)
    if kept := sample_of(work):
        population, chosen = kept["population"], kept["chosen"]
    else:
        known, tests = equivalent(), tests_by_function(work)
        population = sorted(
            m for m, c in codes.items() if c is None and m not in known and reached(m, tests)
        )
        chosen = []
    rest = sorted(set(population) - set(chosen))
    chosen += random.Random(f"{seed}:{len(chosen)}").sample(rest, min(n, len(rest)))
    (work / SAMPLE).write_text(
        json.dumps({"seed": seed, "population": population, "chosen": chosen}, indent=1) + "\n",
        encoding="utf-8",
    )
    return [m for m in chosen if codes.get(m) is None]


def estimate(work: Path, group: Group, scored: int) -> Score | None:
    """The group's score with its sample standing for its population, or None without one."""
    if (kept := sample_of(work)) is None:
        return None
    population = set(kept["population"])
    codes = group_codes(work, group)
    outside = sum(1 for m, c in codes.items() if m not in population and c in KILLED | TIMEOUT)
    if all(codes.get(m) is not None for m in population):  # every one tested: a count
        return Score(outside + sum(1 for m in population if codes[m] in KILLED | TIMEOUT), scored)
    # Only the sample's own: mutmut tests the fast ones first, so the tested are no sample.
    tried = [codes[m] for m in kept["chosen"] if codes.get(m) is not None]
    if not tried:
        return Score(outside, scored)
    killed = sum(1 for c in tried if c in KILLED | TIMEOUT)
    size, n = len(population), len(tried)
    # The share's variance as Agresti and Coull take it (two kills and two survivors added), so
    # that a sample with no survivor still says how little it knows; with the finite population.
    near = (killed + 2) / (n + 4)
    variance = size * size * near * (1 - near) / (n + 4) * (1 - n / size)
    return Score(outside + size * killed / n, scored, variance, sampled=True)


def report(name: str, group: Group, show_survivors: bool) -> Score:
    """Print each module's score; returns the group's (estimated where it was sampled)."""
    work = WORK / name
    known = equivalent()
    total = Score(0, 0)
    for module, codes in results(work).items():
        if not in_group(module, group):
            continue
        count = Counter(classify(c) for c in codes.values())
        eq = sum(1 for m, c in codes.items() if m in known and c in SURVIVED | NO_TESTS)
        for mutant in sorted(m for m, c in codes.items() if m in known and c in KILLED | TIMEOUT):
            print(f"    {mutant} is listed as equivalent but a test kills it: take it off the list")
        killed = count["killed"] + count["timeout"]
        scored = Score(killed, len(codes) - eq)
        total += scored
        print(
            f"{module:44} {len(codes):5} {killed:6} {count['survived']:8} {count['no tests']:8}"
            f" {count['unchecked'] + count['other']:9} {eq:5} {scored}"
        )
        if show_survivors:
            for mutant, code in sorted(codes.items()):
                if mutant not in known and (code in SURVIVED or code in NO_TESTS):
                    print(f"    {'survived' if code in SURVIVED else 'no tests'}  {mutant}")
    if kept := sample_of(work):
        codes = group_codes(work, group)
        if untested := sum(1 for m in kept["chosen"] if codes.get(m) is None):
            print(f"    {untested} of the sample untested: the estimate leans to fast mutants")
    return estimate(work, group, total.scored) or total


def has_code(path: Path) -> bool:
    """Whether a module holds more than its docstring (something to mutate)."""
    body = ast.parse(path.read_bytes()).body
    return len(body) > 1 or (len(body) == 1 and ast.get_docstring(ast.Module(body, [])) is None)


def ungrouped() -> list[str]:
    """The package's modules with code that no group mutates."""
    return [
        path
        for path in sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
        if has_code(PACKAGE / path)
        and not any(
            any(fnmatch.fnmatch(path, m) for m in g.modules)
            and not any(fnmatch.fnmatch(path, m) for m in g.exclude)
            for g in GROUPS.values()
        )
    ]


HEADER = (
    f"{'module':44} {'total':>5} {'killed':>6} {'survived':>8} {'no tests':>8} "
    f"{'unchecked':>9} {'equiv':>5} {'score':>8}"
)


def run(work: Path, children: int, budget: float | None, names: list[str]) -> float:
    """One mutmut run in the workspace (of `names` only, if given), stopped (its records kept)
    after `budget` seconds."""
    mutmut = Path(sys.executable).parent / "mutmut"
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
        print(f"{work.name}: stopped after the budget of {budget:.0f} s; the rest stays unchecked")
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log.close()
    if proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL) and names != [NOTHING]:
        print(f"{work.name}: mutmut exited {proc.returncode}; see {work / 'mutmut.log'}")
    return time.monotonic() - start


def survivors(work: Path) -> list[str]:
    """The mutants to test again: not killed and not listed as equivalent."""
    known = equivalent()
    return [
        m
        for codes in results(work).values()
        for m, c in codes.items()
        if (c in SURVIVED or c in NO_TESTS) and m not in known
    ]


#: Seconds added to a timed-out mutant's time limit when it is tested again (`confirm_timeouts`).
SETUP_SECONDS = 60.0


def confirm_timeouts(
    name: str, group: Group, children: int, budget: float | None, among: set[str] | None
) -> float:
    """Test again, with `SETUP_SECONDS` more, the mutants of `among` (None: all) that timed out.

    mutmut limits a mutant's tests to a multiple of their time on the real code, which it
    measures without the fixtures' setup: tests whose time is mostly setup (a site built once,
    a browser started) then pass the limit on a harmless mutant, and the timeout would count as
    a kill. With the setup's time added, only a mutant that really hangs still times out."""
    work = WORK / name
    timed = sorted(
        m
        for m, c in group_codes(work, group).items()
        if c in TIMEOUT and (among is None or m in among)
    )
    if not timed:
        return 0.0
    print(f"{name}: {len(timed)} timed-out mutant(s) tested again with {SETUP_SECONDS:.0f} s more")
    prepare(name, group, False, SETUP_SECONDS)
    try:
        return run(work, children, budget, timed)
    finally:
        prepare(name, group, False)


def test_group(name: str, args: argparse.Namespace) -> float:
    """Runs a group as asked (all, its survivors again, or a sample); returns the seconds."""
    group = GROUPS[name]
    work = prepare(name, group, args.fresh)
    if args.confirm:
        kept = sample_of(work)
        among = set(kept["chosen"]) if kept else None
        return confirm_timeouts(name, group, args.max_children, args.budget, among)
    if args.rerun:
        names = survivors(work)
        if not names:
            print(f"{name}: no survivors to test again")
            return 0.0
        return run(work, args.max_children, args.budget, names)
    if args.sample is None:
        took = run(work, args.max_children, args.budget, [])
        return took + confirm_timeouts(name, group, args.max_children, args.budget, None)
    # Mutants generated (again for changed code, whose results mutmut then drops) and the tests
    # mapped, nothing tested: the population is drawn from what the code is now.
    took = run(work, args.max_children, None, [NOTHING])
    names = draw(work, group, args.sample, args.seed)
    if names:
        took += run(work, args.max_children, args.budget, names)
        took += confirm_timeouts(name, group, args.max_children, args.budget, set(names))
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"groups to run (of {', '.join(GROUPS)})")
    parser.add_argument("--report", action="store_true", help="only print the scores so far")
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    parser.add_argument("--rerun", action="store_true", help="test survivors and untested again")
    parser.add_argument(
        "--confirm", action="store_true", help="test timed-out mutants again, with setup time"
    )
    parser.add_argument("--fresh", action="store_true", help="start the groups over")
    parser.add_argument("--budget", type=float, help="seconds per group before it is stopped")
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once")
    parser.add_argument("--sample", type=int, help="test this many more of a random sample")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    args = parser.parse_args()
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    chosen = args.groups or list(GROUPS)
    timings = {} if args.report else {name: test_group(name, args) for name in chosen}
    print(HEADER)
    whole = Score(0, 0)
    for name in chosen:
        if not (WORK / name / "mutants").exists():
            print(f"{name}: not run yet")
            continue
        score = report(name, GROUPS[name], args.survivors)
        whole += score
        took = f", {timings[name]:.0f} s" if name in timings else ""
        print(f"{'= ' + name:44} {'':5} {score.killed:6.0f} {'':>42} {score}{took}")
    if whole.scored:
        print(f"groups run: {whole.killed:.0f} / {whole.scored} = {whole}")
    if not args.groups and (missing := ungrouped()):
        print(f"in no group: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
