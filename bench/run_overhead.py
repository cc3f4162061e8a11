"""Overhead of `nanopedia run` on a healthy command: 100 MB of output, directly and wrapped (not
part of the tests).

    .venv/bin/python bench/run_overhead.py [--runs 7] [--mb 100] [--prefixed]

The command is a Python script that writes `--mb` MB of log lines (`step N loss ...`, or with
`--prefixed` torchrun's `[rank3]:` prefixes, the wrapper's slow path) to stdout in 64 KiB writes
and a progress line to stderr every 1,000 lines. Each round runs it directly, then as `nanopedia
run -- python gen.py`, both with stdout and stderr into files (as a batch job's output goes);
`--runs` rounds, alternating. Prints the median wall time of each, the difference, and checks
that the wrapped output is byte-identical to the direct one.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEN = """\
import sys
mb, prefixed = int(sys.argv[1]), sys.argv[2] == "1"
out, err = sys.stdout.buffer, sys.stderr.buffer
line = b"step %%d loss 0.1234 lr 3.0e-4 grad_norm 1.02 tokens/s 152340.5 mfu 0.41\\n"
if prefixed:
    line = b"[rank%%d]:" %% 3 + line
block, n, done, total = [], 0, 0, mb * 1_000_000
while done < total:
    block.append(line %% n)
    n += 1
    if len(block) == 800:
        data = b"".join(block)
        out.write(data)
        done += len(data)
        block = []
        err.write(b"progress %%d\\n" %% n)
out.flush()
"""


def timed(cmd: list[str], folder: Path, tag: str) -> float:
    with open(folder / f"{tag}.out", "wb") as out, open(folder / f"{tag}.err", "wb") as err:
        start = time.perf_counter()
        subprocess.run(
            cmd,
            stdout=out,
            stderr=err,
            cwd=folder,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "generator")},
        )
        return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--prefixed", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "gen.py").write_text(GEN % ())
        command = [sys.executable, "gen.py", str(args.mb), "1" if args.prefixed else "0"]
        wrapped = [sys.executable, "-m", "nanopedia", "run", "--", *command]
        direct_t, wrapped_t = [], []
        for _ in range(args.runs):
            direct_t.append(timed(command, folder, "direct"))
            wrapped_t.append(timed(wrapped, folder, "wrapped"))
        same = all(
            filecmp.cmp(folder / f"direct.{s}", folder / f"wrapped.{s}", shallow=False)
            for s in ("out", "err")
        )
        size = (folder / "direct.out").stat().st_size
    d, w = statistics.median(direct_t), statistics.median(wrapped_t)
    print(
        f"{size / 1e6:.0f} MB to stdout{' ([rank3]: prefixed)' if args.prefixed else ''}, "
        f"{args.runs} runs, median wall time"
    )
    print(f"  direct:  {d:.3f} s")
    print(f"  wrapped: {w:.3f} s")
    print(f"  overhead: {w - d:+.3f} s ({100 * (w - d) / d:+.1f} %); output identical: {same}")


if __name__ == "__main__":
    main()
