"""`nanopedia triage`: how jobs are found, the summary of a generated fleet with known answers,
bad input skipped by name in bounded reads, the CLI formats, the Python API and its schema."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from nanopedia.diagnosis import error_lines, hosts, logs, triage, triage_report
from nanopedia.diagnosis.jobs import (
    HEAD_BYTES,
    MAX_LINE_BYTES,
    SKIP_REASONS,
    Job,
    Skip,
    find_jobs,
    glob_regex,
)

sys.path.insert(0, str(ROOT / "bench"))
from triage_bench import (  # noqa: E402
    BAD_HOST,
    UNKNOWN_TEXT,
    check,
    failing_cases,
    make_fleet,
)

#: Real cases the engine classifies right when buried in healthy output: the fleet's known
#: answers are their labels.
FLEET_CASES = {
    "real/cuda-ecc-hardware-error--2.log",
    "real/cuda-illegal-memory-access--1.log",
    "real/cuda-out-of-memory--2.log",
    "real/dataloader-worker-exited--1.log",
    "real/ddp-unused-parameters--3.log",
    "real/nccl-system-error--1.log",
    "real/state-dict-key-mismatch--1.log",
    "real/torchrun-rendezvous-timeout--1.log",
}
ERROR = "[rank1]: RuntimeError: expected scalar type BFloat16 but found Float\n"


@pytest.fixture(scope="module")
def entries() -> list[Any]:
    return triage.load_entries(ROOT / "entries")[0]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("fleet") / "week"
    cases = [c for c in failing_cases() if c.name in FLEET_CASES]
    assert len(cases) == len(FLEET_CASES)
    return root, make_fleet(root, 60, lines=40, cases=cases)


@pytest.fixture
def cached_entries(monkeypatch: pytest.MonkeyPatch, entries: list[Any]) -> None:
    """The CLI's entries loaded once for the module (loading them takes seconds)."""
    monkeypatch.setattr(triage, "load_entries", lambda *_: (entries, []))


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _rel(items: list[Job | Skip], root: Path) -> list[tuple[str, ...]]:
    def r(p: str) -> str:
        return Path(p).relative_to(root).as_posix()

    return [
        (r(i.name), i.layout, *map(r, i.files))
        if isinstance(i, Job)
        else ("skip", r(i.path), i.reason)
        for i in items
    ]


# --- grouping ------------------------------------------------------------------------------------


def test_each_layout_is_grouped_into_jobs(tmp_path: Path) -> None:
    for rel in [
        "ranks/rank10.log",
        "ranks/rank2.log",
        "ranks/launcher.log",
        "ranks/notes.md",
        "run/attempt_10/0/stderr.log",
        "run/attempt_9/1/stdout.log",
        "run/attempt_9/0/stderr.log",
        "run/error.json",
        "slurm-12.out",
        "slurm-9.out",
        "train.log.gz",
        "README.md",
        "ranks/nested/worker-0.err",
        "solo/job.txt",
    ]:
        _write(tmp_path / rel, "step 1\n")
    (tmp_path / "empty").mkdir()
    found = _rel(list(find_jobs([tmp_path])), tmp_path)
    assert found == [
        ("slurm-9.out", "file", "slurm-9.out"),
        ("slurm-12.out", "file", "slurm-12.out"),
        ("train.log.gz", "file", "train.log.gz"),
        ("skip", "empty", "empty-folder"),
        ("ranks", "ranks", "ranks/launcher.log", "ranks/rank2.log", "ranks/rank10.log"),
        ("ranks/nested", "ranks", "ranks/nested/worker-0.err"),
        (
            "run",
            "torchrun",
            "run/attempt_9/0/stderr.log",
            "run/attempt_9/1/stdout.log",
            "run/attempt_10/0/stderr.log",
            "run/error.json",
        ),  # a torchelastic error file (#36)
        ("solo/job.txt", "file", "solo/job.txt"),
    ]


