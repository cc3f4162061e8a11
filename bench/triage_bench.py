"""Throughput of `nanopedia triage` on a generated fleet, in a local process pool and on a local
Ray instance, with a check that both give the right summary and identical JSON.

`make_fleet` writes N jobs, cycling through the three layouts triage recognises (a folder of
`rank<r>.log`, a torchrun `attempt_0/<r>/stderr.log` tree, one combined `slurm-<id>.out`), a few
ranks each (more when the failure's labelled rank needs them). Every file is healthy training
output (`logcorpus.normal_lines`) behind NCCL init lines naming the job's hosts. Most jobs then get
one real failure from the labelled corpus (`logcorpus.real_cases`) at the end of the rank the label
names; some stay healthy; some end in an error no entry knows; and one host, `gpu-bad-07`, is
planted as the failing rank's host in every `BAD_EVERY`-th job (with an ECC error, as a bad GPU
would). It returns what the summary must say. Deterministic for a seed.

Run: `.venv/bin/python bench/triage_bench.py [--n 1000 10000] [--jobs 2] [--no-ray]`.
Not part of the default test run (tests/integration/test_triage.py uses `make_fleet` on a few
dozen jobs).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import Case, log_bytes, normal_lines, real_cases  # noqa: E402

BAD_HOST = "gpu-bad-07"
#: Every this-many-th job fails on the bad host (job index % BAD_EVERY == 1).
BAD_EVERY = 25
#: Share of jobs left healthy, and share ending in an error no entry knows.
HEALTHY = 0.08
UNKNOWN = 0.05
#: The unknown error, as each job prints it (numbers, hex and paths differ between jobs) and as
#: triage must report it once normalised.
UNKNOWN_LINE = (
    "[rank{r}]: ZorkError: flux capacitor {n} overheated at 0x{h:x} in /opt/zork/{n}/core.py"
)
UNKNOWN_TEXT = "ZorkError: flux capacitor <n> overheated at <hex> in <path>"
LAYOUTS = ("ranks", "torchrun", "slurm")


@dataclass
class Expected:
    """What triage must find in the fleet."""

    jobs: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """Entry id -> jobs whose verdict it is (the corpus labels)."""
    bad_jobs: int = 0
    """Jobs whose first failure is on `BAD_HOST`."""
    unknown: list[str] = field(default_factory=list)
    """Jobs ending in the unknown error."""
    healthy: list[str] = field(default_factory=list)
    bytes: int = 0
    files: int = 0
    by_job: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    """Job name -> (the entry labelled, the case's name or `healthy` / `unknown`)."""


def failing_cases() -> list[Case]:
    """Real cases whose label is a failure (not benign, one file)."""
    return [c for c in real_cases() if c.top and not c.benign and len(c.logs) == 1]


def _healthy_block(rank: int, lines: int) -> bytes:
    """`lines` of healthy output of one rank: normal_lines' step and warning lines, re-prefixed."""
    rows = (ln for ln in normal_lines(seed=rank) if ln.startswith("[rank"))
    return "".join(
        re.sub(r"^\[rank\d+\]", f"[rank{rank}]", ln) + "\n" for ln in islice(rows, lines)
    ).encode()


def _nccl_head(rank: int, host: str, prefix: bool) -> bytes:
    lead = f"[rank{rank}]:" if prefix else ""
    return (
        f"{lead}{host}:{4100 + rank}:{4200 + rank} [{rank % 8}] NCCL INFO Bootstrap : Using "
        f"eth0:10.0.{rank // 8}.{rank % 8}<0>\n"
        f"{lead}{host}:{4100 + rank}:{4200 + rank} [{rank % 8}] NCCL INFO NCCL version "
        "2.21.5+cuda12.4\n"
    ).encode()


def make_fleet(
    root: Path, n: int, seed: int = 0, lines: int = 150, cases: list[Case] | None = None
) -> Expected:
    """Write `n` jobs under `root` (see the module docstring) and return what triage must say."""
    rnd = random.Random(seed)
    cases = cases or failing_cases()
    ecc = [c for c in cases if c.top == "cuda-ecc-hardware-error"] or cases
    blocks: dict[int, bytes] = {}
    want = Expected(jobs=n)
    for i in range(n):
        layout = LAYOUTS[i % len(LAYOUTS)]
        bad = i % BAD_EVERY == 1
        roll = rnd.random()
        case = rnd.choice(ecc) if bad else None if roll < HEALTHY + UNKNOWN else rnd.choice(cases)
        unknown = case is None and roll >= HEALTHY
        ranks = max(3, (case.rank or 0) + 1 if case else 3)
        failing = case.rank if case and case.rank is not None else rnd.randrange(ranks)
        if bad:
            layout = "ranks"  # a host per file: the failing rank's own file names the bad host
        hosts = [
            BAD_HOST if bad and r == failing else f"node-{i:05d}-{r // 2}" for r in range(ranks)
        ]
        tail = b""
        if case:
            tail = log_bytes(case.logs[0])
            tail += b"" if tail.endswith(b"\n") else b"\n"
        elif unknown:
            tail = "".join(
                UNKNOWN_LINE.format(r=failing, n=rnd.randrange(10**6), h=rnd.getrandbits(48)) + "\n"
                for _ in range(3)
            ).encode()
        name = f"job-{i:05d}"
        files: dict[str, bytes] = {}
        for r in range(ranks):
            block = blocks.setdefault(r, _healthy_block(r, lines))
            if layout == "slurm":
                continue
            rel = f"{name}/rank{r}.log" if layout == "ranks" else f"{name}/attempt_0/{r}/stderr.log"
            files[rel] = (
                _nccl_head(r, hosts[r], prefix=False) + block + (tail if r == failing else b"")
            )
        if layout == "slurm":
            name = f"slurm-{i:05d}.out"
            files[name] = (
                b"".join(_nccl_head(r, hosts[r], prefix=True) for r in range(ranks))
                + b"".join(blocks[r] for r in range(ranks))
                + tail
            )
        for rel, data in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            want.bytes += len(data)
            want.files += 1
        want.by_job[str(root / name)] = (
            case.top if case else None,
            case.name if case else "unknown" if unknown else "healthy",
        )
        if case:
            want.verdicts[case.top] += 1  # type: ignore[index]
        elif unknown:
            want.unknown.append(str(root / name))
        else:
            want.healthy.append(str(root / name))
        want.bad_jobs += bad
    return want


def check(summary: dict, want: Expected) -> list[str]:
    """What the summary gets wrong, in words (empty: right)."""
    wrong = []
    got = {e["id"]: e["jobs"] for e in summary["entries"]}
    for entry in sorted(set(got) | set(want.verdicts)):
        if got.get(entry, 0) != want.verdicts[entry]:
            wrong.append(f"{entry}: {got.get(entry, 0)} jobs, labelled {want.verdicts[entry]}")
    top = summary["hosts"][0] if summary["hosts"] else None
    if not top or top["host"] != BAD_HOST or top["first_failures"] != want.bad_jobs:
        wrong.append(
            f"top host {top and (top['host'], top['first_failures'])}, planted "
            f"{BAD_HOST} in {want.bad_jobs} jobs"
        )
    gap = summary["gaps"][0] if summary["gaps"] else None
    if not gap or gap["text"] != UNKNOWN_TEXT or gap["jobs"] != len(want.unknown):
        wrong.append(f"top gap {gap and (gap['text'], gap['jobs'])}, planted {len(want.unknown)}")
    return wrong


def run(root: Path, entries: list, jobs: int, ray: str | None) -> tuple[float, dict]:
    from nanopedia.diagnosis.triage import triage

    start = time.perf_counter()
    result = triage([root], entries=entries, jobs=jobs, ray=ray)
    return time.perf_counter() - start, result.as_json()


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--n", type=int, nargs="+", default=[1000, 10_000], help="fleet sizes")
    args.add_argument("--jobs", type=int, default=2, help="processes / Ray CPUs (default 2)")
    args.add_argument("--lines", type=int, default=150, help="healthy lines per rank")
    args.add_argument("--no-ray", action="store_true", help="the local pool only")
    args.add_argument("--out", help="write fleets here and keep them (default: a temp dir)")
    opts = args.parse_args()

    from nanopedia.diagnosis.triage import load_entries

    entries, _ = load_entries(None)
    if not opts.no_ray:
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=opts.jobs, include_dashboard=False, logging_level="warning")
        print(
            f"local Ray instance ({opts.jobs} CPUs, no dashboard) started in "
            f"{time.perf_counter() - start:.1f} s"
        )
    for n in opts.n:
        base = Path(opts.out) if opts.out else Path(tempfile.mkdtemp(prefix="triage-bench-"))
        root = base / f"fleet-{n}"
        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        want = make_fleet(root, n)
        print(
            f"N={n:,}: {want.files:,} files, {want.bytes / 1e6:.1f} MB, generated in "
            f"{time.perf_counter() - start:.1f} s"
        )
        outputs = {}
        for label, ray_address in [("local", None)] + ([] if opts.no_ray else [("ray", "")]):
            seconds, out = run(root, entries, opts.jobs, ray_address)
            outputs[label] = json.dumps(out, sort_keys=True)
            scanned = out["summary"]["files"]["bytes"]
            wrong = check(out["summary"], want)
            missed = Counter(
                want.by_job[j["job"]][1]
                for j in out["jobs"]
                if j["verdict"] != want.by_job[j["job"]][0]
            )
            print(
                f"  {label:5} ({opts.jobs} {'CPUs' if ray_address is not None else 'processes'})"
                f": {seconds:6.1f} s, {n / seconds:7.1f} jobs/s, {scanned / seconds / 1e6:6.1f}"
                f" MB/s; summary {'right' if not wrong else 'WRONG: ' + '; '.join(wrong[:5])}"
            )
            if missed:
                print(f"    verdicts unlike the label, by case: {dict(missed.most_common(5))}")
        if len(outputs) == 2:
            same = outputs["local"] == outputs["ray"]
            print(
                f"  local and Ray JSON identical: {'yes' if same else 'NO'} "
                f"({len(outputs['local']) / 1e6:.1f} MB)"
            )
            if not same:
                local, ray = (json.loads(outputs[k])["jobs"] for k in ("local", "ray"))
                differ = [a["job"] for a, b in zip(local, ray, strict=True) if a != b]
                print(f"    {len(differ)} jobs differ, e.g. {differ[:3]}")
        if not opts.out:
            shutil.rmtree(base, ignore_errors=True)
    if not opts.no_ray:
        ray.shutdown()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this process {own:.0f} MB, largest worker {children:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
