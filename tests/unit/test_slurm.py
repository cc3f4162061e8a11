"""nanopedia.hooks.slurm without a Slurm: the environment slurmd gives an Epilog, as values.

The same module under a real slurmd: tests/integration/test_slurm.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nanopedia.hooks import slurm

ROOT = Path(__file__).resolve().parents[2]
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 388.00 MiB.\n"
BENIGN = (
    "[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] "
    "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32\n"
)


def job(**changes: object) -> slurm.Job:
    fields: dict[str, object] = {
        "id": 42,
        "uid": os.geteuid(),
        "gid": os.getegid(),
        "user": "alice",
        "node": "gpu003",
        "nodes": "gpu[003-004]",
        "work_dir": "/w",
        "stdout": None,
        "stderr": None,
        "exit_code": "1:0",
    }
    return slurm.Job(**{**fields, **changes})  # type: ignore[arg-type]


def epilog_env(folder: Path, exit_code: str, **extra: str) -> dict[str, str]:
    """What slurmd 22.05 sets for an Epilog (prep_script_slurmd.c), for a job of this user."""
    return {
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_UID": str(os.geteuid()),
        "SLURM_JOB_GID": str(os.getegid()),
        "SLURM_JOB_USER": "alice",
        "SLURMD_NODENAME": "gpu003",
        "SLURM_NODELIST": "gpu[003-004]",
        "SLURM_JOB_WORK_DIR": str(folder),
        "SLURM_JOB_EXIT_CODE2": exit_code,
        "SLURM_SCRIPT_CONTEXT": "epilog_slurmd",
        **extra,
    }


@pytest.mark.parametrize(
    ("hostlist", "first"),
    [
        ("nano1", "nano1"),
        ("nano[3-4]", "nano3"),
        ("gpu[003-004,9],cpu1", "gpu003"),
        ("rack[1-2]-n[01-04]", "rack1-n01"),
        ("a,b[1-2]", "a"),
        ("node-[7,2]", "node-7"),
    ],
)
def test_first_node_of_a_hostlist_is_where_the_batch_script_ran(hostlist: str, first: str) -> None:
    assert slurm.first_node(hostlist) == first


@pytest.mark.parametrize(
    ("pattern", "glob"),
    [
        ("slurm-%j.out", "/w/slurm-42.out"),
        ("/abs/%x-%j.out", "/abs/*-42.out"),
        ("%A_%a.out", "/w/*_*.out"),
        ("%5j.log", "/w/00042.log"),
        ("%12J.log", "/w/0000000042.log"),
        ("%%j-%j", "/w/%j-42"),
        ("%u-%N-%n-%t-%s.out", "/w/alice-gpu003-0-0-batch.out"),
        ("%z.out", "/w/%z.out"),
        ("run[1]*.out", "/w/run[[]1][*].out"),
        ("out\\%j.log", "/w/out%j.log"),
    ],
)
def test_output_pattern_expands_as_slurmstepd_does_for_the_batch_step(
    pattern: str, glob: str
) -> None:
    assert slurm.expand(pattern, job(), "gpu003") == glob


@pytest.mark.parametrize(
    ("exit_code", "failed"), [("0:0", False), ("", False), ("1:0", True), ("0:15", True)]
)
def test_failed_reads_the_batch_scripts_exit_and_signal(exit_code: str, failed: bool) -> None:
    assert slurm.failed(job(exit_code=exit_code)) is failed


def test_an_environment_without_a_job_is_named() -> None:
    with pytest.raises(slurm.Skip, match="not run as a Slurm Epilog: SLURM_JOB_ID is not set"):
        slurm.job_from_env({})
    with pytest.raises(slurm.Skip, match="invalid literal"):
        slurm.job_from_env({**epilog_env(Path("/w"), "0:0"), "SLURM_JOB_UID": "alice"})


def test_failed_job_gets_its_verdict_beside_the_output(tmp_path: Path) -> None:
    (tmp_path / "slurm-42.out").write_text("epoch 1 step 1 loss 2.31\n" + OOM)
    said = slurm.run(epilog_env(tmp_path, "1:0"), "gpu003")
    verdict = tmp_path / "slurm-42.out.nanopedia.txt"
    assert said == f"job 42: verdict written to {verdict}"
    text = verdict.read_text()
    assert text.startswith(
        f"nanopedia: job 42, exit status 1:0 as Slurm reported it; the verdict on {tmp_path}"
    )
    assert "verdict: cuda-out-of-memory" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slurm-42.out", verdict.name]


def test_verdict_is_no_more_readable_than_the_output_it_quotes(tmp_path: Path) -> None:
    output = tmp_path / "slurm-42.out"
    output.write_text(OOM)
    output.chmod(0o600)
    slurm.run(epilog_env(tmp_path, "1:0"), "gpu003")
    verdict = tmp_path / "slurm-42.out.nanopedia.txt"
    assert stat.S_IMODE(verdict.stat().st_mode) == 0o600
    output.chmod(0o644)
    slurm.run(epilog_env(tmp_path, "1:0"), "gpu003")
    assert stat.S_IMODE(verdict.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slurm-42.out", verdict.name]


def test_benign_evidence_gets_a_verdict_only_when_the_job_failed(tmp_path: Path) -> None:
    (tmp_path / "slurm-42.out").write_text(BENIGN)
    assert slurm.run(epilog_env(tmp_path, "0:0"), "gpu003") == (
        f"job 42: no known failure in {tmp_path}/slurm-42.out"
    )
    assert not (tmp_path / "slurm-42.out.nanopedia.txt").exists()
    slurm.run(epilog_env(tmp_path, "0:9"), "gpu003")
    assert "fp16-overflow-loss-scale" in (tmp_path / "slurm-42.out.nanopedia.txt").read_text()


def test_only_the_first_node_diagnoses(tmp_path: Path) -> None:
    (tmp_path / "slurm-42.out").write_text(OOM)
    env = {**epilog_env(tmp_path, "1:0"), "SLURMD_NODENAME": "gpu004"}
    with pytest.raises(slurm.Skip, match="job 42: the batch script ran on gpu003"):
        slurm.run(env, "gpu004")
    assert not (tmp_path / "slurm-42.out.nanopedia.txt").exists()


def test_output_that_is_missing_ambiguous_or_no_file_is_skipped(tmp_path: Path) -> None:
    env = epilog_env(tmp_path, "1:0", SLURM_JOB_STDOUT=f"{tmp_path}/%x.out")
    with pytest.raises(slurm.Skip, match=r"job 42: no file for the output pattern '.*/%x.out'"):
        slurm.run(env, "gpu003")
    (tmp_path / "a.out").write_text(OOM)
    (tmp_path / "b.out").write_text(OOM)
    with pytest.raises(slurm.Skip, match="2 files for the output pattern"):
        slurm.run(env, "gpu003")
    os.mkfifo(tmp_path / "fifo.out")
    env = epilog_env(tmp_path, "1:0", SLURM_JOB_STDOUT=f"{tmp_path}/fifo.out")
    with pytest.raises(slurm.Skip, match="is not a regular file"):
        slurm.run(env, "gpu003")


def test_a_job_of_another_user_is_left_alone_without_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slurm-42.out").write_text(OOM)
    monkeypatch.setattr(slurm.os, "geteuid", lambda: 1000)
    env = {**epilog_env(tmp_path, "1:0"), "SLURM_JOB_UID": "1001"}
    with pytest.raises(
        slurm.Skip, match="job 42: runs as uid 1000, not as root: cannot act as uid 1001"
    ):
        slurm.run(env, "gpu003")
    assert not (tmp_path / "slurm-42.out.nanopedia.txt").exists()


def test_epilog_stops_within_its_time_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "slurm-42.out").write_text(OOM)
    for key, value in epilog_env(tmp_path, "1:0").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(slurm, "TIMEOUT", 1)
    monkeypatch.setattr(slurm, "verdict", lambda *args: time.sleep(30))
    monkeypatch.setattr(slurm.socket, "gethostname", lambda: "gpu003")
    start = time.monotonic()
    assert slurm.main() == 0
    assert time.monotonic() - start < 5
    assert capsys.readouterr().err == "nanopedia epilog: stopped after 1 s\n"


def test_the_recipe_exits_0_whatever_happens(tmp_path: Path) -> None:
    """Without a job, and with no interpreter where it says: an Epilog that fails drains the
    node."""
    recipe = (ROOT / "contrib" / "slurm" / "epilog.sh").read_text()
    broken = tmp_path / "epilog.sh"
    broken.write_text(recipe.replace("/opt/nanopedia/bin/python", str(tmp_path / "none")))
    broken.chmod(0o755)
    assert subprocess.run([str(broken)], env={}, capture_output=True, check=False).returncode == 0
    module = subprocess.run(
        [sys.executable, "-m", "nanopedia.hooks.slurm"],
        env={"PYTHONPATH": str(ROOT / "generator")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (module.returncode, module.stderr) == (
        0,
        "nanopedia epilog: not run as a Slurm Epilog: SLURM_JOB_ID is not set\n",
    )
