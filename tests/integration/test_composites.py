"""Multi-rank composites built from the real excerpts: the rank that failed prints its real
error, the other ranks of the job (four at least) time out in the collective after it (NCCL
watchdog lines), one file per rank. Diagnosis must name the failure, not the timeouts, and the
rank it began on; a few are also buried after 100,000 lines of healthy training output."""

from __future__ import annotations

import io
import sys

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.diagnosis import scan
from nanopedia.diagnosis.rank import Diagnosis, diagnose

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import buried, log_bytes, real_cases  # noqa: E402

#: Entries whose own lines are the consequence, or the wrapper, of a failure elsewhere.
WRAPPERS = {
    "nccl-watchdog-timeout",
    "torchrun-child-failed",
    "torchrun-rendezvous-timeout",
    "nccl-remote-error",
}
CASES = [c for c in real_cases() if len(c.logs) == 1 and c.top and c.top not in WRAPPERS]
TIMEOUT = (
    "[rank{r}]:[E0501 10:31:09.118204331 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600015 milliseconds before timing "
    "out.\n"
)


@pytest.fixture(scope="module")
def matcher() -> scan.Matcher:
    return scan.Matcher(gathered_entries()[0].entries)


def composite(matcher: scan.Matcher, failing: int, excerpt: bytes, bury: int = 0) -> Diagnosis:
    scans = []
    for rank in sorted({0, 1, 2, 3, failing}):
        data = (buried(bury) if bury and rank == failing else b"") + (
            excerpt if rank == failing else TIMEOUT.format(r=rank).encode()
        )
        scans.append(scan.scan(io.BytesIO(data), f"logs/rank{rank}.log", matcher))
    return diagnose(scans)


def test_one_rank_fails_the_others_time_out(matcher) -> None:
    wrong = []
    for case in CASES:
        if case.benign:  # normal-in-moderation lines take no rank down
            continue
        failing = case.rank if case.rank is not None else 2
        result = composite(matcher, failing, log_bytes(case.logs[0]))
        got = (result.matches[0].id if result.matches else None, result.initiating_rank)
        # An excerpt with no known first rank may name its own ranks; it must still not be
        # blamed on a rank that only timed out.
        rank_ok = got[1] == failing or (case.rank is None and got[1] not in {0, 1, 3} - {failing})
        if got[0] != case.top or not rank_ok:
            wrong.append(f"{case.name}: {got} instead of {(case.top, failing)}")
    assert len(CASES) >= 80 and wrong == []


#: Excerpts with supporting lines only (kernel lines that name no rank): the first failure then
#: falls back to the best candidate's earliest line, which can be another rank's timeout when the
#: entry counts timeouts as its evidence too. A known limit of the rule, kept visible here.
NO_RANK_OF_ITS_OWN = {"real/nccl-p2p-hang--1.log", "real/nccl-p2p-hang--2.log"}


def _buried_case(case):  # noqa: ANN001, ANN202
    if case.name not in NO_RANK_OF_ITS_OWN:
        return case
    reason = "supporting lines only: the earliest line of the best candidate is a timeout"
    return pytest.param(case, marks=pytest.mark.xfail(reason=reason, strict=True))


#: One case in twelve, benign excerpts left out as in the test above (normal-in-moderation lines
#: take no rank down: beside four ranks' timeouts the timeouts are the failure).
BURIED = [_buried_case(c) for c in [c for c in CASES if not c.benign][::12]]


@pytest.mark.parametrize("case", BURIED, ids=lambda c: getattr(c, "name", None))
def test_a_composite_buried_after_100000_healthy_lines(matcher, case) -> None:
    failing = case.rank if case.rank is not None else 1
    result = composite(matcher, failing, log_bytes(case.logs[0]), bury=100_000)
    assert result.matches[0].id == case.top
    if case.rank is not None:
        assert result.initiating_rank == failing
    else:  # an excerpt may name its own ranks; never one that only timed out
        assert result.initiating_rank not in {0, 2, 3}
