"""Mutation testing of the theme's JavaScript with Stryker, and its score per file.

    .venv/bin/python bench/mutation_js.py [FILE[:LINES] ...] [--concurrency 1]
        [--incremental] [--survivors] [--max-minutes 240]

Stryker (`bench/stryker.config.json`) plants one small bug at a time in the scripts of
`theme/static/` (default: the browser worker and the search script) and runs the Node tests of
`tests/js/` that reach it (the tap runner, one test file per process, stopping at the first
failure; the focused files first, so that a mutant they kill never waits for the corpus parity
test); a mutant that no test fails survived. Prints the mutation score per file as Stryker
reports it (killed and timed out over all valid mutants) and, beside it, the score with the
survivors that `bench/mutation-equivalent.md` lists as equivalent under the script's heading (no
test can tell them apart from the original, each with its reason) set aside, and names a listed
one that a test now kills.

`FILE:LINES` (`search.js:100-200`) mutates those lines only; `--tests GLOB...` runs only those
test files (faster; the score is then a lower bound); `--survivors` lists each survivor with its
line; `--incremental` reuses the last run's results where neither the code nor the tests that
covered it changed.

Stryker and its tap runner are npm packages, pinned here and installed into `.cache/stryker/`
(git-ignored) the first time. The Node tests ask Python for the CLI's answers; those do not
depend on the mutated scripts, so they are kept for the run (`NANOPEDIA_PYTHON_MEMO`) instead of
asked again for every mutant. Slow, and not part of the test run: on two shared cores at a load
of about 10, `search.js:600-957` (500 mutants, the search tests only, `--concurrency 2`) took 30
minutes; a run of one file's line ranges gives a report per range. Stryker runs under
`nice -n 10` already: wrapped in another `nice` it gets almost no CPU beside other work (the
worker's 1,951 mutants went at 2.5 a minute so). The HTML report is
`.cache/mutation/js/mutation.html`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "bench" / "stryker.config.json"
EQUIVALENT = ROOT / "bench" / "mutation-equivalent.md"
PREFIX = ROOT / ".cache" / "stryker"
REPORT = ROOT / ".cache" / "mutation" / "js" / "mutation.json"
#: The packages, pinned (9.x is the last line that runs on Node 20); bump them here.
PACKAGES = {"@stryker-mutator/core": "9.6.1", "@stryker-mutator/tap-runner": "9.6.1"}
DEFAULT = ["theme/static/diagnose-worker.js", "theme/static/search.js"]
#: Mutant states Stryker counts: detected over valid (its "mutation score").
DETECTED = {"Killed", "Timeout"}
UNDETECTED = {"Survived", "NoCoverage"}


def installed() -> bool:
    for name, version in PACKAGES.items():
        meta = PREFIX / "node_modules" / name / "package.json"
        try:
            if json.loads(meta.read_text(encoding="utf-8")).get("version") != version:
                return False
        except (OSError, ValueError):
            return False
    return True


def install() -> None:
    """The pinned packages into PREFIX, unless they are there already."""
    if installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is not installed: it installs Stryker into .cache/stryker")
    specs = [f"{name}@{version}" for name, version in sorted(PACKAGES.items())]
    print(f"installing {' '.join(specs)} into {PREFIX}", file=sys.stderr)
    PREFIX.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--no-save"]
        + ["--loglevel=error", *specs],
        check=True,
        timeout=900,
    )
    if not installed():
        sys.exit(f"npm did not install {' '.join(specs)} into {PREFIX}")


#: A listed mutant of a script: ``code line``, mutator ``original`` -> ``replacement``: reason.
LISTED = re.compile(r"^- ``(.+?)``, (\w+) ``(.*?)`` -> ``(.*?)``: (.+)$")


def equivalents() -> list[dict[str, str]]:
    """The equivalent mutants `bench/mutation-equivalent.md` lists under a heading that names a
    script (`## theme/static/search.js`): the Python ones are mutmut's, by name."""
    found = []
    script = None
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            script = line[3:].strip() if line[3:].strip().endswith(".js") else None
        elif script and (m := LISTED.match(line)):
            found.append(
                {"file": script, "line": m[1], "mutator": m[2], "original": m[3]}
                | {"replacement": m[4], "why": m[5]}
            )
    return found


def source_line(text: str, mutant: dict[str, Any]) -> str:
    return text.splitlines()[mutant["location"]["start"]["line"] - 1].strip()


def original(text: str, mutant: dict[str, Any]) -> str:
    """The code the mutant replaces, up to the end of its first line (Stryker's columns
    count from 1)."""
    start, end = mutant["location"]["start"], mutant["location"]["end"]
    line = text.splitlines()[start["line"] - 1]
    stop = end["column"] - 1 if end["line"] == start["line"] else len(line)
    return line[start["column"] - 1 : stop].strip()


