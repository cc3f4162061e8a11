"""Throughput of `nanopedia diagnose` on a generated log (default 1 GB) with every fingerprint,
beside GNU `grep -E` over twenty error strings on the same file.

Writes the log once (normal training output from `logcorpus.normal_lines`, one real failure near
the end), reads it once so both tools find it in the page cache, then alternates `--runs` rounds
of grep and of the CLI's own scan path (each in a fresh process, as a CLI run meets it: numpy's
import and the DFA's first states included, the matcher's compilation not) and prints the medians
in MB/s and their ratio, the median ratio within a round, and the load average (other work on the
machine slows the scan's processes more than grep's one). Target: at most 1.5 times grep's time.

With `--cli`, the whole command is timed instead, end to end as a user meets it:
`nanopedia diagnose --entries entries/ LOG` in a fresh process (start-up, the compiled catalogue
from a warm cache, the scan, the versions and the report; issue 32's target: 1.3 times grep's
time), beside the same grep and `grep -E -f` of every fingerprint of entries/ written as a POSIX
ERE (`ere`): the same patterns, GNU grep's DFA against RE2's set. With `--before REV`, the
command as that git revision has it alternates with them (`ab.code`). Each line gives the
median wall time and the median CPU time of the command's processes together.
Not part of the default test run. Run:
`.venv/bin/python bench/diagnose_throughput.py [--mb 1024] [--runs 3] [--jobs N] [--out F]
[--cli [--before REV]]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    if path.exists() and path.stat().st_size >= size - (1 << 20):  # written up to a line short
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


def grep_seconds(path: Path, patterns: Path | None = None) -> float:
    """`grep -E -c` of the twenty strings, or of the patterns in the file `patterns`."""
    start = time.perf_counter()
    subprocess.run(
        ["grep", "-E", "-c"]
        + (["-f", str(patterns)] if patterns else ["|".join(GREP_STRINGS)])
        + [str(path)],
        stdout=subprocess.PIPE,  # not /dev/null: GNU grep then stops at the first match
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )
    return time.perf_counter() - start


_CLASSES = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}


def ere(program: str) -> str | None:
    """A fingerprint's RE2 program as a POSIX ERE that GNU grep matches on the same lines, or
    None where ERE has no equivalent (a negated class escape or `]`, `-`, `^` escaped in a
    class; an inline flag; an escape other than a class, `\\b`, `\\t`, `\\xHH` or
    punctuation). Laziness is dropped: it changes where a match ends, not whether a line has
    one."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(program):
        ch, nxt = program[i], program[i + 1 : i + 2]
        if ch == "\\":
            if nxt == "x":
                char = chr(int(program[i + 2 : i + 4], 16))
                special = not in_class and char in ".[]()*+?{}|^$\\"
                out.append("\\" + char if special else char)
                i += 4
                continue
            if in_class:
                if nxt in _CLASSES:
                    out.append(_CLASSES[nxt])
                elif nxt == "t":
                    out.append("\t")
                elif nxt == "\\":
                    out.append(nxt)  # a backslash in a bracket expression is itself
                elif nxt.isalnum() or nxt in "]-^":
                    return None
                else:
                    out.append(nxt)
            elif nxt in _CLASSES:
                out.append(f"[{_CLASSES[nxt]}]")
            elif nxt.lower() in _CLASSES:
                out.append(f"[^{_CLASSES[nxt.lower()]}]")
            elif nxt == "t":
                out.append("\t")
            elif nxt in ("b", "B") or not nxt.isalnum():
                out.append("\\" + nxt)
            else:
                return None
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
            out.append(ch)
        elif ch == "[":
            in_class = True
            head = "[^" if nxt == "^" else "["
            i += len(head)
            if program[i : i + 1] == "]":
                head, i = head + "]", i + 1
            out.append(head)
            continue
        elif program.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        elif program.startswith("(?", i):
            return None
        elif ch in "*+?}" and nxt == "?":
            out.append(ch)
            i += 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def grep_patterns(into: Path) -> tuple[Path, int, int]:
    """The fingerprints of entries/ as ERE (`ere`), one a line, in `into`; how many were
    written and how many have no ERE (or one GNU grep refuses)."""
    sys.path.insert(0, str(ROOT / "generator"))
    from nanopedia.diagnosis.catalogue import usable

    kept, left = [], 0
    for entry in usable(ROOT / "entries")[0]:
        for fp in entry.fingerprints:
            pattern = ere(fp.program)
            ok = pattern is not None and "\n" not in pattern
            if ok:
                check = subprocess.run(
                    ["grep", "-E", "-e", cast(str, pattern), "/dev/null"],
                    capture_output=True,
                    check=False,
                    env={**os.environ, "LC_ALL": "C"},
                )
                ok = check.returncode == 1  # no match, and no error (2)
            if ok:
                kept.append(cast(str, pattern))
            else:
                left += 1
    into.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return into, len(kept), left


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


