"""`nanopedia.diagnosis.scan`: decisive lines past the evidence cap still decide the first
failure (tests/cases/first_failure.json, which tests/js/first_failure.test.js runs through the
browser worker), in bounded memory, one pass or in stretches alike; a line's text and timestamp
are read once however many fingerprints match it."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import elastic, logs, rank, scan
from nanopedia.diagnosis.catalogue import EntryView, FingerprintView
from nanopedia.model import Entry, Fingerprint

CASES = json.loads((ROOT / "tests" / "cases" / "first_failure.json").read_text())["cases"]
ERROR = "RuntimeError: expected scalar type BFloat16 but found Float"


def case_log(case: dict[str, Any]) -> bytes:
    """The log a case describes (its `about` says how)."""
    times = {int(r): ms for r, ms in case.get("times", {}).items()}
    lines = []
    for r in range(case["ranks"]):
        ms = times.get(r, 1000 + r)
        lines.append(f"[rank{r}]: 2024-05-01 10:00:{ms // 1000:02d}.{ms % 1000:03d} {ERROR}")
    return ("\n".join(lines + case.get("after", [])) + "\n").encode()


@pytest.fixture(scope="module")
def alpha() -> Entry:
    source, problems = load_entry(FIXTURES / "corpus" / "alpha-failure.yaml")
    assert source is not None and not problems
    return source.entry


@pytest.fixture
def matcher(alpha: Entry) -> scan.Matcher:
    """Built for each test (in a millisecond), so that each test exercises `Matcher` too."""
    return scan.Matcher([alpha])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_first_failure_is_the_earliest_of_every_rank_that_printed_the_error(
    case: dict[str, Any], matcher: scan.Matcher
) -> None:
    found = scan.scan(io.BytesIO(case_log(case)), "combined.log", matcher)
    result = rank.diagnose([found])
    assert result.initiating is not None
    got = (result.initiating_rank, result.initiating.line, result.initiating_reason)
    assert got == (case["rank"], case["line"], case["reason"])
    assert len(found.evidence) == scan.EVIDENCE_CAP  # what is shown stays capped


@pytest.mark.parametrize(
    "case", [c for c in CASES if "not compared" not in c["reason"]], ids=lambda c: c["name"]
)
def test_stretches_keep_the_late_lines_one_pass_keeps(
    case: dict[str, Any], matcher: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain log cut into stretches (each with fewer than `EVIDENCE_CAP` lines) gives the
    scan of one pass: the lines past the cap of the whole log are those past it in the merge."""
    log = tmp_path / "combined.log"
    log.write_bytes(case_log(case))
    one = scan.scan(io.BytesIO(log.read_bytes()), "combined.log", matcher)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 2000)
    assert scan.scan_file(str(log), matcher, jobs=1, name="combined.log") == one


def test_lines_kept_past_the_cap_do_not_grow_with_the_ranks(matcher: scan.Matcher) -> None:
    """Of 4,096 ranks' lines past the cap, the earliest and the earliest naming a rank are
    kept: two lines, not one per rank."""
    found = scan.scan(io.BytesIO(case_log(CASES[1])), "combined.log", matcher)
    assert [(e.line, e.rank) for e in found.late] == [(778, 777)]
    assert not found.uncompared


