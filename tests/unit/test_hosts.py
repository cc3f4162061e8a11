"""Which machine a job's first failure happened on (`diagnosis/hosts.py`): a table of the line
formats that name a host, and the order of the rules when a line names none."""

from __future__ import annotations

import pytest

from nanopedia.diagnosis import hosts
from nanopedia.diagnosis.hosts import HeadHosts, SummaryHosts, first_host, head_hosts, line_host

LINES = [
    ("SLURM task", "srun: error: gpu-node-07: task 3: Exited with exit code 1", "gpu-node-07"),
    ("SLURM step daemon", "slurmstepd-gpu-12: error: *** STEP 1.0 ON gpu-12 CANCELLED", "gpu-12"),
    ("SLURM cancelled job", "slurmstepd: error: *** JOB 4417 ON dgx-3 CANCELLED AT 2026", "dgx-3"),
    ("SLURM node failure", "srun: error: Node failure on node-9", "node-9"),
    ("syslog", "Dec  5 10:00:01 gpu-host-2 kernel: NVRM: Xid (PCI:0000:3b:00): 79", "gpu-host-2"),
    ("journal", "2026-12-05T10:00:01+00:00 a100-4 kernel: NVRM: Xid 48", "a100-4"),
    ("syslog with a pid", "Dec 15 10:00:01 h100-1 nvidia-persistenced[812]: x", "h100-1"),
    ("NCCL prefix", "[rank3]: worker-5:1234:1290 [3] NCCL WARN Call to ibv_poll_cq", "worker-5"),
    ("Open MPI", "[node-3:04521] *** Process received signal ***", "node-3"),
    ("pdsh prefix", "gpu17: Traceback (most recent call last):", "gpu17"),
    ("a source file is no host", "[train.py:120] error", None),
    ("a log level is no host", "ERROR: something", None),
    ("a pdsh name needs a digit", "worker: RuntimeError", None),
    ("nothing", "RuntimeError: CUDA error: an illegal memory access", None),
]


@pytest.mark.parametrize("text, host", [r[1:] for r in LINES], ids=[r[0] for r in LINES])
def test_every_line_format_that_names_a_host_gives_it(text: str, host: str | None) -> None:
    assert line_host(text) == host


def test_the_strongest_rule_wins_on_a_line_that_names_two_hosts() -> None:
    assert line_host("srun: error: gpu-1: task 0: [gpu-2:77] x") == "gpu-1"


HEAD = (
    b"[rank0]: gpu-a:11:12 [0] NCCL INFO Bootstrap\n"
    b"[rank1]: gpu-b:21:22 [1] NCCL INFO Bootstrap\n"
    b"[rank1]: gpu-c:21:22 [1] NCCL INFO a second host for rank 1 is ignored\n"
    b"[1,2]<stdout>: gpu-d:31:32 [2] NCCL INFO Open MPI rank\n"
    b"train.py:1:2 [0] NCCL INFO not a host\n"
)


def test_a_heads_nccl_lines_give_each_ranks_first_host() -> None:
    found = head_hosts(HEAD, None)
    assert found.by_rank == {0: "gpu-a", 1: "gpu-b", 2: "gpu-d"}
    assert found.hosts == {"gpu-a", "gpu-b", "gpu-c", "gpu-d"}


def test_a_head_line_without_a_rank_prefix_takes_the_files_rank() -> None:
    found = head_hosts(b"gpu-x:1:2 [0] NCCL INFO init\n", 5)
    assert found.by_rank == {5: "gpu-x"} and found.hosts == {"gpu-x"}
    assert head_hosts(b"gpu-x:1:2 [0] NCCL INFO init\n", None).by_rank == {}


def test_pdsh_prefixes_in_a_head_give_hosts() -> None:
    found = head_hosts(b"node12: [rank4]: starting\nnode13: [x] other\n", None)
    assert found.by_rank == {4: "node12"} and found.hosts == {"node12", "node13"}


def test_a_head_is_read_only_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosts, "HEAD_NCCL_LINES", 1)
    monkeypatch.setattr(hosts, "HEAD_PDSH_LINES", 1)
    assert head_hosts(HEAD, None).hosts == {"gpu-a"}
    assert head_hosts(b"x\nnode12: [rank4]: y\n", None).hosts == set()


SUMMARY = (
    b"Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-05_10:00:01\n"
    b"  host      : gpu-node-3\n  rank      : 5 (local_rank: 1)\n"
    b"Other Failures:\n  host      : gpu-node-4\n  rank      : 6 (local_rank: 2)\n"
)


def test_torchruns_error_summary_gives_the_host_of_each_rank() -> None:
    found = SummaryHosts()
    found.feed(SUMMARY)
    assert found.by_rank == {5: "gpu-node-3", 6: "gpu-node-4"}


def test_a_summary_cut_between_two_buffers_is_still_read() -> None:
    found = SummaryHosts()
    cut = SUMMARY.index(b"rank      : 5")
    found.feed(SUMMARY[:cut])
    found.feed(SUMMARY[cut:])
    assert found.by_rank[5] == "gpu-node-3"


