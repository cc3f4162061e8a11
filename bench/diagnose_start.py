"""Start-up of `nanopedia diagnose` on a one-screen log, beside `python -c pass` and `grep` (not
part of the tests).

    .venv/bin/python bench/diagnose_start.py [--runs 15] [--n 1000] [--before REV]

Each command runs in a fresh process, the commands alternating within a round, `--runs` rounds;
prints each one's median wall time and median CPU time (the process and its children: steadier
than wall time on a shared machine). The commands: `python -c pass`; `grep -E` of twenty error
strings (`diagnose_throughput.GREP_STRINGS`); `nanopedia diagnose LOG` with the encyclopedia's
entries; the same with `--entries` a folder of those entries and `--n` generated ones
(`/work/shared/bench/corpus.py`, `make_corpus.py`, each given `--fingerprints` decisive
fingerprints of its own), the compiled catalogue already in the cache (one untimed run first);
the difference of the two, per added entry, in wall and in CPU time. With `--before REV`, the
same two diagnoses by the code of that git revision alternate with them (`ab.code`). Targets
(issue 32): 0.15 s with today's entries, 0.25 s with 1,000 more, no measurable growth per entry.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ab import code  # noqa: E402
from diagnose_throughput import GREP_STRINGS  # noqa: E402
from run import CORPUS, ROOT  # noqa: E402

LOG = ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log"
"""A four-rank torchrun failure, 70 lines: one screen."""


def corpus(work: Path, n: int, fingerprints: int) -> Path:
    """The encyclopedia's entries and `n` generated ones, each with `fingerprints` of its own."""
    import yaml

    folder = work / f"entries-{n}x{fingerprints}"
    if folder.is_dir():
        return folder
    shared = work / f"n{n}"
    if not (shared / "entries.jsonl").exists():
        subprocess.run(
            [sys.executable, str(CORPUS), "--n", str(n), "--out", str(shared)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    scratch = work / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    subprocess.run(
        [sys.executable, str(HERE / "make_corpus.py"), str(shared / "entries.jsonl"), str(scratch)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    for i, path in enumerate(sorted(scratch.glob("*.yaml"))):
        if path.name == "tags.yaml":
            continue
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for cause in doc["root_causes"]:  # make_corpus.py predates these required fields
            cause.setdefault("domain", "workload")
            cause.setdefault("action", "fix-code")
        doc["fingerprints"] = [
            {
                "id": f"synthetic-{j}",
                "pattern": rf"SyntheticFailure{i}x{j}: [a-z]+ failed",
                "indicates": "decisive",
                "cause": doc["root_causes"][0]["id"],
                "must_match": [f"SyntheticFailure{i}x{j}: step failed"],
                "must_not_match": [f"SyntheticFailure{i}x{j}: step passed"],
            }
            for j in range(fingerprints)
        ]
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    for path in (ROOT / "entries").glob("*.yaml"):  # the real ones and their tag registry
        if path.name != "tags.yaml":
            shutil.copy(path, scratch / path.name)
    tags = yaml.safe_load((ROOT / "entries" / "tags.yaml").read_text(encoding="utf-8"))
    generated = yaml.safe_load((scratch / "tags.yaml").read_text(encoding="utf-8"))
    merged = {**generated, **tags} if isinstance(tags, dict) else tags
    (scratch / "tags.yaml").write_text(
        yaml.safe_dump(merged, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    scratch.rename(folder)
    return folder


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: the process and its children, steadier than wall
    time when other work shares the cores)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command,
        env=env,
        cwd=tempfile.gettempdir(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--n", type=int, default=1000, help="generated entries (default 1000)")
    ap.add_argument("--fingerprints", type=int, default=3, help="per generated entry")
    ap.add_argument("--before", help="git revision to time beside the working tree")
    ap.add_argument("--work", type=Path, default=Path("/tmp/nanopedia-bench/start"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    big = corpus(args.work, args.n, args.fingerprints)
    cache = args.work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    plain = {**os.environ, "NANOPEDIA_CACHE": str(cache)}
    plain.pop("PYTHONPATH", None)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], plain),
        "grep -E (20 strings)": (["grep", "-E", "-c", "|".join(GREP_STRINGS), str(LOG)], plain),
    }
    sides = [("after", None)] + ([("before", args.before)] if args.before else [])
    for side, rev in sides:
        run, env = code(rev, args.work / f"{side}-code")
        env = {**env, "NANOPEDIA_CACHE": str(cache / side)}
        # the encyclopedia's own entries, by path: a code copy has none beside it
        commands[
            f"{side}: diagnose, {len(list((ROOT / 'entries').glob('*.yaml'))) - 1} entries"
        ] = ([*run, "diagnose", "--entries", str(ROOT / "entries"), str(LOG)], env)
        commands[f"{side}: diagnose, +{args.n} entries"] = (
            [*run, "diagnose", "--entries", str(big), str(LOG)],
            env,
        )
    for command, env in commands.values():  # compiles each catalogue once, untimed
        subprocess.run(
            command,
            env=env,
            cwd=tempfile.gettempdir(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i in range(args.runs):
        for name in names if i % 2 == 0 else names[::-1]:
            wall, used = timed(*commands[name])
            times[name].append(wall)
            cpu[name].append(used)
    print(
        f"{LOG.name} ({LOG.stat().st_size} bytes), medians of {args.runs} alternating runs, "
        f"load average {os.getloadavg()[0]:.2f}:"
    )
    for name, seconds in times.items():
        print(
            f"  {name:<34} {statistics.median(seconds):.3f} s   (min {min(seconds):.3f}; "
            f"CPU {statistics.median(cpu[name]):.3f} s)"
        )
    for side, _ in sides:
        growth = []
        for measure in (times, cpu):
            small, large = (
                statistics.median(v)
                for k, v in measure.items()
                if k.startswith(side) and "diagnose" in k
            )
            growth.append(f"{1000 * (large - small) / args.n:+.3f} ms")
        print(f"  {side}: per added entry {growth[0]} wall, {growth[1]} CPU")


if __name__ == "__main__":
    main()
