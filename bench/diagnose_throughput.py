"""Throughput of `nanopedia diagnose` on a generated log (default 1 GB) with every fingerprint,
beside GNU `grep -E` over twenty error strings on the same file.

Writes the log once (normal training output from `logcorpus.normal_lines`, one real failure near
the end), reads it once so both tools find it in the page cache, then alternates `--runs` rounds
of grep and of the CLI's own scan path and prints the medians in MB/s and their ratio, the median
ratio within a round, and the load average (other work on the machine slows the scan's processes
more than grep's one). Target: at most 1.5 times grep's time. Not part of the default test run. Run:
`.venv/bin/python bench/diagnose_throughput.py [--mb 1024] [--runs 3] [--jobs N] [--out F]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import ROOT, normal_lines  # noqa: E402

from nanopedia.content.corpus import gather  # noqa: E402
from nanopedia.diagnosis import rank  # noqa: E402
from nanopedia.diagnosis.scan import FileScan, Matcher, scan_file  # noqa: E402

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
        while written + len(block) + len(FAILURE) < size:
            out.write(block)
            written += len(block)
        out.write(FAILURE)


#: Twenty error strings a person would grep a dead run's log for.
GREP_STRINGS = [
    "CUDA out of memory", "illegal memory access", "device-side assert triggered",
    "CUBLAS_STATUS_", "CUDNN_STATUS_", "no kernel image is available", "uncorrectable ECC",
    "Watchdog caught collective operation timeout", "ncclUnhandledCudaError", "ncclSystemError",
    "ncclRemoteError", "ncclInvalidUsage", "Address already in use", "ChildFailedError",
    "Expected to have finished reduction", "mark a variable ready only once",
    "Must flatten tensors with uniform dtype", "expected scalar type", "Error\\(s\\) in loading",
    "does not require grad and does not have a grad_fn",
]


def grep_seconds(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["grep", "-E", "-c", "|".join(GREP_STRINGS), str(path)],
                   stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def scan_seconds(path: Path, matcher: Matcher,
                 jobs: int) -> tuple[float, FileScan]:
    """The CLI's scan path: a plain file in stretches over `jobs` processes."""
    start = time.perf_counter()
    scan = scan_file(str(path), matcher, jobs=jobs, name=path.name)
    return time.perf_counter() - start, scan


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--mb", type=int, default=1024, help="log size in MB (default 1024)")
    args.add_argument("--runs", type=int, default=3, help="alternating rounds (default 3)")
    args.add_argument("--out", default="/tmp/nanopedia-diagnose-bench.log", help="log path")
    args.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                      help="scanning processes (default: one per core)")
    opts = args.parse_args()
    path = Path(opts.out)
    write_log(path, opts.mb * 1_000_000)
    with path.open("rb") as warm:  # into the page cache for both tools, not into memory
        while warm.read(64 << 20):
            pass
    matcher = Matcher(gather(ROOT / "entries")[0].entries)
    load = os.getloadavg()[0]
    greps, scans = [], []
    for _ in range(opts.runs):
        greps.append(grep_seconds(path))
        seconds, scan = scan_seconds(path, matcher, opts.jobs)
        scans.append(seconds)
    result = rank.diagnose([scan])
    top = result.matches[0].id if result.matches else "-"
    mb = scan.bytes / 1e6
    ours, theirs = statistics.median(scans), statistics.median(greps)
    print(f"{mb:.0f} MB, {scan.lines} lines, medians of {opts.runs} alternating runs:")
    print(f"  grep -E, {len(GREP_STRINGS)} strings: {theirs:.2f} s = {mb / theirs:.0f} MB/s")
    print(f"  diagnose, {len(matcher.probes)} fingerprints: {ours:.2f} s = {mb / ours:.0f} MB/s "
          f"({ours / theirs:.2f}x grep's time) with {opts.jobs} processes; top {top}, "
          f"rank {result.initiating_rank}")
    rounds = statistics.median(s / g for s, g in zip(scans, greps, strict=True))
    print(f"  per round: {rounds:.2f}x grep's time (median; a round is one run of each, side by "
          f"side); load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(f"  peak memory (this process + largest worker): {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