def test_job_names_are_the_paths_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "runs/slurm-1.out", "step\n")
    _write(tmp_path / "ranks/rank0.log", "step\n")
    os.mkfifo(tmp_path / "pipe.log")
    monkeypatch.chdir(tmp_path)
    assert [
        (i.name, i.files) if isinstance(i, Job) else (i.path, i.reason)
        for i in find_jobs([".", "runs/", "pipe.log"])
    ] == [
        ("pipe.log", "not-regular"),
        ("ranks", ("ranks/rank0.log",)),
        ("runs/slurm-1.out", ("runs/slurm-1.out",)),
        ("runs/slurm-1.out", ("runs/slurm-1.out",)),
        ("pipe.log", "not-regular"),
    ]


def test_rank_folders_without_attempts_are_one_run(tmp_path: Path) -> None:
    for rel in ["run/0/stderr.log", "run/1/stderr.log", "run/1/stdout.log"]:
        _write(tmp_path / rel, "step\n")
    assert _rel(list(find_jobs([tmp_path / "run"])), tmp_path) == [
        ("run", "torchrun", "run/0/stderr.log", "run/1/stderr.log", "run/1/stdout.log")
    ]


def test_job_pattern_names_the_job_folders(tmp_path: Path) -> None:
    for rel in [
        "team-a/job-1/x.log",
        "team-a/job-1/sub/y.out",
        "team-a/other/z.log",
        "team-b/job-2/node0.log",
        "team-b/job-2/node1.log",
        "team-b/job-3/notes.md",
    ]:
        _write(tmp_path / rel, "step\n")
    found = _rel(list(find_jobs([tmp_path], "team-*/job-*")), tmp_path)
    assert found == [
        ("team-a/job-1", "pattern", "team-a/job-1/sub/y.out", "team-a/job-1/x.log"),
        ("team-b/job-2", "pattern", "team-b/job-2/node0.log", "team-b/job-2/node1.log"),
        ("skip", "team-b/job-3", "no-logs"),
    ]
    files = _rel(list(find_jobs([tmp_path], "**/*.md")), tmp_path)
    assert files == [("team-b/job-3/notes.md", "pattern", "team-b/job-3/notes.md")]
    nothing = list(find_jobs([tmp_path], "nope-*"))
    assert [(s.reason, "matches --job-pattern 'nope-*'" in s.detail) for s in nothing] == [
        ("no-logs", True)
    ]


def test_glob_is_a_glob_per_path_segment() -> None:
    assert glob_regex("runs/*").fullmatch("runs/job-1")
    assert not glob_regex("runs/*").fullmatch("runs/a/job-1")
    assert glob_regex("**/job-?").fullmatch("a/b/job-7")
    assert glob_regex("**/job-?").fullmatch("job-7")
    assert glob_regex("job-[!0-4]").fullmatch("job-7") and not glob_regex("job-[!0-4]").fullmatch(
        "job-3"
    )
    with pytest.raises(triage.TriageError, match="never closed"):
        glob_regex("job-[12")


def test_missing_paths_are_named_together(tmp_path: Path) -> None:
    with pytest.raises(triage.TriageError, match=r"no such file or directory: .*a, .*b"):
        find_jobs([tmp_path / "a", tmp_path, tmp_path / "b"])


