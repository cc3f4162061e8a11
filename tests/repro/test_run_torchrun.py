"""`nanopedia run -- torchrun --nproc_per_node 2 ...` on CPU (gloo), one rank failing."""

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
