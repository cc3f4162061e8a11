"""Compare two versions of the generator on one-entry edits (not part of the tests).

    .venv/bin/python bench/ab.py BEFORE [AFTER] [--n 10000] [--edits 15] [--git] [--same|--cold]

This machine's speed drifts by up to 2x over tens of minutes, so figures taken at different times
do not compare. Each version (a git revision; AFTER defaults to the working tree) gets its own
copy of the same corpus, built once. Then the same entry is edited in both copies and each copy
is rebuilt, the order alternating from one edit to the next. Prints each version's median wall
time and CPU time.
With `--same`, nothing is edited: each rebuild is a no-change build ("site/ is up to date").
With `--cold`, nothing is edited and each build is a cold one (`--no-cache`, into a new folder).
"""

from __future__ import annotations

import argparse
import compileall
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

from run import CORPUS, HERE, ROOT, commit_each, edit_one, timed


def code(rev: str | None, into: Path) -> tuple[list[str], dict[str, str]]:
    """The generator and theme of `rev` (None: the working tree) in `into`, compiled; the
    command that runs it and its environment. Since issue 30 the package is
    `nanopedia/`; from issue 19 to then `generator/` held its files, imported as
    `nanopedia`, and before that as `generator`: each side runs its own code, never the editable
    install."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    if rev is None:
        for part in ("generator", "theme"):
            shutil.copytree(ROOT / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "generator", "theme"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
    if (into / "generator" / "nanopedia").is_dir():  # the layout since issue 30
        path = into / "generator"
    else:  # before: the package's files straight in generator/, imported as nanopedia or generator
        name = (
            "nanopedia"
            if "from nanopedia" in (into / "generator" / "__main__.py").read_text()
            else "generator"
        )
        if name != "generator":
            (into / "generator").rename(into / name)
        path = into
    compileall.compile_dir(path, quiet=1)
    name = "generator" if (path / "generator" / "__main__.py").exists() else "nanopedia"
    return [sys.executable, "-m", name], {**os.environ, "PYTHONPATH": str(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="git revision, e.g. HEAD~3")
    ap.add_argument("after", nargs="?", help="git revision (default: the working tree)")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=15)
    ap.add_argument(
        "--git", action="store_true", help="entries in a git checkout, one commit per entry"
    )
    ap.add_argument(
        "--same",
        action="store_true",
        help="time rebuilds with nothing changed instead of one-entry edits",
    )
    ap.add_argument(
        "--cold",
        action="store_true",
        help="time cold builds (--no-cache into a fresh folder) instead of edits",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/nanopedia-bench"))
    args = ap.parse_args()
    corpus = args.work / f"n{args.n}"
    if not (corpus / "entries.jsonl").exists():
        subprocess.run(
            [sys.executable, str(CORPUS), "--n", str(args.n), "--out", str(corpus)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    sides = []
    for name, rev in (("before", args.before), ("after", args.after)):
        base = args.work / "ab" / name
        shutil.rmtree(base, ignore_errors=True)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_corpus.py"),
                str(corpus / "entries.jsonl"),
                str(base / "entries"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if args.git:
            commit_each(base / "entries")
        run, env = code(rev, args.work / "ab" / f"{name}-code")
        build = [*run, "build", "--entries", "entries", "--out", "site"]
        timed(build, base, env)  # the cold build each edit starts from
        sides.append((name, rev or "working tree", base, build, env, [], []))
    for i in range(args.edits):
        for _, _, base, build, env, seconds, cpu in sides if i % 2 == 0 else sides[::-1]:
            command = build
            if args.cold:
                shutil.rmtree(base / "cold", ignore_errors=True)
                command = [*build[:-1], "cold", "--no-cache"]
            elif not args.same:
                edit_one(base / "entries", i)
            used = _cpu()
            seconds.append(timed(command, base, env)[0])
            cpu.append(_cpu() - used)
    for name, rev, *_, seconds, cpu in sides:
        print(
            f"{name:<7} {rev:<14} median {statistics.median(seconds):.3f} s wall, "
            f"{statistics.median(cpu):.3f} s CPU, of {len(seconds)}: "
            + " ".join(f"{s:.2f}" for s in seconds)
        )


def _cpu() -> float:
    """CPU seconds of the finished builds so far (user and system, the workers included, the
    detached state saver not): steadier than wall time when the other core is busy."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


if __name__ == "__main__":
    main()