# --- hosts and error lines -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "host"),
    [
        ("gpu-node-07:1234:5678 [3] NCCL INFO comm 0x1 rank 3", "gpu-node-07"),
        ("[1,3]<stdout>:smc-gpu-03:29881:30401 [0] NCCL INFO init.cc:903 -> 5", "smc-gpu-03"),
        ("[gpu-node-3:12345] *** Process received signal ***", "gpu-node-3"),
        ("worker-1: [rank8]: RuntimeError: CUDA error", "worker-1"),
        ("srun: error: gpu20-15: task 0: Out Of Memory", "gpu20-15"),
        (
            "slurmstepd: error: *** JOB 94112 ON gpu20-15 CANCELLED AT 2022-05-17T17:58:10 ***",
            "gpu20-15",
        ),
        ("[trainer.py:2128] loss is nan", None),
        ("[rank3]: RuntimeError: CUDA error: an illegal memory access", None),
        ("2024-04-30 12:00:00 [3] step 1", None),
        ("srun: error: Node failure on gpu-a-017", "gpu-a-017"),
        (
            "Dec  5 10:00:01 gpu-node-17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
            "name=python, GPU has fallen off the bus.",
            "gpu-node-17",
        ),
        (
            "2026-12-05T10:00:01.123456+00:00 dgx-a100-04 kernel: NVRM: Xid (PCI:0000:07:00): 48, "
            "pid=9, An uncorrectable double bit error (DBE) has been detected on GPU in the "
            "framebuffer",
            "dgx-a100-04",
        ),
        (
            "[1234567.890123] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
            "GPU has fallen off the bus.",
            None,
        ),  # dmesg has no host: the file's or the job's name it
        ("Dec  5 10:00:01 INFO trainer: step 10", None),  # a log level is no host
    ],
)
def test_line_host(line: str, host: str | None) -> None:
    assert hosts.line_host(line) == host


SUMMARY = """[2024-01-01 00:00:10,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-01-01_00:00:09
  host      : gpu-node-09
  rank      : 5 (local_rank: 1)
  exitcode  : -6 (pid: 4321)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-01-01_00:00:08
  host      : gpu-node-08
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 1234)
"""


@pytest.mark.parametrize("cut", [0, 1, 137, 250, 300, len(SUMMARY) - 5])
def test_torchrun_summaries_name_each_ranks_host_even_across_buffers(cut: int) -> None:
    found = hosts.SummaryHosts()
    data = SUMMARY.encode()
    found.feed(data[:cut])
    found.feed(data[cut:])
    assert found.by_rank == {5: "gpu-node-09", 2: "gpu-node-08"}


def test_the_summary_names_the_host_when_the_failing_line_does_not() -> None:
    line = {"file": "job.log", "line": 3, "text": "[rank2]: RuntimeError: boom"}
    assert hosts.first_host(line, 2, {}, {2: "gpu-node-08"}) == ("gpu-node-08", "summary")
    named = {"file": "job.log", "line": 3, "text": "gpu-node-01:1:2 [2] NCCL WARN boom"}
    assert hosts.first_host(named, 2, {}, {2: "gpu-node-08"}) == ("gpu-node-01", "line")
    assert hosts.first_host(line, 3, {}, {2: "gpu-node-08"}) == (None, None)


def test_infrastructure_failures_are_counted_by_host(tmp_path: Path, entries: list[Any]) -> None:
    xid = (
        "Dec  5 10:00:01 {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n"
    )
    for n, host in enumerate(["gpu-bad-1", "gpu-bad-1", "gpu-bad-1", "gpu-ok-2"]):
        _write(tmp_path / f"job{n}.log", "step 1\n" + xid.format(host=host))
    _write(tmp_path / "job9.log", ERROR)
    result = triage.triage([tmp_path], entries=entries, jobs=1)
    rows = result.summary["infrastructure_hosts"]
    assert [(r["host"], r["jobs"]) for r in rows] == [("gpu-bad-1", 3), ("gpu-ok-2", 1)]
    assert all(j["host_rule"] == "line" for j in result.jobs if j["initiating_host"])
    text = triage_report.as_text(result.summary)
    assert "  gpu-bad-1: 3 jobs (repeated): " in text
    assert "  gpu-ok-2: 1 job: " in text


