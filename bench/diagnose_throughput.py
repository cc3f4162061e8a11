"""Throughput of `nanopedia diagnose` on a generated log (default 1 GB) with every fingerprint.

Writes the log once (normal training output from `logcorpus.normal_lines`, one real failure near
the end), then times the CLI's own scan path and prints MB/s. Target: at least 200 MB/s on the
2-core CI machine. Not part of the default test run. Run:
`.venv/bin/python bench/diagnose_throughput.py [--mb 1024] [--out /tmp/nanopedia-1g.log]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import ROOT, normal_lines  # noqa: E402

from generator import diagnose  # noqa: E402
from generator.corpus import gather  # noqa: E402

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


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--mb", type=int, default=1024, help="log size in MB (default 1024)")
    args.add_argument("--out", default="/tmp/nanopedia-diagnose-bench.log", help="log path")
    opts = args.parse_args()
    path = Path(opts.out)
    write_log(path, opts.mb * 1_000_000)
    matcher = diagnose.Matcher(gather(ROOT / "entries")[0].entries)
    start = time.perf_counter()
    stream, _ = diagnose.open_log(str(path))
    with stream:
        scan = diagnose.scan(stream, path.name, matcher)
    seconds = time.perf_counter() - start
    result = diagnose.diagnose([scan])
    top = result.matches[0].id if result.matches else "-"
    print(
        f"{scan.bytes / 1e6:.0f} MB, {scan.lines} lines, {len(matcher.probes)} fingerprints: "
        f"{seconds:.2f} s = {scan.bytes / 1e6 / seconds:.0f} MB/s; top {top}, "
        f"initiating rank {result.initiating_rank}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