def test_a_rank_line_two_lines_below_the_host_line_is_not_its_rank() -> None:
    found = SummaryHosts()
    found.feed(SUMMARY[: SUMMARY.index(b"rank      : 5")])
    found.feed(b"one line\n")
    found.feed(b"two lines\n  rank      : 5 (local_rank: 1)\n")
    assert found.by_rank == {}


def test_summary_ranks_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosts, "SUMMARY_RANKS", 1)
    found = SummaryHosts()
    found.feed(SUMMARY)
    assert found.by_rank == {5: "gpu-node-3"}


def line(text: str, file: str = "rank5.log") -> dict[str, str]:
    return {"text": text, "file": file}


HEADS = {
    "rank5.log": HeadHosts({5: "head-5"}, {"head-5", "head-x"}),
    "rank6.log": HeadHosts({6: "head-6"}, {"head-6"}),
    "other.log": HeadHosts({7: "other-7"}, {"other-7"}),
}

RULES = [
    ("the line's own host", line("srun: error: own-1: task 5"), 5, {5: "sum-5"}, ("own-1", "line")),
    ("then torchrun's summary", line("boom"), 5, {5: "sum-5"}, ("sum-5", "summary")),
    ("then the file's head for the rank", line("boom"), 5, {}, ("head-5", "file-rank")),
    ("then any head for the rank", line("boom", "rank6.log"), 7, None, ("other-7", "job-rank")),
    ("then the file's only host", line("boom", "rank6.log"), 9, None, ("head-6", "file")),
    ("no rank: the file's only host", line("boom", "rank6.log"), None, None, ("head-6", "file")),
    ("a file of two hosts names none", line("boom"), None, None, (None, None)),
    ("no first failure", None, None, None, (None, None)),
]


@pytest.mark.parametrize(
    "initiating, rank, summary, expected", [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_the_first_failures_host_comes_from_the_strongest_rule(
    initiating: dict[str, str] | None,
    rank: int | None,
    summary: dict[int, str] | None,
    expected: tuple[str | None, str | None],
) -> None:
    assert first_host(initiating, rank, HEADS, summary) == expected


def test_heads_that_disagree_on_a_rank_name_no_host_for_it() -> None:
    heads = {"a.log": HeadHosts({3: "h1"}, {"h1", "h9"}), "b.log": HeadHosts({3: "h2"}, {"h2"})}
    assert first_host(line("boom", "c.log"), 3, heads) == (None, None)
    agree = {"a.log": HeadHosts({3: "h1"}, {"h1"}), "b.log": HeadHosts({3: "h1"}, {"h1"})}
    assert first_host(line("boom", "c.log"), 3, agree) == ("h1", "job-rank")


def test_a_host_name_of_letters_only_is_a_host_and_a_log_level_is_not() -> None:
    assert head_hosts(b"gpuhost:1:2 [0] NCCL INFO init\n", 0).by_rank == {0: "gpuhost"}
    assert head_hosts(b"WARN:1:2 [0] NCCL INFO init\n", 0).by_rank == {}


def test_a_name_that_is_no_host_does_not_stop_the_ones_after_it() -> None:
    head = b"train.py:1:2 [0] NCCL INFO x\n[rank1]: gpu-b:2:3 [1] NCCL INFO y\n"
    assert head_hosts(head, None).by_rank == {1: "gpu-b"}


def test_a_head_that_starts_with_a_blank_line_is_still_read() -> None:
    assert head_hosts(b"\nnode12: [rank4]: x\n", None).by_rank == {4: "node12"}


def test_bytes_that_are_not_utf8_in_a_head_are_read_around() -> None:
    head = b"[rank1]: gpu-b:2:3 [1]\xff NCCL INFO y\nnode12: [rank4]: \xff\n"
    found = head_hosts(head.replace(b"\xff NCCL", b" NCCL"), None)
    assert found.by_rank == {1: "gpu-b", 4: "node12"}
    bad = head_hosts(b"\xff[rank1]: gpu-b:2:3 [1] NCCL INFO\nnode12\xff: [rank4]: x\n", None)
    assert bad.hosts == set()


def test_a_summary_cut_before_its_rank_line_is_read_from_the_carry() -> None:
    found = SummaryHosts()
    found.feed(SUMMARY[: SUMMARY.index(b"rank      : 5")])
    found.feed(b"  rank      : 5 (local_rank: 1)\n")
    assert found.by_rank == {5: "gpu-node-3"}


def test_buffers_without_any_host_are_skipped() -> None:
    found = SummaryHosts()
    found.feed(b"plain\n")
    found.feed(b"plain\n")
    found.feed(SUMMARY)
    assert found.by_rank[5] == "gpu-node-3"


def test_a_summary_at_the_very_start_of_a_job_is_read() -> None:
    found = SummaryHosts()
    found.feed(b"host : gpu-1\n  rank : 2 (local_rank: 0)\n")
    assert found.by_rank == {2: "gpu-1"}
    after_plain = SummaryHosts()
    after_plain.feed(b"plain\n")
    after_plain.feed(b"host : gpu-1\n  rank : 2 (local_rank: 0)\n")
    assert after_plain.by_rank == {2: "gpu-1"}