def test_error_lines_are_normalised_and_counted() -> None:
    tap = error_lines.ErrorLines()
    tap.start("a.log")
    tap.feed(
        b"[rank0]: step 1\n[rank0]: ValueError: bad shard 17 at 0xdeadbeef in /data/s/17.bin"
        b'\n[rank1]:   File "/x/error.py", line 3, in f\n[rank2]: ValueError: bad shard '
    )
    tap.feed(
        b"9 at 0x1 in /data/s/9.bin\nWARNING: retrying\n[rank6]:[E429 13:55:49.384372190 "
        b"ProcessGroupNCCL.cpp:1743] watchdog got stuck for 480 seconds"
    )
    tap.finish()
    assert tap.top() == [
        {
            "text": "ValueError: bad shard <n> at <hex> in <path>",
            "count": 2,
            "example": "[rank0]: ValueError: bad shard 17 at 0xdeadbeef in /data/s/17.bin",
            "file": "a.log",
            "line": 2,
        },
        {
            "text": "[E<time> ProcessGroupNCCL.cpp:<n>] watchdog got stuck for <n> seconds",
            "count": 1,
            "file": "a.log",
            "line": 6,
            "example": "[rank6]:[E429 13:55:49.384372190 "
            "ProcessGroupNCCL.cpp:1743] watchdog got stuck for 480 seconds",
        },
    ]


# --- the summary of a generated fleet ------------------------------------------------------------


def test_fleet_summary_has_the_known_answers(fleet: tuple[Path, Any], entries: list[Any]) -> None:
    root, want = fleet
    result = triage.triage([root], entries=entries, jobs=1)
    s = result.summary
    assert check(s, want) == []
    assert {e["id"]: e["jobs"] for e in s["entries"]} == dict(want.verdicts)
    assert [(e["id"], e["jobs"]) for e in s["entries"]] == sorted(
        want.verdicts.items(), key=lambda kv: (-kv[1], kv[0])
    )
    assert all(e["possible"] == 0 and e["possible_share"] == 0.0 for e in s["entries"])
    assert s["hosts"][0]["host"] == BAD_HOST and s["hosts"][0]["first_failures"] == want.bad_jobs
    assert s["hosts"][0]["entries"] == [{"id": "cuda-ecc-hardware-error", "jobs": want.bad_jobs}]
    assert s["jobs"] == {
        "total": want.jobs,
        "matched": sum(want.verdicts.values()),
        "unmatched": len(want.unknown),
        "clean": len(want.healthy),
        "skipped": 0,
    }
    assert [u["job"] for u in s["unmatched"]] == want.unknown
    assert all(
        u["error_lines"][0]["text"] == UNKNOWN_TEXT and u["error_lines"][0]["count"] == 3
        for u in s["unmatched"]
    )
    assert s["files"]["bytes"] == want.bytes and s["files"]["scanned"] == want.files
    by_job = {j["job"]: j for j in result.jobs}
    assert all(by_job[j]["status"] == "clean" for j in want.healthy)


def test_jobs_are_counted_by_the_domain_and_action_of_their_verdict(
    fleet: tuple[Path, Any], entries: list[Any]
) -> None:
    root, want = fleet
    result = triage.triage([root], entries=entries, jobs=1)
    expected: Counter[tuple[str, str]] = Counter()
    for job in result.jobs:
        if job["verdict"] is None:
            assert (job["domain"], job["action"]) == (None, None)
            continue
        best = next(m for m in job["matches"] if m["id"] == job["verdict"])
        assert (job["domain"], job["action"]) == (best["domain"], best["action"]) != (None, None)
        expected[(job["domain"], job["action"])] += 1
    actions = result.summary["actions"]
    assert {(a["domain"], a["action"]): a["jobs"] for a in actions} == dict(expected)
    assert sum(a["jobs"] for a in actions) == result.summary["jobs"]["matched"]
    assert [a["jobs"] for a in actions] == sorted((a["jobs"] for a in actions), reverse=True)
    ecc = next(
        a for a in actions if any(e["id"] == "cuda-ecc-hardware-error" for e in a["entries"])
    )
    assert ecc["hosts"] >= 1  # the bad host is counted where its jobs' action is
    text = triage_report.as_text(result.summary)
    assert "what to do, by failure domain and action" in text
    assert f"  {ecc['domain']}, {ecc['action']}: " in text
    row = triage_report.csv_row(next(j for j in result.jobs if j["verdict"]))
    cells = dict(zip(triage_report.CSV_COLUMNS, row, strict=True))
    assert cells["domain"] and cells["action"]