def cli_run(path: Path, jobs: int, run: list[str], env: dict[str, str]) -> dict[str, Any]:
    """`nanopedia diagnose` (`run`: the command that starts the CLI) on the log in a fresh
    process, timed from outside."""
    start = time.perf_counter()
    out = subprocess.run(
        [*run, "diagnose", "--entries", str(ROOT / "entries")]
        + ["--jobs", str(jobs), "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    seconds = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise SystemExit(f"diagnose failed ({out.returncode}): {out.stderr[-2000:]}")
    doc = json.loads(out.stdout)
    top = doc["matches"][0]["id"] if doc["matches"] else "-"
    return {"seconds": seconds, "top": top}


def _children_cpu() -> float:
    """CPU seconds of the finished child processes so far (theirs included)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def end_to_end(path: Path, runs: int, jobs: int, before: str | None) -> int:
    """`--cli`: grep, grep -f and the command (and with `--before`, the command as that git
    revision has it) alternating, each catalogue compiled once before (untimed) into a cache of
    the bench's own."""
    from ab import code

    sides = [("after", None)] + ([("before", before)] if before else [])
    commands = {}
    for side, rev in sides:
        run, env = code(rev, path.parent / f"e2e-{side}-code")
        env = {**env, "NANOPEDIA_CACHE": str(path.parent / f"e2e-{side}-cache")}
        warm = path.with_suffix(".warm.log")
        warm.write_bytes(FAILURE)
        cli_run(warm, jobs, run, env)  # compiles the catalogue into the cache
        warm.unlink()
        commands[side] = (run, env)
    patterns, written, left = grep_patterns(path.with_suffix(".patterns"))
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {"grep": [], "grep -f": []}
    times.update({side: [] for side in commands})
    cpu: dict[str, list[float]] = {which: [] for which in times}
    tops = {}
    order = list(times)
    for i in range(runs):
        for which in order if i % 2 == 0 else order[::-1]:
            used = _children_cpu()
            if which == "grep":
                times[which].append(grep_seconds(path))
            elif which == "grep -f":
                times[which].append(grep_seconds(path, patterns))
            else:
                done = cli_run(path, jobs, *commands[which])
                times[which].append(done["seconds"])
                tops[which] = done["top"]
            cpu[which].append(_children_cpu() - used)
    mb = path.stat().st_size / 1e6
    theirs, same = statistics.median(times["grep"]), statistics.median(times["grep -f"])
    print(f"{mb:.0f} MB, end to end, medians of {runs} alternating runs:")
    print(
        f"  grep -E -c, {len(GREP_STRINGS)} strings: {theirs:.2f} s = {mb / theirs:.0f} MB/s "
        f"({statistics.median(cpu['grep']):.2f} s CPU)"
    )
    print(
        f"  grep -E -c -f, the {written} fingerprints ERE can say ({left} cannot): "
        f"{same:.2f} s = {mb / same:.0f} MB/s ({statistics.median(cpu['grep -f']):.2f} s CPU)"
    )
    for side, _ in sides:
        mine = statistics.median(times[side])
        rounds = statistics.median(s / g for s, g in zip(times[side], times["grep"], strict=True))
        print(
            f"  {side}: nanopedia diagnose --jobs {jobs}: {mine:.2f} s = {mb / mine:.0f} MB/s, "
            f"{mine / theirs:.2f}x grep's time ({rounds:.2f}x per round), "
            f"{mine / same:.2f}x grep -f's; {statistics.median(cpu[side]):.2f} s CPU (its "
            f"processes together); top {tops[side]}"
        )
    print(f"  load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    return 0


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
    args.add_argument("--cli", action="store_true", help="time the whole CLI, end to end")
    args.add_argument("--before", help="with --cli: git revision to time beside the working tree")
    opts = args.parse_args()
    path = Path(opts.out)
    write_log(path, opts.mb * 1_000_000)
    with path.open("rb") as warm:  # into the page cache for both tools, not into memory
        while warm.read(64 << 20):
            pass
    if opts.cli:
        return end_to_end(path, opts.runs, opts.jobs, opts.before)
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
