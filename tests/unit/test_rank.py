"""Ranking and the first failure (`diagnosis/rank.py`), on evidence built by hand: which entry a
reader sees first, and which line and rank the report says failed first. Each rule is one test,
so a bug in it names itself."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nanopedia.diagnosis import elastic, flight
from nanopedia.diagnosis.rank import (
    COLLATERAL_FACTOR,
    WEIGHTS,
    Candidate,
    diagnose,
    entry_score,
    first_failure,
    rank_key,
)
from nanopedia.diagnosis.scan import EVIDENCE_CAP, LATE_LINES, Evidence, FileScan
from nanopedia.model import Indicates


def ev(
    entry: str = "a",
    line: int = 1,
    *,
    file: str = "job.log",
    rank: int | None = None,
    text: str = "",
    fingerprint: str = "fp",
    indicates: Indicates = "decisive",
    timestamp: str | None = None,
    consequence: bool = False,
    specificity: int = 0,
) -> Evidence:
    return Evidence(
        entry,
        f"Title {entry}",
        file,
        line,
        rank,
        text or f"line {line} of {entry}",
        fingerprint,
        indicates,
        timestamp,
        consequence,
        specificity,
    )


def scan(
    *evidence: Evidence, file: str = "job.log", roots: tuple[tuple[int, int], ...] = ()
) -> FileScan:
    return FileScan(file, tuple(evidence), {}, roots, 100, 1000)


def ids(*scans: FileScan) -> list[str]:
    return [c.id for c in diagnose(list(scans)).matches]


# Scores


def test_a_fingerprint_scores_its_weight_once_plus_a_tenth_per_extra_line() -> None:
    lines = [ev(line=n, text=f"error {n}") for n in range(1, 4)]
    assert entry_score(lines, set()) == pytest.approx(WEIGHTS["decisive"] * 1.2)


def test_extra_lines_add_at_most_half_again() -> None:
    lines = [ev(line=n, text=f"error {n}") for n in range(1, 20)]
    assert entry_score(lines, set()) == pytest.approx(WEIGHTS["decisive"] * 1.5)
    six = [ev(line=n, text=f"error {n}") for n in range(1, 7)]
    assert entry_score(six, set()) == pytest.approx(WEIGHTS["decisive"] * 1.5)
    five = [ev(line=n, text=f"error {n}") for n in range(1, 6)]
    assert entry_score(five, set()) == pytest.approx(WEIGHTS["decisive"] * 1.4)


def test_the_same_line_repeated_by_one_rank_counts_once() -> None:
    lines = [ev(line=n, rank=0, text="warning in a loop") for n in range(1, 30)]
    assert entry_score(lines, set()) == WEIGHTS["decisive"]
    other_rank = [*lines, ev(line=40, rank=1, text="warning in a loop")]
    assert entry_score(other_rank, set()) == pytest.approx(WEIGHTS["decisive"] * 1.1)


def test_distinct_fingerprints_add_up() -> None:
    lines = [ev(fingerprint="x"), ev(line=2, fingerprint="y", indicates="context")]
    assert entry_score(lines, set()) == WEIGHTS["decisive"] + WEIGHTS["context"]


def test_a_fingerprint_scores_its_strongest_line() -> None:
    lines = [ev(indicates="supporting"), ev(line=2, text="other", indicates="decisive")]
    assert entry_score(lines, set()) == pytest.approx(WEIGHTS["decisive"] * 1.1)


def test_collateral_evidence_weighs_a_tenth() -> None:
    line = replace(ev(), collateral=True)
    assert entry_score([line], set()) == WEIGHTS["decisive"] * COLLATERAL_FACTOR


def test_a_line_other_entries_match_too_counts_as_supporting_at_most() -> None:
    assert entry_score([ev()], {("job.log", 1)}) == WEIGHTS["supporting"]
    assert entry_score([ev(indicates="benign")], {("job.log", 1)}) == WEIGHTS["benign"]


# Order of the candidates


def test_an_entry_with_a_decisive_line_of_its_own_ranks_above_a_higher_score() -> None:
    own = ev("own", line=1)
    noisy = [ev("noisy", line=n, fingerprint=f"f{n}", indicates="supporting") for n in range(2, 9)]
    assert ids(scan(own, *noisy)) == ["own", "noisy"]


def test_collateral_only_evidence_ranks_last() -> None:
    cause = ev("cause", line=5, indicates="supporting")
    wrapper = ev("wrapper", line=1, consequence=True)
    found = diagnose([scan(wrapper, cause)])
    assert [c.id for c in found.matches] == ["cause", "wrapper"]
    assert [c.strength for c in found.matches] == [1, 0]
    assert found.matches[1].evidence[0].collateral


def test_consequence_lines_are_not_collateral_when_nothing_else_failed() -> None:
    wrapper = ev("wrapper", line=1, consequence=True)
    context = ev("other", line=2, indicates="context")
    found = diagnose([scan(wrapper, context)])
    assert [c.id for c in found.matches] == ["wrapper"]
    assert not found.matches[0].evidence[0].collateral
    assert found.matches[0].strength == 2


def test_benign_evidence_does_not_make_consequences_collateral() -> None:
    found = diagnose([scan(ev("w", consequence=True), ev("b", line=2, indicates="benign"))])
    assert not next(c for c in found.matches if c.id == "w").evidence[0].collateral


def test_an_entry_with_only_context_lines_is_no_candidate() -> None:
    assert ids(scan(ev("frames", indicates="context"), ev("real", line=2))) == ["real"]


def test_a_shared_line_placed_by_its_own_context_ranks_above_the_generic_entry() -> None:
    generic = [ev("generic", line=1, indicates="supporting")]
    generic += [ev("generic", line=n, text="repeat", rank=n) for n in range(10, 15)]
    shared_line = ev("fsdp", line=1, indicates="supporting", fingerprint="g")
    frames = ev("fsdp", line=2, indicates="context", fingerprint="frames")
    # generic also shares lines 10..14 with nobody: make them shared by a third entry
    thirds = [ev("third", line=n, text="repeat", rank=n, indicates="benign") for n in range(10, 15)]
    found = diagnose([scan(*generic, shared_line, frames, *thirds)])
    by_id = {c.id: c for c in found.matches}
    assert by_id["fsdp"].placed and not by_id["generic"].placed
    assert [c.id for c in found.matches][:2] == ["fsdp", "generic"]


def test_candidates_with_equal_scores_order_by_the_strongest_kind_of_line() -> None:
    a = Candidate("a", "A", 10.0, False, (ev("a", indicates="benign"),), 1)
    b = Candidate("b", "B", 10.0, False, (ev("b", indicates="supporting"),), 1)
    assert sorted([a, b], key=rank_key) == [b, a]


def test_then_by_the_most_specific_pattern_then_by_id() -> None:
    vague = Candidate("a", "A", 10.0, False, (ev("a", specificity=5),), 2)
    exact = Candidate("b", "B", 10.0, False, (ev("b", specificity=40),), 2)
    assert sorted([vague, exact], key=rank_key) == [exact, vague]
    twin = Candidate("c", "C", 10.0, False, (ev("c", specificity=40),), 2)
    assert sorted([twin, exact], key=rank_key) == [exact, twin]


def test_specificity_counts_only_among_the_strongest_lines() -> None:
    c = Candidate(
        "a",
        "A",
        1.0,
        False,
        (ev(specificity=3), ev(line=2, indicates="context", specificity=90)),
        2,
    )
    assert rank_key(c)[4] == -3


def test_a_candidate_is_possible_only_without_a_decisive_line_of_its_own() -> None:
    assert not Candidate("a", "A", 1.0, False, (ev(),), 2).possible
    assert Candidate("a", "A", 1.0, False, (ev(),), 1).possible


def test_a_candidate_is_benign_only_when_all_its_lines_are() -> None:
    found = diagnose([scan(ev("x", indicates="benign"), ev("y", line=2, indicates="benign"))])
    assert all(c.benign for c in found.matches)
    mixed = diagnose([scan(ev("x", indicates="benign"), ev("x", line=2, fingerprint="d"))])
    assert not mixed.matches[0].benign


def test_evidence_is_kept_in_file_then_line_order() -> None:
    first = scan(ev(line=9, file="a.log"), file="a.log")
    second = scan(ev(line=2, file="b.log"), ev(line=1, file="b.log", text="x"), file="b.log")
    found = diagnose([first, second])
    assert [(e.file, e.line) for e in found.matches[0].evidence] == [
        ("a.log", 9),
        ("b.log", 1),
        ("b.log", 2),
    ]


# The first failure


def test_timestamps_decide_the_first_failure_when_every_line_has_one() -> None:
    early_line = ev(line=2, timestamp="0710180035.000000000")
    early_time = ev(line=5, timestamp="0710180032.000000000")
    assert first_failure([early_line, early_time], {"job.log": 0}) == early_time


def test_untimed_lines_never_sort_before_timed_ones() -> None:
    """One untimed line and line order decides: an untimed line is not 'earliest'."""
    timed = ev(line=2, timestamp="0710180032.000000000")
    untimed = ev(line=5)
    assert first_failure([timed, untimed], {"job.log": 0}) == timed
    assert first_failure([untimed, timed], {"job.log": 0}) == timed


def test_line_order_runs_across_files_in_the_order_given() -> None:
    later_file = ev(line=1, file="b.log")
    earlier_file = ev(line=50, file="a.log")
    assert first_failure([later_file, earlier_file], {"a.log": 0, "b.log": 1}) == earlier_file


def test_equal_timestamps_fall_back_to_file_and_line() -> None:
    a, b = ev(line=7, timestamp="0101000000.0"), ev(line=3, timestamp="0101000000.0")
    assert first_failure([a, b], {"job.log": 0}) == b


def test_the_first_failure_is_the_earliest_decisive_line_not_a_consequence() -> None:
    consequence = ev("wrapper", line=1, rank=0, consequence=True)
    cause = ev("cause", line=8, rank=3)
    found = diagnose([scan(consequence, cause)])
    assert (found.initiating, found.initiating_rank) == (cause, 3)
    assert found.initiating_reason == "earliest decisive error (line order)"


def test_the_reason_says_timestamps_when_they_decided() -> None:
    found = diagnose([scan(ev(line=1, rank=1, timestamp="0101000000.0"))])
    assert found.initiating_reason == "earliest decisive error (timestamps)"


def test_a_first_failure_without_a_rank_takes_it_from_the_same_error_on_another_line() -> None:
    bare = ev(line=2, rank=None, text="what(): CUDA error")
    named = ev(line=9, rank=5, text="[rank5]: CUDA error")
    found = diagnose([scan(bare, named)])
    assert found.initiating == bare and found.initiating_rank == 5
    assert "its rank from line 9" in (found.initiating_reason or "")
    other = diagnose([scan(bare), scan(replace(named, file="r5.log"), file="r5.log")])
    assert "its rank from r5.log:9" in (other.initiating_reason or "")


def test_a_rank_is_not_borrowed_from_another_fingerprint() -> None:
    bare = ev(line=2, rank=None)
    other = ev(line=9, rank=5, fingerprint="else")
    found = diagnose([scan(bare, other)])
    assert found.initiating == bare and found.initiating_rank is None


def test_the_rank_behind_in_nccl_work_is_the_first_failure_of_a_pure_timeout() -> None:
    lines = [
        ev(line=1, rank=0, text="Last enqueued NCCL work: 120", indicates="supporting"),
        ev(line=2, rank=3, text="last enqueued work: 87", indicates="supporting"),
        ev(line=3, rank=1, text="Last enqueued NCCL work: 120", indicates="supporting"),
    ]
    found = diagnose([scan(*lines)])
    assert found.initiating_rank == 3
    assert found.initiating_reason == "lowest last enqueued NCCL work (the rank that fell behind)"


def test_equal_nccl_progress_falls_back_to_the_earliest_line() -> None:
    lines = [
        ev(line=4, rank=2, text="Last enqueued NCCL work: 7", indicates="supporting"),
        ev(line=6, rank=1, text="Last enqueued NCCL work: 7", indicates="supporting"),
    ]
    found = diagnose([scan(*lines)])
    assert found.initiating_rank == 2
    assert found.initiating_reason == "earliest line of the best candidate"


def test_no_candidate_no_first_failure() -> None:
    found = diagnose([scan()])
    assert (found.initiating, found.initiating_rank, found.initiating_reason) == (None, None, None)


# torchrun's Root Cause block and torchelastic error files


def test_the_first_root_cause_block_names_the_first_failing_rank() -> None:
    """torchrun prints a block per failed attempt: the first is the failure that started it."""
    supporting = ev(line=3, rank=5, indicates="supporting")
    found = diagnose([scan(supporting, roots=((20, 3), (60, 5)))])
    assert found.initiating_rank == 3 and found.root_cause_rank == 3
    assert found.initiating_reason == "torchrun Root Cause (first observed failure) block"
    across = diagnose([scan(roots=((9, 2),)), scan(supporting, file="b.log", roots=((1, 7),))])
    assert across.initiating_rank == 2


def test_the_root_cause_block_picks_its_ranks_line_as_the_first_failure() -> None:
    lines = [ev(line=3, rank=5, indicates="supporting"), ev(line=4, rank=3, indicates="supporting")]
    found = diagnose([scan(*lines, roots=((20, 3),))])
    assert found.initiating == lines[1]


def test_decisive_evidence_wins_over_the_root_cause_block_and_says_so() -> None:
    found = diagnose([scan(ev(line=2, rank=4), roots=((20, 1),))])
    assert found.initiating_rank == 4 and found.root_cause_rank == 1
    assert found.initiating_reason == (
        "earliest decisive error (line order); torchrun's Root Cause block names rank 1, "
        "the first failure its agent observed, but rank 4's error came earlier"
    )
    same = diagnose([scan(ev(line=2, rank=1), roots=((20, 1),))])
    assert same.initiating_reason == (
        "earliest decisive error (line order); torchrun's Root Cause block names the same rank"
    )


def error_file(rank: int, stamp: int | None, file: str | None = None) -> elastic.ErrorFile:
    name = file or f"attempt_0/{rank}/error.json"
    return elastic.ErrorFile(name, rank, 0, "RuntimeError: x", "RuntimeError: x", stamp)


def test_the_earliest_error_file_decides_the_first_failure() -> None:
    errors = [error_file(1, 1796483110), error_file(2, 1796483106), error_file(0, None)]
    evidence = ev(line=1, rank=2, file="attempt_0/2/error.json")
    found = diagnose([scan(evidence, file=evidence.file)], errors)
    assert found.initiating_rank == 2 and found.initiating == evidence
    assert found.initiating_reason == (
        "earliest torchelastic error file: attempt_0/2/error.json at 2026-12-05 15:05:06 UTC; "
        "next: rank 1 at 2026-12-05 15:05:10 UTC"
    )


def test_error_files_of_the_same_second_prefer_the_one_with_a_decisive_line() -> None:
    errors = [error_file(0, 1796483106), error_file(3, 1796483106)]
    evidence = ev(line=1, rank=3, file="attempt_0/3/error.json")
    found = diagnose([scan(evidence, file=evidence.file)], errors)
    assert found.initiating_rank == 3
    assert "(2 files of the same second; the one with a decisive line)" in (
        found.initiating_reason or ""
    )


def test_error_files_of_the_same_second_without_evidence_take_the_lowest_rank() -> None:
    errors = [error_file(4, 1796483106), error_file(1, 1796483106)]
    found = diagnose([scan()], errors)
    assert found.initiating_rank == 1 and found.initiating is None
    assert (found.initiating_reason or "").endswith("(2 files of the same second; the lowest rank)")


def test_error_files_without_timestamps_decide_nothing() -> None:
    found = diagnose([scan(ev(line=1, rank=6))], [error_file(2, None)])
    assert found.initiating_rank == 6


# Ranks that said nothing


def test_ranks_known_from_file_names_that_gave_no_evidence_are_silent() -> None:
    scans = [scan(ev(file="rank0.log", rank=0), file="rank0.log"), scan(file="rank1.log")]
    assert diagnose(scans).silent_ranks == (1,)


def test_a_launchers_rank_list_counts_once_some_line_names_its_rank() -> None:
    listed = FileScan("job.log", (ev(rank=0),), {}, (), 10, 10, (0, 1, 2))
    assert diagnose([listed]).silent_ranks == (1, 2)
    unnamed = FileScan("job.log", (ev(rank=None),), {}, (), 10, 10, (0, 1, 2))
    assert diagnose([unnamed]).silent_ranks == ()


def test_a_fingerprint_keeps_its_strongest_weight_whatever_the_order_of_its_lines() -> None:
    lines = [ev(indicates="decisive"), ev(line=2, text="other", indicates="supporting")]
    assert entry_score(lines, set()) == pytest.approx(WEIGHTS["decisive"] * 1.1)


def test_context_lines_alone_do_not_place_a_candidate() -> None:
    own = [ev("x", line=1, indicates="context"), ev("x", line=2, indicates="supporting")]
    assert not diagnose([scan(*own)]).matches[0].placed
    shared_context = [
        ev("x", line=1, indicates="context", fingerprint="c"),
        ev("x", line=3, indicates="supporting", fingerprint="s"),
        ev("y", line=1, indicates="context", fingerprint="c"),
        ev("y", line=4, indicates="supporting", fingerprint="t"),
    ]
    assert not any(c.placed for c in diagnose([scan(*shared_context)]).matches)


def test_a_root_cause_block_with_no_candidate_still_names_the_rank() -> None:
    found = diagnose([scan(roots=((4, 6),))])
    assert (found.initiating_rank, found.initiating) == (6, None)
    assert found.initiating_reason == "torchrun Root Cause (first observed failure) block"


def test_the_earliest_line_of_the_rank_furthest_behind_is_the_first_failure() -> None:
    lines = [
        ev(line=9, rank=2, text="Last enqueued NCCL work: 7", indicates="supporting"),
        ev(line=3, rank=5, text="Last enqueued NCCL work: 7", indicates="supporting"),
        ev(line=1, rank=0, text="Last enqueued NCCL work: 9", indicates="supporting"),
    ]
    found = diagnose([scan(*lines)])
    assert (found.initiating_rank, found.initiating) == (5, lines[1])


def test_same_second_error_files_prefer_a_rank_then_the_lowest_whatever_the_names() -> None:
    errors = [
        error_file(4, 1796483106, "a/4/error.json"),
        error_file(1, 1796483106, "z/1/error.json"),
    ]
    assert diagnose([scan()], errors).initiating_rank == 1
    zero = [
        error_file(1, 1796483106, "a/1/error.json"),
        error_file(0, 1796483106, "z/0/error.json"),
    ]
    assert diagnose([scan()], zero).initiating_rank == 0
    unranked = elastic.ErrorFile("a/error.json", None, None, "m", "m", 1796483106)
    assert (
        diagnose([scan()], [unranked, error_file(7, 1796483106, "z/7/error.json")]).initiating_rank
        == 7
    )


def test_the_reason_names_the_next_error_file_by_time_then_rank() -> None:
    errors = [
        error_file(3, 1796483106),
        error_file(2, 1796483115),
        error_file(5, 1796483110),
        error_file(1, 1796483110),
    ]
    found = diagnose([scan()], errors)
    assert found.initiating_reason == (
        "earliest torchelastic error file: attempt_0/3/error.json at 2026-12-05 15:05:06 UTC; "
        "next: rank 1 at 2026-12-05 15:05:10 UTC"
    )
    unranked = elastic.ErrorFile("b/error.json", None, None, "m", "m", 1796483107)
    reason = diagnose([scan()], [error_file(3, 1796483106), unranked]).initiating_reason
    assert reason == (
        "earliest torchelastic error file: attempt_0/3/error.json at 2026-12-05 15:05:06 UTC; "
        "next: rank ? at 2026-12-05 15:05:07 UTC"
    )


def test_the_reason_for_same_second_files_says_both_how_and_why() -> None:
    errors = [error_file(4, 1796483106), error_file(1, 1796483106)]
    assert diagnose([scan()], errors).initiating_reason == (
        "earliest torchelastic error file: attempt_0/1/error.json at 2026-12-05 15:05:06 UTC; "
        "next: rank 4 at 2026-12-05 15:05:06 UTC (2 files of the same second; the lowest rank)"
    )


def test_the_next_error_file_is_the_next_in_time_before_the_lowest_rank() -> None:
    errors = [error_file(3, 1796483106), error_file(0, 1796483115), error_file(2, 1796483110)]
    assert (diagnose([scan()], errors).initiating_reason or "").endswith(
        "next: rank 2 at 2026-12-05 15:05:10 UTC"
    )
    tie = [error_file(3, 1796483106), error_file(1, 1796483110), error_file(0, 1796483110)]
    assert (diagnose([scan()], tie).initiating_reason or "").endswith(
        "next: rank 0 at 2026-12-05 15:05:10 UTC"
    )


def test_the_reason_says_when_timestamps_past_the_evidence_cap_were_not_compared() -> None:
    timed = ev(line=1, rank=1, timestamp="0101000000.0")
    capped = replace(scan(timed), uncompared=True)
    assert diagnose([capped]).initiating_reason == (
        f"earliest decisive error (timestamps, among each error's first {EVIDENCE_CAP} lines and "
        f"{LATE_LINES:,} more: later decisive lines were not compared)"
    )
    untimed = replace(scan(ev(line=1, rank=1)), uncompared=True)
    assert diagnose([untimed]).initiating_reason == "earliest decisive error (line order)"


def test_a_late_decisive_line_can_be_the_first_failure() -> None:
    kept = ev(line=900, rank=1, timestamp="0101000009.0")
    late = ev(line=2000, rank=4, timestamp="0101000001.0")
    found = diagnose([replace(scan(kept), late=(late,))])
    assert (found.initiating, found.initiating_rank) == (late, 4)


def test_a_flight_recorder_finding_is_decisive_evidence_in_the_dump_of_its_first_rank() -> None:
    finding = flight.Finding(
        "behind", "pg0", 12, (3, 1), (0, 2), "ALLREDUCE", ("BROADCAST",), "nccl-timeout"
    )
    report = flight.Report((("dump0", 0), ("dump3", 3)), (finding,), ())
    found = diagnose([scan(file="job.log")], report=report, titles={"nccl-timeout": "NCCL"})
    [candidate] = found.matches
    [line] = candidate.evidence
    assert (line.entry, line.title, line.file, line.line, line.rank) == (
        "nccl-timeout",
        "NCCL",
        "dump3",
        0,
        3,
    )
    assert (line.text, line.fingerprint, line.indicates) == (
        finding.text,
        "flight-recorder",
        "decisive",
    )
    assert found.initiating == line and found.initiating_rank == 3
    elsewhere = flight.Report((("dump0", 0),), (finding,), ())
    [moved] = diagnose([scan()], report=elsewhere, titles={"nccl-timeout": "N"}).matches
    assert moved.evidence[0].file == "dump0"
    assert diagnose([scan()], report=report, titles={}).matches == ()


def test_findings_in_two_dumps_keep_the_order_the_dumps_were_given() -> None:
    first = flight.Finding("behind", "pg0", 1, (2,), (0,), "A", ("B",), "nccl-timeout")
    second = flight.Finding("mismatch", "pg0", 2, (1,), (0,), "A", ("C",), "nccl-timeout")
    report = flight.Report((("dump2", 2), ("dump1", 1)), (second, first), ())
    found = diagnose([scan()], report=report, titles={"nccl-timeout": "NCCL"})
    assert [e.file for e in found.matches[0].evidence] == ["dump2", "dump1"]
