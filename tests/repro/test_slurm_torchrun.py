"""`scancel` of a torchrun job on a real Slurm (tests/slurmtools.py): what the agent prints when
the scheduler's SIGTERM reaches it, and the entry that names it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from reprotools import repro_python
from slurmtools import Cluster

TRAIN = """\
import os, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(16, 16)
for step in range(100_000):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    if step % 50 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.3f}", flush=True)
        if rank == 0 and step == 50:
            open("training", "w").close()
    time.sleep(0.01)
"""


def test_scancel_of_a_torchrun_job_is_a_stop_from_outside(
    request: pytest.FixtureRequest, tmp_path: Path, cli: Any
) -> None:
    python = repro_python("torch")  # first: without torch, no cluster is started for nothing
    slurm_cluster: Cluster = request.getfixturevalue("slurm_cluster")
    (tmp_path / "train.py").write_text(TRAIN)
    batch = tmp_path / "job.sh"
    batch.write_text(
        f"#!/bin/bash\n{python} -m torch.distributed.run --standalone --nproc_per_node 2 train.py\n"
    )
    job = slurm_cluster.sbatch(batch, "-w", "nano1", "-c", "2")
    deadline = time.monotonic() + 120
    while not (tmp_path / "training").exists():
        assert time.monotonic() < deadline, slurm_cluster.job(job)
        time.sleep(0.2)
    slurm_cluster.command("scancel", str(job))
    slurm_cluster.wait(job, ["CANCELLED"], timeout=60)
    output = tmp_path / f"slurm-{job}.out"
    text = output.read_text()
    assert f"*** JOB {job} ON nano1 CANCELLED AT " in text
    assert "Received 15 death signal, shutting down workers" in text
    assert "SignalException: Process " in text and " got signal: 15" in text
    done = cli("diagnose", "--format", "json", str(output))
    match = json.loads(done.out)["matches"][0]
    assert (match["id"], match["confidence"]) == ("job-terminated-sigterm", "possible")
    assert {"slurm-cancelled", "agent-death-signal", "elastic-signal-exception"} <= {
        e["fingerprint"] for e in match["evidence"]
    }