def listed(known: list[dict[str, str]], name: str, text: str, mutant: dict[str, Any]) -> bool:
    """Whether the equivalent list names this mutant: by file, code line, mutator, the code
    it replaces and the replacement (not by line number, which moves whenever the file above
    it changes)."""
    return any(
        k["file"] == name
        and k["line"] == source_line(text, mutant)
        and k["mutator"] == mutant["mutatorName"]
        and k["original"] == original(text, mutant)
        and k["replacement"] == mutant.get("replacement", "")
        for k in known
    )


def summary(report: dict[str, Any], known: list[dict[str, str]], survivors: bool) -> list[str]:
    """A line per file: its mutants by state, Stryker's score, and the score without the
    listed equivalents; then, with `survivors`, each survivor."""
    rows = [
        f"{'file':38} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'nocov':>5} "
        f"{'error':>5} {'score':>7} {'w/o eq.':>7}"
    ]
    details = []
    for name, entry in sorted(report["files"].items()):
        text = entry["source"]
        states = Counter(m["status"] for m in entry["mutants"])
        equivalent = 0
        for m in entry["mutants"]:
            line = source_line(text, m)
            if m["status"] in DETECTED and listed(known, name, text, m):
                details.append(
                    f"{name}: listed as equivalent but a test kills it, take it off the list:"
                    f" {m['mutatorName']} ``{original(text, m)}`` -> ``{m.get('replacement', '')}``"
                    f"\n    {line}"
                )
            if m["status"] not in UNDETECTED:
                continue
            same = listed(known, name, text, m)
            equivalent += same
            if survivors and not same:
                at = m["location"]["start"]
                details.append(
                    f"{name}:{at['line']}:{at['column']}: {m['status']} {m['mutatorName']}"
                    f" ``{original(text, m)}`` -> ``{m.get('replacement', '')}``\n    {line}"
                )
        detected = sum(states[s] for s in DETECTED)
        valid = detected + sum(states[s] for s in UNDETECTED)
        score = 100 * detected / valid if valid else 100.0
        kept = valid - equivalent
        without = 100 * detected / kept if kept else 100.0
        errors = states["RuntimeError"] + states["CompileError"]
        rows.append(
            f"{name:38} {len(entry['mutants']):7} {states['Killed']:6} {states['Timeout']:7} "
            f"{states['Survived']:8} {states['NoCoverage']:5} {errors:5} {score:6.1f}% "
            f"{without:6.1f}%"
        )
    return rows + details


def config(tests: list[str] | None) -> Path:
    """The configuration file, or a copy of it that runs `tests` only."""
    if not tests:
        return CONFIG
    settings = json.loads(CONFIG.read_text(encoding="utf-8"))
    settings["tap"]["testFiles"] = tests
    copy = REPORT.parent / "stryker.config.json"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return copy


def run(command: list[str], env: dict[str, str], seconds: float) -> int:
    """Stryker in a process group of its own, killed whole (its test processes too: one stuck in
    a mutant's endless loop does not answer SIGTERM) when it runs past `seconds`."""
    temp = ROOT / ".cache" / "stryker-tmp"
    before = set(temp.glob("sandbox-*"))
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=seconds)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as stop:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for sandbox in set(temp.glob("sandbox-*")) - before:  # this run's, not another's
            shutil.rmtree(sandbox, ignore_errors=True)
        if isinstance(stop, KeyboardInterrupt):
            raise
        print(f"stryker ran past {seconds / 60:g} minutes: stopped", file=sys.stderr)
        return 1
    if code:
        print(f"stryker failed with exit code {code}", file=sys.stderr)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="theme/static scripts, each FILE or FILE:LINES")
    parser.add_argument("--concurrency", type=int, default=1, help="test processes at once")
    parser.add_argument("--incremental", action="store_true", help="reuse the last run's results")
    parser.add_argument("--survivors", action="store_true", help="list every survivor")
    parser.add_argument("--tests", nargs="+", help="test files (globs) instead of tests/js's all")
    parser.add_argument("--max-minutes", type=float, default=240, help="stop the run after this")
    parser.add_argument("--report", action="store_true", help="only summarise the last report")
    args = parser.parse_args()
    known = equivalents()
    if not args.report:
        install()
        mutate = [f if "/" in f else f"theme/static/{f}" for f in args.files] or DEFAULT
        with tempfile.TemporaryDirectory(prefix="nanopedia-mutation-") as memo:
            env = {
                **os.environ,
                "NANOPEDIA_PYTHON": sys.executable,
                "NANOPEDIA_PYTHON_MEMO": memo,
                # Relative: each Stryker sandbox imports its own copy of the package.
                "PYTHONPATH": os.pathsep.join(["generator", os.environ.get("PYTHONPATH", "")]),
            }
            stryker = PREFIX / "node_modules" / "@stryker-mutator" / "core" / "bin" / "stryker.js"
            command = ["nice", "-n", "10", "node", str(stryker), "run", str(config(args.tests))]
            command += ["--concurrency", str(args.concurrency), "--mutate", ",".join(mutate)]
            if args.incremental:
                command.append("--incremental")
            code = run(command, env, 60 * args.max_minutes)
            if code:
                return code
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    print("\n".join(summary(report, known, args.survivors)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
