"""Overhead of `nanopedia run` on a healthy command: 100 MB of output, directly and wrapped (not
part of the tests).

    .venv/bin/python bench/run_overhead.py [--runs 7] [--mb 100] [--prefixed] [--ranks 1]
                                           [--before REV] [--after REV]

The command is a Python script that writes `--mb` MB of log lines (`step N loss ...`, or with
`--prefixed` torchrun's `[rankN]:` prefixes, the wrapper's slow path; `--ranks` ranks take turns
line by line, as a job whose every rank prints) to stdout in 64 KiB writes and a progress line to
stderr every 800 lines. Each round runs it directly and wrapped, with stdout and stderr into files
(as a batch job's output goes), the order of the sides turning from one round to the next; with
`--before REV` a third side is the wrapper of that git revision (`ab.code`: its own copy,
compiled), and `--after REV` replaces the working tree with another revision. Prints the median
wall time and CPU time (the wrapper and the command together) of each side, each wrapped side's
overhead over the direct one, and checks that every wrapped output is byte-identical to the
direct one.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ab import code

ROOT = Path(__file__).resolve().parent.parent
GEN = """\
import sys
mb, prefixed, ranks = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
out, err = sys.stdout.buffer, sys.stderr.buffer
line = b"step %d loss 0.1234 lr 3.0e-4 grad_norm 1.02 tokens/s 152340.5 mfu 0.41\\n"
block, n, done, total = [], 0, 0, mb * 1_000_000
while done < total:
    block.append((b"[rank%d]:" % (n % ranks) if prefixed else b"") + line % n)
    n += 1
    if len(block) == 800:
        data = b"".join(block)
        out.write(data)
        done += len(data)
        block = []
        err.write(b"progress %d\\n" % n)
out.flush()
"""


def timed(cmd: list[str], folder: Path, tag: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (of the whole process tree) of one run."""
    with open(folder / f"{tag}.out", "wb") as out, open(folder / f"{tag}.err", "wb") as err:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, stdout=out, stderr=err, cwd=folder, check=True, env=env)
        wall = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--prefixed", action="store_true")
    p.add_argument("--ranks", type=int, default=1, help="ranks taking turns (with --prefixed)")
    p.add_argument("--before", help="git revision whose wrapper runs as a third side")
    p.add_argument("--after", help="git revision of the wrapper (default: the working tree)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "gen.py").write_text(GEN)
        command = [
            sys.executable,
            "gen.py",
            str(args.mb),
            "1" if args.prefixed else "0",
            str(args.ranks),
        ]
        sides: list[tuple[str, list[str], dict[str, str]]] = [("direct", command, dict(os.environ))]
        for name, rev in (("before", args.before), ("after", args.after)):
            if name == "after" or rev:
                run, env = code(rev, folder / f"{name}-code")
                sides.append(
                    (f"{name} ({rev or 'working tree'})", [*run, "run", "--", *command], env)
                )
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in sides}
        for i in range(args.runs):
            for n, (name, cmd, env) in enumerate(sides[i % len(sides) :] + sides[: i % len(sides)]):
                times[name].append(timed(cmd, folder, f"side{n}", env))
        same = _same(folder, sides)
        size = (folder / "check-direct.out").stat().st_size
    print(
        f"{size / 1e6:.0f} MB to stdout"
        f"{f' ([rankN]: prefixed, {args.ranks} rank(s) taking turns)' if args.prefixed else ''}, "
        f"{args.runs} runs per side, order turning; median wall and CPU seconds"
    )
    direct = statistics.median(w for w, _ in times["direct"])
    for name, got in times.items():
        wall, cpu = statistics.median(w for w, _ in got), statistics.median(c for _, c in got)
        extra = "" if name == "direct" else f"  overhead {wall - direct:+.3f} s wall"
        print(f"  {name:<28} {wall:7.3f} s wall {cpu:7.3f} s CPU{extra}")
    print(f"  wrapped output identical to the direct one: {same}")


def _same(folder: Path, sides: list[tuple[str, list[str], dict[str, str]]]) -> bool:
    """Every wrapped side's stdout and stderr byte-identical to the command's own."""
    _, command, env = sides[0]
    timed(command, folder, "check-direct", env)
    ok = True
    for n, (_, cmd, env) in enumerate(sides[1:]):
        timed(cmd, folder, f"check{n}", env)
        ok = ok and all(
            filecmp.cmp(folder / f"check-direct.{s}", folder / f"check{n}.{s}", shallow=False)
            for s in ("out", "err")
        )
    return ok


if __name__ == "__main__":
    main()