def test_pool_gives_the_same_records_in_the_same_order(
    fleet: tuple[Path, Any], entries: list[Any]
) -> None:
    root, _ = fleet
    one = triage.triage([root], entries=entries, jobs=1).as_json()
    two = triage.triage([root], entries=entries, jobs=2).as_json()
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_first_failure_host_rules(tmp_path: Path, entries: list[Any]) -> None:
    _write(tmp_path / "a/rank0.log", "hostA:1:2 [0] NCCL INFO Bootstrap\nstep 1\n")
    _write(tmp_path / "a/rank1.log", "hostB:1:2 [1] NCCL INFO Bootstrap\n" + ERROR)
    _write(
        tmp_path / "b.log",
        "[rank0]:hostC:1:2 [0] NCCL INFO x\n[rank1]:hostD:1:2 [1] NCCL INFO x\n" + ERROR,
    )
    _write(tmp_path / "c.log", "hostE:1:2 [1] " + ERROR)
    result = triage.triage([tmp_path], entries=entries, jobs=1)
    got = {Path(j["job"]).name: (j["initiating_host"], j["host_rule"]) for j in result.jobs}
    assert got == {
        "a": ("hostB", "file-rank"),
        "b.log": ("hostD", "file-rank"),
        "c.log": ("hostE", "line"),
    }


# --- bad input -----------------------------------------------------------------------------------


def test_bad_input_is_skipped_by_name(tmp_path: Path, entries: list[Any]) -> None:
    fleet = tmp_path / "fleet"
    (fleet / "empty").mkdir(parents=True)
    _write(fleet / "core.log", b"ELF\x00\x01\x02" * 100)
    _write(fleet / "one-line.log", b"x" * (MAX_LINE_BYTES + 4096))
    _write(fleet / "bad.log.gz", b"\x1f\x8b\x08\x00garbage")
    _write(fleet / "big.log", "step 1\n" * 450_000)  # 3.1 MB
    _write(fleet / "ok.log", ERROR)
    os.symlink(fleet / "gone", fleet / "dangling.log")
    os.mkfifo(fleet / "pipe.log")
    result = triage.triage([fleet], entries=entries, jobs=1, max_file_bytes=2 << 20)
    skipped = {Path(k["path"]).name: k["reason"] for k in result.summary["skipped"]["files"]}
    assert skipped == {
        "empty": "empty-folder",
        "core.log": "binary",
        "one-line.log": "single-line",
        "bad.log.gz": "unreadable",
        "big.log": "too-large",
        "dangling.log": "unreadable",
        "pipe.log": "not-regular",
    }
    assert result.summary["skipped"]["by_reason"] == {
        "binary": 1,
        "empty-folder": 1,
        "not-regular": 1,
        "single-line": 1,
        "too-large": 1,
        "unreadable": 2,
    }
    assert [Path(j["job"]).name for j in result.jobs if j["status"] == "matched"] == ["ok.log"]


