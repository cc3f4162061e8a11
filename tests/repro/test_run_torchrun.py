"""`nanopedia run -- torchrun --nproc_per_node 2 ...` on CPU (gloo): one rank failing, whose
torchelastic error file the verdict reads, and one rank behind, whose Flight Recorder dumps it
reads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from reprotools import repro_env, repro_python

TRAIN = """\
import os, time
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x = torch.ones(4, requires_grad=True)
    dist.all_reduce(torch.ones(1))
    print(f"rank {rank} step 1", flush=True)
    if rank == 1:
        y = torch.relu(x * 2)
        y.add_(1)
        y.sum().backward()
    time.sleep(30)

main()
"""


def test_torchrun_failing_on_one_rank(tmp_path: Path) -> None:
    python = repro_python("torch")
    (tmp_path / "train.py").write_text(TRAIN)
    done = subprocess.run(
        [
            str(python),
            "-m",
            "nanopedia",
            "run",
            "--",
            str(python),
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "train.py",
        ],
        cwd=tmp_path,
        env=repro_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "rank 0 step 1" in done.stdout and "rank 1 step 1" in done.stdout
    err = done.stderr
    assert "ChildFailedError" in err  # torchrun's own report, passed through
    verdict = err[err.index("\nnanopedia: the command exited with 1") :]
    assert "verdict: autograd-inplace-modified" in verdict
    assert "first failure: rank 1" in verdict
    out = json.loads((tmp_path / "nanopedia-verdict.json").read_text())
    assert out["matches"][0]["id"] == "autograd-inplace-modified"
    assert out["initiating_rank"] == 1 and out["run"]["exit_code"] == 1
    files = out["run"]["evidence_files"]
    # torchelastic wrote the failing rank's error file into the wrapper's folder, and torchrun
    # copied it to TORCHELASTIC_ERROR_FILE: the structured evidence is kept for the readers
    assert any(f.endswith("/attempt_0/1/error.json") for f in files), files
    assert any(f.endswith("/error.json") and "/torchelastic/" not in f for f in files), files
    # ... and read: rank 1's file is the first failure by its timestamp, torchrun's copy of it
    # no second failure
    assert [(e["rank"], e["attempt"]) for e in out["error_files"]] == [(1, 0)]
    assert out["initiating_reason"].startswith("earliest torchelastic error file: ")
    assert "and 1 torchelastic error file:" in verdict
    assert "\ntorchelastic error files (earliest first):\n   rank 1 at " in verdict


BEHIND = """\
import os, sys, time
from datetime import timedelta
import torch
import torch.distributed as dist

def dump(rank):
    # where the wrapper points NCCL's automatic dump; written as JSON, the way to get JSON
    trace = torch._C._distributed_c10d._dump_fr_trace_json()
    with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank), "wb") as f:
        f.write(trace if isinstance(trace, bytes) else trace.encode())

dist.init_process_group("gloo", timeout=timedelta(seconds=4))
rank = dist.get_rank()
x = torch.ones(4)
for _ in range(2):
    dist.all_reduce(x)
print(f"rank {rank} step 2", flush=True)
if rank == 1:  # never enters the third all_reduce
    dump(rank)
    time.sleep(20)
    sys.exit(0)
try:
    dist.all_reduce(x)
finally:
    dump(rank)
"""


def test_torchrun_with_a_rank_behind_gets_the_flight_recorders_verdict(tmp_path: Path) -> None:
    """The wrapper switched the Flight Recorder on (TORCH_FR_BUFFER_SIZE): the dumps the ranks
    left hold their collectives, and the verdict names the rank that never entered #3."""
    python = repro_python("torch")
    (tmp_path / "train.py").write_text(BEHIND)
    done = subprocess.run(
        [
            str(python),
            "-m",
            "nanopedia",
            "run",
            "--",
            str(python),
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "train.py",
        ],
        cwd=tmp_path,
        env=repro_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    verdict = done.stderr[done.stderr.index("\nnanopedia: the command exited with 1") :]
    assert "and 2 Flight Recorder dumps:\nverdict: training-hang-no-error: " in verdict
    out = json.loads((tmp_path / "nanopedia-verdict.json").read_text())
    (finding,) = out["flight_recorder"]["findings"]
    assert (finding["kind"], finding["seq"], finding["ranks"], finding["others"]) == (
        "behind",
        3,
        [1],
        [0],
    )
    assert out["initiating_rank"] == 1
    assert "TORCH_FR_BUFFER_SIZE" in out["run"]["environment_set"]
