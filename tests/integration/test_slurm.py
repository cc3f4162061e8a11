"""A real Slurm (tests/slurmtools.py) ends jobs as fleets see it: its own words in the job's
output name the right entry, and the Epilog recipe (contrib/slurm/epilog.sh) writes that verdict
beside the output.

The time-limit job is the slow one (Slurm's limits count in minutes and slurmctld checks them
every 30 s): it is submitted before the first test, so the others run while it waits, and its
tests come last. A scancel'ed torchrun job needs torch: tests/repro/test_slurm_torchrun.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slurmtools import Cluster

NOBODY = 65534
TRAIN = """\
for step in 1 2 3; do echo "epoch 1 step $step loss 2.3$step"; done
sleep 300
"""
OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 388.00 MiB. GPU 0 has a "
    "total capacity of 9.68 GiB of which 95.75 MiB is free."
)
FAILS = f"""\
echo "epoch 1 step 1 loss 2.31"
echo "{OOM_LINE}" >&2
exit 1
"""


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


def top(cli: Any, *logs: Path) -> dict[str, Any]:
    """The best match of `nanopedia diagnose --format json` on the logs."""
    done = cli("diagnose", "--format", "json", *map(str, logs))
    assert done.code == 0, done.out + done.err
    match: dict[str, Any] = json.loads(done.out)["matches"][0]
    return match


def verdict_of(cluster: Cluster, output: Path) -> str:
    """The verdict the Epilog wrote beside `output` (else what the Epilog said instead)."""
    path = Path(f"{output}.nanopedia.txt")
    assert path.exists(), "\n".join(cluster.epilog_said())
    return path.read_text()


def running(cluster: Cluster, job: int, output: Path) -> None:
    """Wait until the job runs and has written its first line."""
    deadline = time.monotonic() + 60
    while not (output.exists() and output.read_text()):
        assert time.monotonic() < deadline, f"job {job} wrote nothing: {cluster.job(job)}"
        time.sleep(0.2)
    assert cluster.job(job)["JobState"] == "RUNNING"


@pytest.fixture(scope="module")
def timed_out(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> int:
    """A job with a one-minute limit that sleeps for five, submitted when the module starts."""
    folder = tmp_path_factory.mktemp("time-limit")
    return slurm_cluster.sbatch(script(folder, "train.sh", TRAIN), "--time=1", "-w", "nano1")


pytestmark = pytest.mark.usefixtures("timed_out")


def test_scancel_is_a_stop_from_outside_named_by_the_scheduler_line(
    slurm_cluster: Cluster, tmp_path: Path, cli: Any
) -> None:
    job = slurm_cluster.sbatch(script(tmp_path, "train.sh", TRAIN), "-w", "nano1")
    output = tmp_path / f"slurm-{job}.out"
    running(slurm_cluster, job, output)
    slurm_cluster.command("scancel", str(job))
    slurm_cluster.wait(job, ["CANCELLED"], timeout=60)
    text = output.read_text()
    assert re.search(
        rf"slurmstepd\S*: error: \*\*\* JOB {job} ON nano1 CANCELLED AT \S+ \*\*\*", text
    )
    match = top(cli, output)
    assert (match["id"], match["confidence"]) == ("job-terminated-sigterm", "possible")
    assert match["evidence"][0]["fingerprint"] == "slurm-cancelled"


def test_preemption_is_named_slurm_preemption(
    slurm_cluster: Cluster, tmp_path: Path, cli: Any
) -> None:
    low = slurm_cluster.sbatch(
        script(tmp_path, "train.sh", TRAIN), "-p", "low", "-c", "4", "-w", "nano2"
    )
    output = tmp_path / f"slurm-{low}.out"
    running(slurm_cluster, low, output)
    high = slurm_cluster.sbatch(
        script(tmp_path, "urgent.sh", "sleep 1\n"), "-p", "high", "-c", "4", "-w", "nano2"
    )
    slurm_cluster.wait(low, ["PREEMPTED"], timeout=60)
    slurm_cluster.wait(high, ["COMPLETED"], timeout=60)
    assert re.search(
        rf"\*\*\* JOB {low} ON nano2 CANCELLED AT \S+ DUE TO PREEMPTION \*\*\*", output.read_text()
    )
    assert top(cli, output)["id"] == "slurm-preemption"
    assert "verdict: slurm-preemption" in verdict_of(slurm_cluster, output)


def test_a_node_that_stops_answering_is_named_slurm_node_failure(
    slurm_cluster: Cluster, tmp_path: Path, cli: Any
) -> None:
    body = 'echo "epoch 1 step 1 loss 2.31"\nsrun --ntasks-per-node=1 sleep 300\n'
    job = slurm_cluster.sbatch(
        script(tmp_path, "multi.sh", body), "-N", "2", "-w", "nano3,nano4", "--no-requeue"
    )
    output = tmp_path / f"slurm-{job}.out"
    running(slurm_cluster, job, output)
    # Frozen while it still launches the step, nano4 would fail the launch (srun gives up, the
    # job ends FAILED) instead of the running job: wait until its slurmd is done with it.
    deadline = time.monotonic() + 60
    launched = "Finish processing RPC: REQUEST_LAUNCH_TASKS"
    while launched not in (slurm_cluster.folder / "slurmd-nano4.log").read_text():
        assert time.monotonic() < deadline, "nano4 did not launch the srun step"
        time.sleep(0.2)
    try:
        slurm_cluster.freeze("nano4")
        slurm_cluster.wait(job, ["NODE_FAIL"], timeout=120)
    finally:
        slurm_cluster.thaw("nano4")
    text = output.read_text()
    assert "srun: error: Node failure on nano4" in text
    assert re.search(rf"\*\*\* JOB {job} ON nano3 CANCELLED AT \S+ DUE TO NODE FAILURE", text)
    assert top(cli, output)["id"] == "slurm-node-failure"


def test_epilog_writes_the_verdict_of_a_failed_job_beside_its_output(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    job = slurm_cluster.sbatch(script(tmp_path, "fails.sh", FAILS), "-w", "nano1")
    assert slurm_cluster.wait(job, ["FAILED"], timeout=60)["ExitCode"] == "1:0"
    verdict = verdict_of(slurm_cluster, tmp_path / f"slurm-{job}.out")
    assert verdict.startswith(
        f"nanopedia: job {job}, exit status 1:0 as Slurm reported it; the verdict on "
    )
    assert "verdict: cuda-out-of-memory" in verdict
    assert OOM_LINE[:60] in verdict


def test_epilog_writes_nothing_for_a_job_that_succeeded(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    job = slurm_cluster.sbatch(
        script(tmp_path, "fine.sh", "echo 'epoch 1 step 1 loss 2.31'\n"), "-w", "nano1"
    )
    slurm_cluster.wait(job, ["COMPLETED"], timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fine.sh", f"slurm-{job}.out"]


def test_epilog_finds_output_and_error_files_named_by_patterns(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    """`%x` (the job name, which an Epilog is not told) and `%4j` (zero-padded)."""
    (tmp_path / "logs").mkdir()
    job = slurm_cluster.sbatch(
        script(tmp_path, "fails.sh", FAILS),
        "-w", "nano1", "-J", "oom run", "-o", "logs/%x-%4j.out", "-e", "logs/%x-%4j.err",
    )  # fmt: skip
    slurm_cluster.wait(job, ["FAILED"], timeout=60)
    out = tmp_path / "logs" / f"oom run-{job:04d}.out"
    verdict = verdict_of(slurm_cluster, out)
    assert f"the verdict on {out}, {tmp_path}/logs/oom run-{job:04d}.err:" in verdict
    assert "verdict: cuda-out-of-memory" in verdict


@pytest.fixture
def nobody_folder(slurm_cluster: Cluster) -> Iterator[Path]:
    """A folder of uid 65534 (nobody), where a job of that user runs."""
    if os.geteuid() != 0:
        pytest.skip("only root's slurmd runs a job as another user (sbatch --uid)")
    folder = slurm_cluster.folder.parent / f"nobody-{os.urandom(4).hex()}"
    folder.mkdir()
    os.chown(folder, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder)


def test_epilog_reads_and_writes_as_the_job_user(
    slurm_cluster: Cluster, nobody_folder: Path, tmp_path: Path
) -> None:
    """The verdict belongs to the job's user; an output the user swapped for a link to a file
    only root can read gives no verdict (root's Epilog would have quoted it)."""
    secret = tmp_path / "root-only.log"
    secret.write_text(OOM_LINE + "\n")
    secret.chmod(0o600)
    plain = slurm_cluster.sbatch(
        script(nobody_folder, "fails.sh", FAILS), "--uid", str(NOBODY), "-w", "nano1"
    )
    swap = f'ln -sf {secret} "$PWD/slurm-$SLURM_JOB_ID.out"\nexit 1\n'
    swapped = slurm_cluster.sbatch(
        script(nobody_folder, "swap.sh", swap), "--uid", str(NOBODY), "-w", "nano1"
    )
    slurm_cluster.wait(plain, ["FAILED"], timeout=60)
    slurm_cluster.wait(swapped, ["FAILED"], timeout=60)
    assert "verdict: cuda-out-of-memory" in verdict_of(
        slurm_cluster, nobody_folder / f"slurm-{plain}.out"
    )
    verdict = nobody_folder / f"slurm-{plain}.out.nanopedia.txt"
    assert (verdict.stat().st_uid, stat.S_IMODE(verdict.stat().st_mode)) == (NOBODY, 0o644)
    assert (nobody_folder / f"slurm-{swapped}.out").is_symlink()
    assert not (nobody_folder / f"slurm-{swapped}.out.nanopedia.txt").exists()
    assert f"job {swapped}: {nobody_folder}/slurm-{swapped}.out: Permission denied" in (
        slurm_cluster.epilog_said()
    )


def test_time_limit_is_named_slurm_time_limit(
    slurm_cluster: Cluster, timed_out: int, tmp_path_factory: pytest.TempPathFactory, cli: Any
) -> None:
    fields = slurm_cluster.wait(timed_out, ["TIMEOUT"], timeout=180)
    output = Path(fields["StdOut"])
    assert re.search(
        rf"slurmstepd\S*: error: \*\*\* JOB {timed_out} ON nano1 CANCELLED AT \S+ "
        r"DUE TO TIME LIMIT \*\*\*",
        output.read_text(),
    )
    assert top(cli, output)["id"] == "slurm-time-limit"


def test_epilog_names_the_time_limit_though_slurm_reports_exit_status_0(
    slurm_cluster: Cluster, timed_out: int
) -> None:
    output = Path(slurm_cluster.wait(timed_out, ["TIMEOUT"], timeout=180)["StdOut"])
    verdict = verdict_of(slurm_cluster, output)
    assert verdict.startswith(f"nanopedia: job {timed_out}, exit status 0:0 as Slurm reported it;")
    assert "verdict: slurm-time-limit" in verdict