def test_a_2_gb_single_line_file_is_read_only_to_its_first_mib(
    tmp_path: Path, entries: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "huge.log"
    with huge.open("wb") as f:  # sparse: 2 GiB long, 1 MiB on disk
        f.write(b"y" * (1 << 20))
        f.truncate(2 << 30)
    gzipped = _write(tmp_path / "huge.log.gz", gzip.compress(b"z" * (3 << 20)))
    read: list[int] = []

    class Counting(io.RawIOBase):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def read(self, size: int = -1) -> bytes:
            data = self.inner.read(size)
            read.append(len(data))
            return data

        def close(self) -> None:
            self.inner.close()

    real = logs.open_log
    monkeypatch.setattr(logs, "open_log", lambda p: (Counting(real(p)[0]), None))
    result = triage.triage([huge, gzipped], entries=entries, jobs=1)
    assert [(Path(k["path"]).name, k["reason"]) for k in result.summary["skipped"]["files"]] == [
        ("huge.log", "single-line"),
        ("huge.log.gz", "single-line"),
    ]
    assert sum(read) <= 2 * (MAX_LINE_BYTES + HEAD_BYTES)


def test_an_oversized_plain_file_is_not_read_at_all(
    tmp_path: Path, entries: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as f:
        f.write(b"step 1\n")
        f.truncate(3 << 30)
    monkeypatch.setattr(logs, "open_log", lambda p: pytest.fail("opened"))
    result = triage.triage([big], entries=entries, jobs=1)
    assert [k["reason"] for k in result.summary["skipped"]["files"]] == ["too-large"]


# --- the Python API and its schema ---------------------------------------------------------------


def test_lines_give_the_same_answer_as_files(tmp_path: Path, entries: list[Any]) -> None:
    _write(tmp_path / "j/rank0.log", "step 1\n")
    _write(tmp_path / "j/rank1.log", ERROR)
    files = triage.triage([tmp_path / "j"], entries=entries, jobs=1).jobs[0]
    lines = triage.triage(
        {
            "j": {
                str(tmp_path / "j/rank0.log"): iter(["step 1"]),
                str(tmp_path / "j/rank1.log"): [ERROR.encode()],
            }
        },
        entries=entries,
    ).jobs[0]
    assert {**files, "job": "j", "layout": "lines"} == lines
    whole = triage.triage({"one": ERROR}, entries=entries).jobs[0]
    assert whole["verdict"] == lines["verdict"] is not None and whole["lines"] == 1


def _validate(value: Any, schema: dict[str, Any], defs: dict[str, Any], where: str) -> list[str]:
    """The subset of JSON Schema triage.schema.json uses: type, const, enum, required,
    properties, additionalProperties, items, oneOf, $ref."""
    if "$ref" in schema:
        return _validate(value, defs[schema["$ref"].rsplit("/", 1)[1]], defs, where)
    if "oneOf" in schema:
        fits = [s for s in schema["oneOf"] if not _validate(value, s, defs, where)]
        return [] if len(fits) == 1 else [f"{where}: fits {len(fits)} of oneOf"]
    kinds = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "null": type(None),
        "integer": int,
        "number": (int, float),
    }
    wanted = schema.get("type")
    if wanted is not None:
        types = wanted if isinstance(wanted, list) else [wanted]
        ok = any(
            isinstance(value, kinds[t])
            and not (t in ("integer", "number") and isinstance(value, bool))
            for t in types
        )
        if not ok:
            return [f"{where}: {value!r} is not {wanted}"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: {value!r} is not {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not in {schema['enum']}"]
    errors = []
    if isinstance(value, dict):
        errors += [f"{where}: no {k!r}" for k in schema.get("required", []) if k not in value]
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                errors += _validate(v, props[k], defs, f"{where}.{k}")
            elif extra is False:
                errors.append(f"{where}: unexpected {k!r}")
            elif isinstance(extra, dict):
                errors += _validate(v, extra, defs, f"{where}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errors += _validate(v, schema["items"], defs, f"{where}[{i}]")
    return errors


def test_output_validates_against_the_shipped_schema(
    fleet: tuple[Path, Any], tmp_path: Path, entries: list[Any]
) -> None:
    root, _ = fleet
    _write(tmp_path / "core.log", b"\x00" * 10)
    schema = json.loads(triage.SCHEMA.read_text())
    out = triage.triage([root, tmp_path], entries=entries, jobs=1).as_json()
    assert (
        out["schema_version"]
        == triage.SCHEMA_VERSION
        == schema["properties"]["schema_version"]["const"]
    )
    assert _validate(out, schema, schema["$defs"], "$") == []
    out["jobs"][0]["status"] = "exploded"
    del out["summary"]["gaps"]
    assert _validate(out, schema, schema["$defs"], "$") == [
        "$.jobs[0].status: 'exploded' not in ['matched', 'unmatched', 'clean', 'skipped']",
        "$.summary: no 'gaps'",
    ]
    assert set(schema["$defs"]["skip"]["properties"]["reason"]["enum"]) == set(SKIP_REASONS)


def test_the_core_never_imports_ray(tmp_path: Path) -> None:
    _write(tmp_path / "logs/a.log", ERROR)
    for name in ("tags.yaml", "fsdp-mixed-precision-error.yaml"):  # --entries: one entry
        _write(tmp_path / "entries" / name, (ROOT / "entries" / name).read_bytes())
    code = (
        "import sys; from nanopedia.cli import main; "
        f"main(['triage', '--jobs', '1', '--format', 'csv', '--entries', "
        f"{str(tmp_path / 'entries')!r}, {str(tmp_path / 'logs')!r}]); "
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert ",file,matched,fsdp-mixed-precision-error," in run.stdout


# --- the CLI -------------------------------------------------------------------------------------


def test_cli_text(cli, fleet: tuple[Path, Any], cached_entries: None) -> None:
    root, want = fleet
    run = cli("triage", "--jobs", "1", str(root))
    assert run.code == 0, run.err
    top, n = sorted(want.verdicts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    assert run.out.startswith(f"nanopedia triage: {want.jobs} jobs: ")
    assert f"  {n:5}  {100 * n / sum(want.verdicts.values()):5.1f}%        0%  {top}: " in run.out
    assert (
        "first failure on the same host in several jobs:\n"
        f"  {BAD_HOST}: {want.bad_jobs} jobs (its name is in {want.bad_jobs}): "
        f"cuda-ecc-hardware-error {want.bad_jobs}\n" in run.out
    )
    assert f"jobs no entry matched: {len(want.unknown)};" in run.out
    assert f"  {len(want.unknown)} jobs  {UNKNOWN_TEXT}\n" in run.out


def test_cli_json_is_the_api_result_written_job_by_job(
    cli, fleet: tuple[Path, Any], entries: list[Any], cached_entries: None
) -> None:
    root, _ = fleet
    run = cli("triage", "--format", "json", "--jobs", "2", str(root))
    assert run.code == 0, run.err
    api = triage.triage([root], entries=entries, jobs=1).as_json()
    assert run.out == json.dumps(api, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    empty = cli("triage", "--format", "json", str(root / "nothing-here.log"))
    assert empty.code == 2 and "no such file or directory" in empty.err


def test_cli_csv_has_a_row_per_job(cli, fleet: tuple[Path, Any], cached_entries: None) -> None:
    root, want = fleet
    run = cli("triage", "--format", "csv", "--jobs", "1", str(root))
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert list(rows[0]) == list(triage_report.CSV_COLUMNS)
    *rows, end = rows  # F05: a complete CSV ends with its end row, a killed run's does not
    assert (end["job"], end["layout"], end["status"]) == ("#end", f"{want.jobs} jobs", "complete")
    assert len(rows) == want.jobs
    bad = [r for r in rows if r["initiating_host"] == BAD_HOST]
    assert len(bad) == want.bad_jobs and {r["verdict"] for r in bad} == {"cuda-ecc-hardware-error"}
    assert {r["job"] for r in rows if r["status"] == "unmatched"} == set(want.unknown)
    assert {r["top_error_line"] for r in rows if r["status"] == "unmatched"} == {UNKNOWN_TEXT}


def test_cli_markdown_and_exit_code_for_skips(
    cli, fleet: tuple[Path, Any], tmp_path: Path, cached_entries: None
) -> None:
    root, want = fleet
    _write(tmp_path / "core.log", b"\x00" * 10)
    run = cli("triage", "--format", "markdown", "--jobs", "1", str(root), str(tmp_path))
    assert run.code == 1
    n = want.verdicts["ddp-unused-parameters"]
    share = 100 * n / sum(want.verdicts.values())
    assert (
        f"| {n} | {share:.1f}% | 0% | [ddp-unused-parameters]"
        "(site/entries/ddp-unused-parameters.html): " in run.out
    )
    assert (
        f"| {BAD_HOST} | {want.bad_jobs} | {want.bad_jobs} | cuda-ecc-hardware-error "
        f"{want.bad_jobs} |" in run.out
    )
    assert (
        f"| {len(want.unknown)} | ZorkError: flux capacitor \\<n\\> overheated at \\<hex\\> "
        "in \\<path\\> |" in run.out
    )
    assert f"- {tmp_path / 'core.log'}: binary (" in run.out.replace("\\_", "_")


def test_cli_usage_errors(
    cli, tmp_path: Path, cached_entries: None, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(_write(tmp_path / "a.log", ERROR))
    pattern = cli("triage", "--job-pattern", "[x", str(tmp_path))
    assert pattern.code == 2 and "never closed" in pattern.err
    swallowed = cli("triage", "--ray", str(tmp_path), log)
    assert swallowed.code == 2 and swallowed.err.startswith("--ray: error[E050]: took ")
    assert "hint: put a bare --ray after the paths" in swallowed.err
    with pytest.raises(SystemExit) as exited:
        cli("triage", "--max-file-bytes", "lots", log)
    assert exited.value.code == 2 and "not a size: 'lots'" in capsys.readouterr().err
    assert triage_report.size(1_700) == "1.7 kB"


# --- no read waits past a deadline (#38) ---------------------------------------------------------


def test_a_log_swapped_for_a_fifo_after_listing_is_skipped_not_waited_on(
    tmp_path: Path, entries: list[Any]
) -> None:
    """T18: the file was regular when its folder was listed; opened, it is a FIFO no one
    writes to. A plain `open` would wait for a writer for ever."""
    import threading

    from nanopedia.diagnosis.workers import Worker

    fifo = tmp_path / "z-late.log"
    os.mkfifo(fifo)
    done: list[dict[str, Any]] = []
    worker = Worker(entries, triage.Options(deadline=5))
    thread = threading.Thread(
        target=lambda: done.append(worker.run(Job("job", "folder", (str(fifo),)))), daemon=True
    )
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the test run can end, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail("triage blocked opening a FIFO")
    assert [(s["path"], s["reason"]) for s in done[0]["skipped"]] == [(str(fifo), "not-regular")]


def test_a_file_link_out_of_the_tree_is_not_read(tmp_path: Path, entries: list[Any]) -> None:
    """T03: a log name in the store linked to a secret of the host: never read, never quoted."""
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "token.txt").write_text("RuntimeError: SECRET_TOKEN=hunter2\n")
    job = tmp_path / "store" / "job-17"
    job.mkdir(parents=True)
    os.symlink("../../host/token.txt", job / "train.log")
    _write(job / "other.log", ERROR)
    result = triage.triage([tmp_path / "store"], entries=entries, jobs=1)
    assert "hunter2" not in json.dumps(result.as_json())
    assert [(Path(k["path"]).name, k["reason"]) for k in result.summary["skipped"]["files"]] == [
        ("train.log", "not-regular")
    ]


@pytest.mark.parametrize("pattern", [None, "**/job"])
def test_a_job_a_thousand_folders_deep_is_found(tmp_path: Path, pattern: str | None) -> None:
    """T12: the walk is a loop, not recursion (which ended in RecursionError past ~800)."""
    deep = tmp_path / "store"
    parts = ["d"] * 1000
    for i in range(0, 1000, 100):  # mkdir -p in pieces: one path of 2,000 characters is fine
        (deep.joinpath(*parts[: i + 100])).mkdir(parents=True, exist_ok=True)
    job = deep.joinpath(*parts, "job")
    job.mkdir()
    _write(job / "train.log", ERROR)
    try:
        found = [j for j in find_jobs([deep], pattern) if isinstance(j, Job)]
        assert [Path(j.files[0]).name for j in found] == ["train.log"]
        assert found[0].name.count("/d") >= 999
    finally:  # pytest's own clean-up of old temporary folders recurses: too deep for it
        (job / "train.log").unlink()
        job.rmdir()
        for i in range(1000, 0, -1):
            deep.joinpath(*parts[:i]).rmdir()