def test_a_line_is_read_once_however_many_fingerprints_match_it(
    alpha: Entry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review case D03 (lines holding every fingerprint's example): each evidence line's text
    and timestamp were worked out again for each fingerprint, 619 times a line."""
    fingerprints = [
        Fingerprint(
            id=f"same-{i}",
            pattern="expected scalar type",
            indicates="decisive" if i % 2 else "supporting",
            must_match=["expected scalar type"],
            must_not_match=["y"],
        )
        for i in range(6)
    ]
    many = scan.Matcher([alpha.model_copy(update={"fingerprints": fingerprints})])
    calls: list[str] = []

    def counted(text: str) -> str | None:
        calls.append(text)
        return None

    monkeypatch.setattr(scan, "timestamp", counted)
    log = case_log({"ranks": 80})
    found = scan.scan(io.BytesIO(log), "combined.log", many)
    assert len(found.evidence) == 6 * scan.EVIDENCE_CAP and len(calls) == 80


# --- one log's evidence, line by line ------------------------------------------------------------


def _fp(
    ident: str,
    pattern: str,
    indicates: str = "decisive",
    collateral: bool = False,
    specificity: int = 7,
) -> FingerprintView:
    return FingerprintView(
        ident,
        pattern,
        pattern,
        False,
        indicates,
        collateral,
        specificity,
        None,  # type: ignore[arg-type]
    )


def _entry(ident: str, *fps: FingerprintView) -> EntryView:
    return EntryView(ident, f"Title of {ident}", fps, (), ())


@pytest.fixture
def many() -> scan.Matcher:
    """Entries given out of id order, fingerprints of every kind (built for each test)."""
    return scan.Matcher(
        [
            _entry(
                "zeta",
                _fp("boom", "RuntimeError: boom", specificity=18),
                _fp("warn", "NCCL WARN", "supporting"),
                _fp("later", "Killed", "decisive", collateral=True),
            ),
            _entry(
                "alpha", _fp("oom", "CUDA out of memory", "decisive"), _fp("ctx", "step", "context")
            ),
        ]
    )


def _scan(data: bytes, matcher: scan.Matcher, name: str = "job.log", **kw: Any) -> scan.FileScan:
    return scan.scan(io.BytesIO(data), name, matcher, **kw)


def test_the_matcher_orders_probes_by_entry_and_knows_the_decisive_ones(
    many: scan.Matcher,
) -> None:
    assert [(p.entry_id, p.fingerprint.id) for p in many.probes] == [
        ("alpha", "oom"),
        ("alpha", "ctx"),
        ("zeta", "boom"),
        ("zeta", "warn"),
        ("zeta", "later"),
    ]
    assert [p.title for p in many.probes] == ["Title of alpha"] * 2 + ["Title of zeta"] * 3
    assert many.decisive == [True, False, True, False, False]  # collateral is not decisive
    assert many.index[("zeta", "warn")] == 3 and many.root_index == 5
    assert many.specificity == [7, 7, 18, 7, 7]
    assert (
        len(many.regexes) == 8 and [r.pattern for r in many.regexes][2] == "(?m)RuntimeError: boom"
    )


def test_an_evidence_line_says_where_it_is_and_what_it_is(many: scan.Matcher) -> None:
    data = b"start\n2024-05-01 10:00:01.250 [rank3]:   RuntimeError: boom   \n  Killed\n"
    found = _scan(data, many, "node/job.log")
    boom, killed = found.evidence
    assert boom == scan.Evidence(
        entry="zeta",
        title="Title of zeta",
        file="node/job.log",
        line=2,
        rank=3,
        text="2024-05-01 10:00:01.250 [rank3]:   RuntimeError: boom",
        fingerprint="boom",
        indicates="decisive",
        timestamp="0501100001.250000000",
        consequence=False,
        specificity=18,
        span=(35, 53),
    )
    assert (killed.line, killed.text, killed.consequence, killed.span) == (
        3,
        "Killed",
        True,
        (0, 6),
    )
    assert killed.timestamp == "0501100001.250000000"  # the nearest earlier line's
    assert killed.rank is None
    assert found.counts == {2: 1, 4: 1}
    assert (found.lines, found.bytes, found.file) == (3, len(data), "node/job.log")
    assert found.root_ranks == () and found.ranks == () and not found.open_at_deadline


def test_the_span_is_counted_in_characters_after_the_stripped_indent(many: scan.Matcher) -> None:
    found = _scan("  ééé RuntimeError: boom ü\n".encode(), many)
    (ev,) = found.evidence
    assert ev.text == "ééé RuntimeError: boom ü"
    assert ev.text[ev.span[0] : ev.span[1]] == "RuntimeError: boom"


def test_the_span_of_a_match_past_the_kept_text_is_at_its_end(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "TEXT_CHARS", 10)
    (ev,) = _scan(b"x" * 20 + b" RuntimeError: boom\n", many).evidence
    assert ev.text == "x" * 10 and ev.span == (10, 10)
    (ev,) = _scan(b"xxxx RuntimeError: boom\n", many).evidence
    assert ev.text == "xxxx Runti" and ev.span == (5, 10)


def test_a_long_line_is_kept_to_its_first_characters(many: scan.Matcher) -> None:
    (ev,) = _scan(b"RuntimeError: boom " + b"y" * 5000 + b"\n", many).evidence
    assert len(ev.text) == scan.TEXT_CHARS == 2000 and ev.span == (0, 18)


@pytest.mark.parametrize("size", [8, 30, 64, 1 << 20])
def test_line_numbers_count_every_line_in_every_buffer(many: scan.Matcher, size: int) -> None:
    lines = [b"ok %d" % i for i in range(40)]
    lines[4] = b"RuntimeError: boom"
    lines[17] = b"NCCL WARN x RuntimeError: boom"  # two fingerprints on one line
    lines[38] = b"CUDA out of memory"
    data = b"\n".join(lines) + b"\n\n"
    found = _scan(data, many, buffer_bytes=size)
    got = [(e.fingerprint, e.line) for e in found.evidence]
    assert sorted(got, key=lambda g: g[1]) == got
    assert sorted(got) == sorted([("boom", 5), ("boom", 18), ("warn", 18), ("oom", 39)])
    assert found.lines == 41 and found.bytes == len(data)


def test_a_fingerprint_counts_a_line_once_however_often_it_matches_it(many: scan.Matcher) -> None:
    found = _scan(b"RuntimeError: boom RuntimeError: boom\nRuntimeError: boom\n", many)
    assert [e.line for e in found.evidence] == [1, 2] and found.counts == {2: 2}


def test_a_supporting_fingerprint_stops_at_the_cap_and_says_so(many: scan.Matcher) -> None:
    data = b"NCCL WARN a\n" * 80 + b"RuntimeError: boom\n"
    found = _scan(data, many, buffer_bytes=64)
    warn = [e for e in found.evidence if e.fingerprint == "warn"]
    assert len(warn) == scan.EVIDENCE_CAP and warn[-1].line == scan.EVIDENCE_CAP
    assert found.counts[3] == scan.EVIDENCE_CAP and found.late == ()
    assert [e.line for e in found.evidence if e.fingerprint == "boom"] == [81]
    once = _scan(data, many)  # in one buffer too
    assert [e for e in once.evidence if e.fingerprint == "warn"] == warn


def test_decisive_lines_past_the_cap_are_kept_late_in_bounded_number(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "LATE_LINES", 5)
    data = b"".join(b"RuntimeError: boom %d\n" % i for i in range(55))  # 5 past the cap
    found = _scan(data, many)
    assert len(found.evidence) == scan.EVIDENCE_CAP and found.counts == {2: scan.EVIDENCE_CAP}
    assert [e.line for e in found.late] == [51] and not found.uncompared
    more = _scan(data + b"[rank2]: RuntimeError: boom\n", many)  # line 56: not compared
    assert [(e.line, e.rank) for e in more.late] == [(51, None), (53, 2)] and more.uncompared
    again = _scan(data + b"[rank2]: RuntimeError: boom\n", many, buffer_bytes=200)
    assert [e.line for e in again.late] == [51] and again.uncompared
    assert not _scan(data, many, buffer_bytes=200).uncompared


def test_late_lines_keep_the_earliest_and_the_earliest_that_names_its_rank(
    many: scan.Matcher,
) -> None:
    filler = b"2024-05-01 10:00:09 epoch 2\n" * 4  # no rank within three lines
    data = (
        b"RuntimeError: boom\n" * 50
        + b"[rank4]: 2024-05-01 10:00:04 RuntimeError: boom\n"
        + b"[rank5]: 2024-05-01 10:00:03 RuntimeError: boom\n"
        + filler
        + b"2024-05-01 10:00:02 RuntimeError: boom\n"
        + b"RuntimeError: boom\n"  # the time of the line before: later in line order
        + filler
    )
    for size in (100, 1 << 20):
        found = _scan(data, many, buffer_bytes=size)
        assert [(e.line, e.rank) for e in found.late] == [(52, 5), (57, None)]
    untimed = b"RuntimeError: boom\n" * 50 + b"[rank4]: RuntimeError: boom\n" * 2
    assert [(e.line, e.rank) for e in _scan(untimed, many).late] == [(51, 4)]


def test_a_traceback_line_takes_the_time_of_a_line_some_buffers_before(
    many: scan.Matcher,
) -> None:
    data = b"2024-05-01 10:00:07 epoch 1\n" + b"  frame\n" * 3 + b"RuntimeError: boom\n"
    for size in (8, 40, 1 << 20):
        (ev,) = _scan(data, many, buffer_bytes=size).evidence
        assert ev.timestamp == "0501100007.000000000", size


def test_a_line_with_no_time_before_it_has_none(many: scan.Matcher) -> None:
    (ev,) = _scan(b"RuntimeError: boom\n2024-05-01 10:00:07 x\n", many).evidence
    assert ev.timestamp is None


def test_progress_is_told_the_bytes_read_after_each_buffer(many: scan.Matcher) -> None:
    told: list[int] = []
    data = b"".join(b"line %d\n" % i for i in range(30))
    _scan(data, many, progress=told.append, buffer_bytes=64)
    assert told == sorted(told) and told[-1] == len(data) and len(told) > 3


def test_the_deadline_names_the_slowest_fingerprint(many: scan.Matcher) -> None:
    with pytest.raises(scan.DiagnoseTimeout) as err:
        _scan(b"RuntimeError: boom\n" * 3, many, deadline=0.0)
    assert err.value.file == "job.log" and err.value.slowest in many.probes
    assert "while reading job.log, the slowest fingerprint on the last buffer was '" in str(
        err.value
    )
    copy = pickle.loads(pickle.dumps(err.value))  # raised in a worker, re-raised in the CLI
    assert (copy.file, copy.slowest, str(copy)) == ("job.log", err.value.slowest, str(err.value))
    assert str(scan.DiagnoseTimeout(None, "x.log")) == (
        "while reading x.log, the slowest fingerprint on the last buffer was none found"
    )
    assert _scan(b"x\n", many, deadline=time.monotonic() + 60).lines == 1


def test_the_slowest_probe_is_the_one_that_takes_longest(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(float(t) for t in [0, 1, 1, 5, 5, 6, 6, 7, 7, 8])
    monkeypatch.setattr(scan.time, "perf_counter", lambda: next(clock))
    assert many.slowest(b"x") == many.probes[1]
    monkeypatch.setattr(scan.time, "perf_counter", lambda: 0.0)
    assert many.slowest(b"x") == many.probes[0]  # a tie: the first
    assert scan.Matcher([]).slowest(b"x") is None


def test_a_pipe_silent_at_the_deadline_ends_the_log_there(many: scan.Matcher) -> None:
    class Silent(io.BytesIO):
        timed_out = True

    found = scan.scan(Silent(b"RuntimeError: boom\n"), "-", many, deadline=0.0)  # type: ignore[arg-type]
    assert found.open_at_deadline and [e.line for e in found.evidence] == [1]


# --- torchrun's Root Cause block and rank list -----------------------------------------------


ROOT = (
    "Root Cause (first observed failure):\n[0]:\n  time : x\n  rank      : {rank} (local_rank: 0)\n"
)


@pytest.mark.parametrize(
    "text, pairs",
    [
        (ROOT.format(rank=3), [(1, 3)]),
        ("x\n" * 3 + ROOT.format(rank=12), [(4, 12)]),
        (ROOT.format(rank=3) + "y\n" * 20 + ROOT.format(rank=5), [(1, 3), (25, 5)]),
        (
            "Root Cause (first observed failure):\n" + "z\n" * 7 + "  rank : 9 (local_rank: 1)\n",
            [(1, 9)],
        ),
        ("Root Cause (first observed failure):\n" + "z\n" * 8 + "  rank : 9 (local_rank: 1)\n", []),
        ("  rank : 9 (local_rank: 1)\nRoot Cause (first observed failure):\n", []),
        ("Root Cause (first observed failure):\n  rank : 1234567 (local_rank: 1)\n", []),
    ],
    ids=[
        "first line",
        "later",
        "two blocks",
        "rank 8 lines on",
        "rank 9 lines on",
        "rank before",
        "7 digits",
    ],
)
def test_a_root_cause_block_names_the_rank_below_its_heading(
    many: scan.Matcher, text: str, pairs: list[tuple[int, int]]
) -> None:
    for size in (16, 1 << 20):
        found = _scan(text.encode(), many, buffer_bytes=size)
        assert list(found.root_ranks) == pairs
        assert found.counts == {} and found.evidence == ()  # the block is no fingerprint's


def test_a_rank_line_far_from_any_heading_is_not_kept(many: scan.Matcher) -> None:
    text = "x\n" * 10 + "  rank : 9 (local_rank: 1)\n" + "Root Cause (first observed failure):\n"
    part = scan._scan_part(scan.buffers(io.BytesIO(text.encode())), "j", many, None, None)
    assert part.rank_lines == [] and part.roots == [12]
    early = "  rank : 9 (local_rank: 1)\n"  # at a stretch's start: its heading may be before
    part = scan._scan_part(scan.buffers(io.BytesIO(early.encode())), "j", many, None, None)
    assert part.rank_lines == [(1, 9)]


@pytest.mark.parametrize(
    "roots, rank_lines, pairs",
    [
        ([5], [(5, 1), (6, 2)], [(5, 2)]),
        ([5], [(13, 2)], [(5, 2)]),
        ([5], [(14, 2)], []),
        ([5, 6], [(7, 3)], [(5, 3), (6, 3)]),
        ([5, 30], [(7, 3), (31, 4)], [(5, 3), (30, 4)]),
        ([], [(7, 3)], []),
        ([5], [], []),
        ([20], [(1, 1), (2, 2), (3, 3), (21, 4)], [(20, 4)]),  # rank lines of earlier blocks
    ],
)
def test_pair_roots(
    roots: list[int], rank_lines: list[tuple[int, int]], pairs: list[tuple[int, int]]
) -> None:
    assert list(scan.pair_roots(roots, rank_lines)) == pairs


@pytest.mark.parametrize(
    "line, ranks",
    [
        ("Rendezvous complete for workers. global_ranks=[0, 1, 2, 3]", (0, 1, 2, 3)),
        ("global_ranks=[7,5]\nglobal_ranks=[5, 6]", (5, 6, 7)),
        ("global_ranks=[1, 1234567, 3]", (1, 3)),
        ("global_ranks=[123456]", (123456,)),
        ("xglobal_ranks=[1]", ()),
        ("global_ranks=[]", ()),
    ],
)
def test_the_launchers_rank_list_names_the_ranks_of_the_log(
    many: scan.Matcher, line: str, ranks: tuple[int, ...]
) -> None:
    assert _scan(line.encode() + b"\n", many).ranks == ranks


def test_the_rank_list_is_bounded(many: scan.Matcher, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "MAX_RANKS", 3)
    assert _scan(b"global_ranks=[9, 8, 7, 6, 5]\n", many).ranks == (7, 8, 9)
    assert _scan(b"global_ranks=[9, 8]\nglobal_ranks=[1, 2]\n", many).ranks == (1, 2, 8)


# --- error files, files, stretches -------------------------------------------------------------


def test_an_error_files_lines_take_its_rank_and_time(many: scan.Matcher) -> None:
    error = elastic.ErrorFile(
        file="attempt_0/3/error.json",
        rank=3,
        attempt=0,
        message="RuntimeError: boom",
        traceback='[rank5]: RuntimeError: boom\n  File "x"\n  a\n  b\nRuntimeError: boom\n',
        timestamp=1714557600,
    )
    found = scan.scan_error_file(error, many)
    assert [(e.file, e.line, e.rank, e.timestamp) for e in found.evidence] == [
        ("attempt_0/3/error.json", 1, 5, "0501100000.000000000"),
        ("attempt_0/3/error.json", 5, 3, "0501100000.000000000"),  # the folder's rank
    ]
    untimed = replace(error, timestamp=None, traceback="2024-05-01 10:00:09 RuntimeError: boom")
    (ev,) = scan.scan_error_file(untimed, many).evidence
    assert ev.timestamp == "0501100009.000000000"  # the line's own, without the file's


@pytest.mark.parametrize("packed", [False, True])
def test_a_file_is_scanned_as_a_stream_of_its_text(
    many: scan.Matcher, tmp_path: Path, packed: bool
) -> None:
    data = b"ok\n" * 5 + b"RuntimeError: boom\n" + b"ok\n" * 5
    path = tmp_path / "job.log"
    path.write_bytes(gzip.compress(data) if packed else data)
    told: list[int] = []
    found = scan.scan_file(str(path), many, progress=told.append, name="shown.log")
    assert found == _scan(data, many, name="shown.log")
    assert told[-1] == path.stat().st_size
    assert scan.scan_file(str(path), many).file == str(path)


def test_standard_input_is_scanned_without_progress(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"RuntimeError: boom\n")))
    told: list[int] = []
    found = scan.scan_file("-", many, progress=told.append, name="<stdin>")
    assert [(e.file, e.line) for e in found.evidence] == [("<stdin>", 1)] and told == []


def test_stretches_give_the_answer_and_progress_of_one_pass(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [b"2024-05-01 10:00:%02d iter %d" % (i % 60, i) for i in range(400)]
    for at in (3, 120, 121, 250, 399):
        lines[at] = b"[rank%d]: RuntimeError: boom" % at
    lines[200] = b"  " + ROOT.format(rank=7).replace("\n", "\n  ").encode()
    lines[1] = b"global_ranks=[0, 1]"
    data = b"\n".join(lines) + b"\nglobal_ranks=[3, 4]\n"
    path = tmp_path / "job.log"
    path.write_bytes(data)
    one = _scan(data, many, name="job.log")
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 1500)
    told: list[int] = []
    many_parts = scan.scan_file(str(path), many, progress=told.append, name="job.log")
    assert many_parts == one and one.root_ranks == ((201, 7),) and one.ranks == (0, 1, 3, 4)
    assert one.counts == {2: 5}
    assert told == sorted(told) and told[-1] == len(data) and len(told) > 5
    assert one.evidence[1].timestamp == "0501100059.000000000"


def test_a_stretch_merge_keeps_each_fingerprints_first_lines(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"".join(
        b"[rank%d]: NCCL WARN %d\n[rank%d]: RuntimeError: boom\n" % (i % 8, i, i % 8)
        for i in range(120)
    )
    path = tmp_path / "job.log"
    path.write_bytes(data)
    one = _scan(data, many, name="job.log")
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 700)
    assert scan.scan_file(str(path), many, name="job.log") == one
    assert len(one.evidence) == 2 * scan.EVIDENCE_CAP and one.late


def test_an_untimed_late_line_comes_before_timed_ones_as_in_the_first_failure(
    many: scan.Matcher,
) -> None:
    """`rank.first_failure` puts a line without a timestamp first within one log: so does what
    is kept past the cap, whichever of them comes first in the log."""
    far = b"".join(b"chatter %d %s\n" % (i, b"y" * 100) for i in range(170))  # > 16 KiB
    data = (
        b"RuntimeError: boom\n" * 50
        + b"[rank1]: 2024-05-01 10:00:01 RuntimeError: boom\n"
        + far
        + b"[rank2]: RuntimeError: boom\n"  # no time within the window before it
    )
    (late,) = _scan(data, many).late
    assert (late.line, late.rank, late.timestamp) == (222, 2, None)


@pytest.mark.parametrize("filler", [0, 20_000], ids=["at the start", "past the window"])
def test_a_stretch_takes_the_time_of_the_line_before_it_and_not_of_the_files_end(
    many: scan.Matcher, tmp_path: Path, filler: int
) -> None:
    data = b"x\n" * filler + (
        b"2024-05-01 10:00:07 epoch 1\nRuntimeError: boom\n2024-05-01 10:00:09 epoch 2\n"
    )
    path = tmp_path / "job.log"
    path.write_bytes(data)
    start = data.index(b"Runtime")
    end = data.index(b"2024", start)
    part = scan._scan_segment(str(path), "job.log", start, end, None, many)
    assert [(e.line, e.timestamp) for e in part.evidence] == [(1, "0501100007.000000000")]
    first = scan._scan_segment(str(path), "job.log", 0, end, None, many)
    assert [e.timestamp for e in first.evidence] == ["0501100007.000000000"]
    with pytest.raises(scan.DiagnoseTimeout):
        scan._scan_segment(str(path), "job.log", start, end, 0.0, many)


def test_an_error_file_with_text_python_cannot_encode_is_scanned(many: scan.Matcher) -> None:
    """JSON may hold a lone surrogate (`\\ud800`): the traceback is still read."""
    error = elastic.ErrorFile(
        file="0/error.json",
        rank=0,
        attempt=0,
        message="",
        traceback="\ud800 RuntimeError: boom\n",
        timestamp=None,
    )
    (ev,) = scan.scan_error_file(error, many).evidence
    assert ev.text == "? RuntimeError: boom" and ev.rank == 0


def test_an_error_files_late_lines_take_its_rank_and_time_too(many: scan.Matcher) -> None:
    error = elastic.ErrorFile(
        file="attempt_0/3/error.json",
        rank=3,
        attempt=0,
        message="",
        traceback="RuntimeError: boom\n" * 52,
        timestamp=1714557600,
    )
    found = scan.scan_error_file(error, many)
    assert [(e.line, e.rank, e.timestamp) for e in found.late] == [(51, 3, "0501100000.000000000")]
    with pytest.raises(scan.DiagnoseTimeout):
        scan.scan_error_file(error, many, deadline=0.0)


def test_a_workers_stretch_read_from_a_memory_map_is_the_stretch_streamed(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a pool worker scans (`_pool_segment`, run here in this process) equals what the
    CLI's own process streams of the same bytes."""
    data = b"2024-05-01 10:00:07 epoch 1\n" + b"[rank3]: RuntimeError: boom\n" * 3 + b"end\n"
    path = tmp_path / "job.log"
    path.write_bytes(data)
    start = data.index(b"[rank3]")
    monkeypatch.setattr(scan, "_POOL_MATCHER", many)
    mapped = scan._pool_segment((str(path), "job.log", start, len(data), None))
    assert mapped == scan._scan_segment(str(path), "job.log", start, len(data), None, many)
    assert [(e.line, e.rank, e.timestamp) for e in mapped.evidence] == [
        (n, 3, "0501100007.000000000") for n in (1, 2, 3)
    ]


def test_the_usable_entries_of_a_folder_are_those_that_load(tmp_path: Path) -> None:
    root = tmp_path / "entries"
    root.mkdir()
    (root / "alpha-failure.yaml").write_bytes(
        (FIXTURES / "corpus" / "alpha-failure.yaml").read_bytes()
    )
    (root / "broken-entry.yaml").write_text("id: broken-entry\ntitle: [unclosed\n")
    entries, problems = scan.usable_entries(root)
    assert [e.id for e in entries] == ["alpha-failure"]
    assert [(Path(p.location.path).name, p.code) for p in problems] == [
        ("broken-entry.yaml", "E002")
    ]


def _stretched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    data = b"".join(b"2024-05-01 10:00:%02d iter %d\n" % (i % 60, i) for i in range(200))
    data += b"[rank2]: RuntimeError: boom\n" + data
    path = tmp_path / "job.log"
    path.write_bytes(data)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", -(-len(data) // 3))  # three stretches
    return path, data


def test_a_file_is_read_in_this_process_unless_jobs_are_asked_for(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import concurrent.futures

    path, data = _stretched(tmp_path, monkeypatch)

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("a process pool was started")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refused)
    found = scan.scan_file(str(path), many, jobs=1)
    assert found == scan.scan_file(str(path), many) == _scan(data, many, name=str(path))
    with pytest.raises(scan.DiagnoseTimeout):  # the deadline holds for each stretch
        scan.scan_file(str(path), many, jobs=1, deadline=0.0)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", len(data))  # one stretch: no pool for it
    assert scan.scan_file(str(path), many, jobs=8) == found


def test_jobs_start_at_most_one_forked_process_per_stretch(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import concurrent.futures

    path, data = _stretched(tmp_path, monkeypatch)
    started: list[tuple[object, object]] = []
    real = concurrent.futures.ProcessPoolExecutor

    def recorded(workers: object, context: object) -> object:
        started.append((workers, context.get_start_method()))  # type: ignore[attr-defined]
        return real(workers, context)  # type: ignore[arg-type]

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", recorded)
    told: list[int] = []
    found = scan.scan_file(str(path), many, jobs=8, progress=told.append)
    assert found == _scan(data, many, name=str(path))
    assert started == [(3, "fork")] and told[-1] == len(data) and len(told) == 3
    assert scan.scan_file(str(path), many, jobs=2) == found
    assert started[1:] == [(2, "fork")]


def _dies(work: object) -> None:
    os._exit(3)  # a worker killed (SIGBUS on a file cut short, the OOM killer)


def test_a_worker_that_dies_is_a_read_error_not_a_hang(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _stretched(tmp_path, monkeypatch)
    monkeypatch.setattr(scan, "_pool_segment", _dies)
    with pytest.raises(OSError) as err:
        scan.scan_file(str(path), many, jobs=2)
    assert str(err.value) == "a process reading it died (was it cut short while it was read?)"


def test_a_fifo_is_scanned_like_a_pipe_until_its_deadline(
    many: scan.Matcher, tmp_path: Path
) -> None:
    fifo = tmp_path / "live.log"
    os.mkfifo(fifo)
    done = threading.Event()

    def write() -> None:  # `<(kubectl logs -f)`: writes, then stays open and silent
        with open(fifo, "wb") as writer:
            writer.write(b"RuntimeError: boom\n")
            writer.flush()
            done.wait(10)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        started = time.monotonic()
        found = scan.scan_file(str(fifo), many, deadline=time.monotonic() + 0.5, name="live")
        assert time.monotonic() - started < 5
    finally:
        done.set()
        writer.join()
    assert found.open_at_deadline and [e.line for e in found.evidence] == [1]


def test_a_gzip_log_past_the_deadline_stops_with_the_slowest_pattern(
    many: scan.Matcher, tmp_path: Path
) -> None:
    path = tmp_path / "job.log.gz"
    path.write_bytes(gzip.compress(b"RuntimeError: boom\n"))
    with pytest.raises(scan.DiagnoseTimeout):
        scan.scan_file(str(path), many, deadline=0.0)


def test_late_lines_of_a_later_stretch_are_numbered_in_the_whole_file(
    many: scan.Matcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stretch past the first with more than `EVIDENCE_CAP` decisive lines of its own: what
    it keeps past its cap is numbered from the file's start, as one pass numbers it."""
    data = b"iter\n" * 400 + b"".join(
        b"[rank%d]: RuntimeError: boom\n" % (i % 7) for i in range(120)
    )
    path = tmp_path / "job.log"
    path.write_bytes(data)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 2000)  # the first stretch holds no evidence
    one = _scan(data, many, name="job.log")
    assert scan.scan_file(str(path), many, name="job.log") == one
    assert [(e.line, e.rank) for e in one.late] == [(451, 1)]


def test_a_file_named_for_a_rank_gives_its_lines_that_rank(many: scan.Matcher) -> None:
    found = _scan(b"RuntimeError: boom\n[rank5]: RuntimeError: boom\n", many, "logs/rank3.log")
    assert [e.rank for e in found.evidence] == [3, 5]


def test_a_fingerprint_at_its_cap_does_not_hide_another_in_the_same_buffer(
    many: scan.Matcher,
) -> None:
    """`step` (a context line) reaches the cap; the boom on a later line of the same buffer is
    still found, as is the boom on a step line."""
    data = b"step\n" * 60 + b"step RuntimeError: boom\nRuntimeError: boom\n"
    for size in (64, 1 << 20):
        found = _scan(data, many, buffer_bytes=size)
        assert [e.line for e in found.evidence if e.fingerprint == "boom"] == [61, 62], size


def test_uncompared_lines_stay_said_whatever_else_reaches_its_cap(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "LATE_LINES", 2)
    data = b"RuntimeError: boom NCCL WARN\n" * 60
    assert _scan(data, many, buffer_bytes=100).uncompared


def test_a_pattern_never_matches_across_a_line_break() -> None:
    matcher = scan.Matcher([_entry("x", _fp("two", r"boom\s+bang"))])
    found = _scan(b"boom bang\nboom\nbang\n", matcher)
    assert [e.line for e in found.evidence] == [1]


def test_a_blank_first_line_counts_and_a_line_not_utf8_is_read(many: scan.Matcher) -> None:
    found = _scan(b"\nRuntimeError: boom caf\xe9\n", many)
    assert [(e.line, e.text) for e in found.evidence] == [(2, "RuntimeError: boom caf\ufffd")]


def test_a_heading_at_a_stretchs_end_pairs_with_a_rank_line_eight_lines_into_the_next(
    many: scan.Matcher,
) -> None:
    def part(text: str) -> Any:
        return scan._scan_part(scan.buffers(io.BytesIO(text.encode())), "j", many, None, None)

    head = part("x\n" * 5 + "Root Cause (first observed failure):\n")
    for filler, pairs in ((7, ((6, 5),)), (8, ())):
        tail = part("y\n" * filler + "  rank : 5 (local_rank: 0)\n")
        assert scan._merge("j", [head, tail], many).root_ranks == pairs


def test_fifty_root_cause_blocks_of_eight_rank_lines_each_are_all_paired(
    many: scan.Matcher,
) -> None:
    block = "Root Cause (first observed failure):\n" + "".join(
        f"  rank : {r} (local_rank: 0)\n" for r in range(8)
    )
    found = _scan((block * 50).encode(), many)
    assert len(found.root_ranks) == 50 and {r for _, r in found.root_ranks} == {0}


def test_the_slowest_pattern_is_timed_on_the_buffers_first_mebibyte(
    many: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled: list[int] = []
    monkeypatch.setattr(scan.Matcher, "slowest", lambda self, sample: sampled.append(len(sample)))
    data = b"x" * 100 + b"\n" + (b"y" * 1000 + b"\n") * 3000
    with pytest.raises(scan.DiagnoseTimeout):
        _scan(data, many, deadline=0.0, buffer_bytes=4 << 20)
    assert sampled == [1 << 20]


def test_an_accelerated_matcher_answers_from_hyperscan_with_the_same_names(
    alpha: Entry, matcher: scan.Matcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nanopedia.diagnosis import presence
    from unit.test_presence import MemoryStore

    exact = matcher.present
    text = b"step 1\n[rank0]: RuntimeError: expected scalar type BFloat16 but found Float\n"
    store = MemoryStore()
    matcher.accelerate(store)
    assert matcher.present is not exact and len(store.files) == 1  # the database, stored
    assert list(matcher.present(text)) == list(exact(text)) and list(exact(text))
    assert list(matcher.present(b"nothing here\n")) == list(exact(b"nothing here\n"))
    # Without Hyperscan (or with a program it refuses) the RE2 set answers as before.
    monkeypatch.setattr(presence, "accelerated", lambda programs, store: None)
    plain = scan.Matcher([alpha])
    before = plain.present
    plain.accelerate(None)
    assert plain.present is before
