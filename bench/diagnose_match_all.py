"""`nanopedia diagnose` on 100 MB of lines that each hold every fingerprint's examples, so every
shipped fingerprint matches every line (review case D03; not part of the tests).

    .venv/bin/python bench/diagnose_match_all.py [--mb 100] [--runs 1] [--before REV]

The worst case for the evidence bookkeeping: every pattern is located on every line until its
caps stop it. Each run is `python -m nanopedia diagnose LOG` in a fresh process (the CLI's own
scan path, its worker processes included); prints the wall and CPU time, the peak memory of the
largest process and the first failure it named. With `--before REV` the code of that git
revision runs too, alternating with the working tree's (`ab.code`). Bound (issue 38): under
120 s and 1 GB, no traceback.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "generator"))

from ab import code  # noqa: E402
from logcorpus import ROOT  # noqa: E402

from nanopedia.content.corpus import gather  # noqa: E402

SECONDS, MEMORY = 120.0, 1 << 30


def write_log(path: Path, size: int) -> int:
    """`size` bytes of lines that each join every `must_match` example; returns their count."""
    entries = gather(ROOT / "entries")[0].entries
    examples = [line for e in entries for f in e.fingerprints for line in f.must_match]
    line = (" ".join(examples) + "\n").encode()
    with path.open("wb") as out:
        for _ in range(max(1, size // len(line))):
            out.write(line)
    return len(examples)


#: Runs the command given and prints, last, the CPU seconds of all its processes and the peak
#: memory of the largest, in KB.
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(used.ru_utime + used.ru_stime, used.ru_maxrss)
sys.exit(done.returncode)
"""


def run(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float, int, int, str]:
    """Wall seconds, CPU seconds, peak memory of its largest process (bytes), exit code, and the
    report's first-failure line (else its last line of stderr)."""
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PEAK,
            *command,
            "diagnose",
            "--entries",
            str(ROOT / "entries"),
            str(log),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    *report, used = done.stdout.splitlines() or ["0 0"]
    cpu, peak = used.split()
    said = next((ln.strip() for ln in report if "first failure" in ln), "")
    if "Traceback" in done.stderr or not said:
        said = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return seconds, float(cpu), int(peak) * 1024, done.returncode, said


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--mb", type=int, default=100, help="log size in MB (default 100)")
    args.add_argument("--runs", type=int, default=1, help="alternating rounds (default 1)")
    args.add_argument("--before", help="a git revision to run beside the working tree")
    opts = args.parse_args()
    with tempfile.TemporaryDirectory(prefix="np-match-all-") as tmp:
        work = Path(tmp)
        log = work / "match-all.log"
        examples = write_log(log, opts.mb * 1_000_000)
        versions = {"working tree": code(None, work / "now")}
        if opts.before:
            versions[opts.before] = code(opts.before, work / "before")
        print(
            f"{log.stat().st_size / 1e6:.0f} MB, lines of {examples} examples each; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        times: dict[str, list[float]] = {name: [] for name in versions}
        failed = False
        for _ in range(opts.runs):
            for name, (command, env) in versions.items():
                seconds, cpu, peak, rc, said = run(command, env, log)
                times[name].append(seconds)
                ok = (
                    seconds < SECONDS and peak < MEMORY and rc in (0, 1) and "Traceback" not in said
                )
                failed |= not ok and name == "working tree"
                print(
                    f"  {name}: {seconds:.1f} s ({cpu:.1f} s of CPU), peak {peak / 1e6:.0f} MB, "
                    f"exit {rc} {'ok' if ok else 'OVER THE BOUND'}; {said}"
                )
        for name, spent in times.items():
            print(f"{name}: median {statistics.median(spent):.1f} s of {len(spent)} run(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
