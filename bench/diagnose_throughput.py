"""Throughput of `nanopedia diagnose` on a generated log (default 1 GB) with every fingerprint,
beside GNU `grep -E` over twenty error strings on the same file.

Writes the log once (normal training output from `logcorpus.normal_lines`, one real failure near
the end), reads it once so both tools find it in the page cache, then alternates `--runs` rounds
of grep and of the CLI's own scan path (each in a fresh process, as a CLI run meets it: numpy's
import and the DFA's first states included, the matcher's compilation not) and prints the medians
in MB/s and their ratio, the median ratio within a round, and the load average (other work on the
machine slows the scan's processes more than grep's one). Target: at most 1.5 times grep's time.
Not part of the default test run. Run:
`.venv/bin/python bench/diagnose_throughput.py [--mb 1024] [--runs 3] [--jobs N] [--out F]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import ROOT, normal_lines  # noqa: E402

FAILURE = (ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log").read_bytes()


def write_log(path: Path, size: int) -> None:
    """`size` bytes of normal output with the torchrun failure near the end (reused if present)."""
    if path.exists() and path.stat().st_size >= size:
        return
    block = (
        "\n".join(line for line, _ in zip(normal_lines(), range(200_000), strict=False)) + "\n"
    ).encode()
    with path.open("wb") as out:
        written = 0
        while written + len(FAILURE) < size:
            piece = block[: size - written - len(FAILURE)]
            piece = piece[: piece.rfind(b"\n") + 1]  # whole lines: a small --mb gets part of it
            if not piece:
                break
            out.write(piece)
            written += len(piece)
        out.write(FAILURE)


#: Twenty error strings a person would grep a dead run's log for.
GREP_STRINGS = [
    "CUDA out of memory",
    "illegal memory access",
    "device-side assert triggered",
    "CUBLAS_STATUS_",
    "CUDNN_STATUS_",
    "no kernel image is available",
    "uncorrectable ECC",
    "Watchdog caught collective operation timeout",
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclRemoteError",
    "ncclInvalidUsage",
    "Address already in use",
    "ChildFailedError",
    "Expected to have finished reduction",
    "mark a variable ready only once",
    "Must flatten tensors with uniform dtype",
    "expected scalar type",
    "Error\\(s\\) in loading",
    "does not require grad and does not have a grad_fn",
]


def grep_seconds(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["grep", "-E", "-c", "|".join(GREP_STRINGS), str(path)],
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


#: One run of the CLI's scan path in a fresh process, as `nanopedia diagnose` meets it: numpy not
#: yet imported, no DFA state built. The matcher is built before the clock starts.
SCAN = """
import json, resource, sys, time
sys.path[:0] = sys.argv[3:]
from pathlib import Path
from logcorpus import ROOT
from nanopedia.content.corpus import gather
from nanopedia.diagnosis import rank
from nanopedia.diagnosis.scan import Matcher, scan_file
matcher = Matcher(gather(ROOT / "entries")[0].entries)
start = time.perf_counter()
scan = scan_file(sys.argv[1], matcher, jobs=int(sys.argv[2]), name=Path(sys.argv[1]).name)
seconds = time.perf_counter() - start
result = rank.diagnose([scan])
peak = sum(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
print(json.dumps({"seconds": seconds, "bytes": scan.bytes, "lines": scan.lines,
                  "fingerprints": len(matcher.probes), "rank": result.initiating_rank,
                  "top": result.matches[0].id if result.matches else "-", "peak_kb": peak}))
"""


def scan_run(path: Path, jobs: int) -> dict[str, Any]:
    """The CLI's scan path over a plain file, in stretches over `jobs` processes."""
    here = Path(__file__).resolve().parent
    out = subprocess.run(
        [sys.executable, "-c", SCAN, str(path), str(jobs), str(here), str(here.parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    return cast(dict[str, Any], json.loads(out.stdout))


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--mb", type=int, default=1024, help="log size in MB (default 1024)")
    args.add_argument("--runs", type=int, default=3, help="alternating rounds (default 3)")
    args.add_argument("--out", default="/tmp/nanopedia-diagnose-bench.log", help="log path")
    args.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="scanning processes (default: one per core)",
    )
    opts = args.parse_args()
    path = Path(opts.out)
    write_log(path, opts.mb * 1_000_000)
    with path.open("rb") as warm:  # into the page cache for both tools, not into memory
        while warm.read(64 << 20):
            pass
    load = os.getloadavg()[0]
    greps, scans = [], []
    for _ in range(opts.runs):
        greps.append(grep_seconds(path))
        run = scan_run(path, opts.jobs)
        scans.append(run["seconds"])
    mb = run["bytes"] / 1e6
    ours, theirs = statistics.median(scans), statistics.median(greps)
    print(f"{mb:.0f} MB, {run['lines']} lines, medians of {opts.runs} alternating runs:")
    print(f"  grep -E, {len(GREP_STRINGS)} strings: {theirs:.2f} s = {mb / theirs:.0f} MB/s")
    print(
        f"  diagnose, {run['fingerprints']} fingerprints: {ours:.2f} s = {mb / ours:.0f} MB/s "
        f"({ours / theirs:.2f}x grep's time) with {opts.jobs} processes; top {run['top']}, "
        f"rank {run['rank']}"
    )
    rounds = statistics.median(s / g for s, g in zip(scans, greps, strict=True))
    print(
        f"  per round: {rounds:.2f}x grep's time (median; a round is one run of each, side by "
        f"side); load average {load:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print(f"  peak memory (a run's process + its largest worker): {run['peak_kb'] / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
