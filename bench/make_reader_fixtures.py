"""Make the real torchelastic error files and Flight Recorder dumps that the readers' tests read.

Run with the pinned repro environment (torch 2.13.0, CPU):

    .venv-repro/bin/python bench/make_reader_fixtures.py

It runs `torchrun --nproc_per_node 2` on CPU (gloo) several times and copies what torch wrote into
`tests/logs/elastic/<case>/` and `tests/logs/flight/<case>/`; the tests themselves need no torch.

Elastic cases (torchrun `--log-dir`, no `--redirects`: the error files are all the run leaves):
  one-error   rank 1 raises a shape error; rank 0, waiting in an all_reduce, is stopped by the
              agent before it can write anything (the issue's "only attempt_0/1/error.json").
  two-errors  rank 1 raises a shape error; rank 0 raises two seconds later, when its all_reduce
              finds rank 1 gone (gloo's "Connection closed by peer"): rank 0's file comes first
              in any listing, rank 1's timestamp is the earlier.
Flight Recorder cases (`TORCH_FR_BUFFER_SIZE` set; each rank writes
`torch._C._distributed_c10d._dump_fr_trace_json()` to `rank<N>.json` before it exits, after its
collective timed out):
  skip        two all_reduces on both ranks; rank 0 enters a third, rank 1 never does.
  mismatch    two all_reduces on both ranks; then rank 0 calls all_reduce, rank 1 broadcast.
  size        two all_reduces on both ranks; then an all_reduce of 4 floats on rank 0, of 8 on 1
              (dumped while it is in flight: gloo aborts a rank that receives too many bytes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ELASTIC_SCRIPT = """
import sys, time
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    case = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x = torch.ones(4)
    dist.all_reduce(x)
    print(f"rank {rank}: step 1 done", flush=True)
    if rank == 1:
        torch.ones(2, 3) @ torch.ones(2, 3)  # the first failure
    time.sleep(2 if case == "two-errors" else 60)
    dist.all_reduce(x)  # rank 1 is gone: gloo says the connection was closed


if __name__ == "__main__":
    main()
"""

FLIGHT_SCRIPT = """
import os, sys
from datetime import timedelta
import torch
import torch.distributed as dist


def dump(rank, out):
    trace = torch._C._distributed_c10d._dump_fr_trace_json()
    with open(os.path.join(out, f"rank{rank}.json"), "wb") as f:
        f.write(trace if isinstance(trace, bytes) else trace.encode())


def main():
    case, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo", timeout=timedelta(seconds=4))
    rank = dist.get_rank()
    x = torch.ones(4)
    for _ in range(2):
        dist.all_reduce(x)
    try:
        if case == "skip":
            if rank == 0:
                dist.all_reduce(x)  # rank 1 never enters it
        elif case == "mismatch":
            if rank == 0:
                dist.all_reduce(x)
            else:
                dist.broadcast(x, 0)
        elif case == "size":
            # gloo aborts the process that receives more bytes than it expects, so this dump is
            # taken with the all_reduce in flight (as a watchdog would take it), before the wait.
            work = dist.all_reduce(x if rank == 0 else torch.ones(8), async_op=True)
            dump(rank, out)
            work.wait()
    except RuntimeError as err:
        print(f"rank {rank}: {err}", flush=True)
    if case != "size":
        dump(rank, out)
    if case == "skip" and rank == 1:
        import time
        time.sleep(6)  # stay until rank 0's all_reduce has timed out


if __name__ == "__main__":
    main()
"""


def torchrun(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchrun")
    return subprocess.run(
        [str(exe), "--nproc_per_node", "2", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def elastic(case: str, work: Path) -> None:
    script = work / "train.py"
    script.write_text(ELASTIC_SCRIPT)
    logs = work / f"logs-{case}"
    ran = torchrun(
        [
            "--log-dir",
            str(logs),
            "--monitor-interval",
            "5" if case == "two-errors" else "0.1",
            str(script),
            case,
        ]
    )
    (run,) = [p for p in logs.iterdir() if p.is_dir()]  # <run id>_<random>/
    dest = ROOT / "tests" / "logs" / "elastic" / case
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(run, dest)
    # torchrun's own summary, for reference, beside the run folder (not a log of the run)
    dest.with_name(f"{case}-torchrun.txt").write_text(ran.stderr)
    print(case, "exit", ran.returncode, sorted(str(p.relative_to(dest)) for p in dest.rglob("*")))


def flight(case: str, work: Path) -> None:
    script = work / "fr.py"
    script.write_text(FLIGHT_SCRIPT)
    dest = ROOT / "tests" / "logs" / "flight" / case
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    ran = torchrun([str(script), case, str(dest)], {"TORCH_FR_BUFFER_SIZE": "2000"})
    (dest / "torchrun.txt").write_text(ran.stdout + ran.stderr)
    print(case, "exit", ran.returncode, sorted(p.name for p in dest.iterdir()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "cases", nargs="*", default=["one-error", "two-errors", "skip", "mismatch", "size"]
    )
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            (elastic if case in ("one-error", "two-errors") else flight)(case, Path(tmp))


if __name__ == "__main__":
    main()
