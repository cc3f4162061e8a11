"""The structured-evidence readers on the real files torch 2.13 wrote (tests/logs/elastic and
tests/logs/flight, made by bench/make_reader_fixtures.py) and on hostile ones: each is pure, from
bytes, so no test here needs torch or the disk beyond reading a fixture."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.diagnosis import elastic, flight, rank, readers
from nanopedia.diagnosis.elastic import ReaderError

ELASTIC = ROOT / "tests" / "logs" / "elastic"
FLIGHT = ROOT / "tests" / "logs" / "flight"


def _error(path: Path) -> elastic.ErrorFile:
    return elastic.parse(path.read_bytes(), path.relative_to(ROOT).as_posix())


def _dumps(case: str) -> list[flight.Dump]:
    return [
        flight.parse(p.read_bytes(), p.relative_to(ROOT).as_posix())
        for p in sorted((FLIGHT / case).glob("rank*.json"))
    ]


# --- torchelastic error files --------------------------------------------------------------------


def test_a_real_error_file_gives_rank_attempt_message_and_time() -> None:
    e = _error(ELASTIC / "one-error" / "attempt_0" / "1" / "error.json")
    assert (e.rank, e.attempt) == (1, 0)
    assert e.message == "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"
    assert e.traceback.startswith("Traceback (most recent call last):")
    assert e.timestamp is not None and e.when and e.when.endswith(" UTC")
    assert e.sortable and len(e.sortable) == len("MMDDhhmmss.fffffffff")


def test_the_earliest_timestamp_is_the_first_failure_not_the_listing_order() -> None:
    files = [_error(p) for p in sorted((ELASTIC / "two-errors").rglob("error.json"))]
    assert [f.rank for f in files] == [0, 1]  # rank 0's file comes first in any listing
    assert files[1].timestamp is not None and files[0].timestamp is not None
    assert files[1].timestamp < files[0].timestamp
    assert [f.rank for f in elastic.first(files)] == [1]


def test_torchruns_copy_of_the_first_failures_file_is_that_ranks_one_failure() -> None:
    """torchrun copies the first failure's error file to its own TORCHELASTIC_ERROR_FILE (a
    path with no rank folder): read beside the rank's file, in either order, it is one failure,
    kept as the rank's; two ranks that raised the same error stay two."""
    ranked = _error(ELASTIC / "two-errors" / "attempt_0" / "1" / "error.json")
    other = _error(ELASTIC / "two-errors" / "attempt_0" / "0" / "error.json")
    data = (ELASTIC / "two-errors" / "attempt_0" / "1" / "error.json").read_bytes()
    copy = elastic.parse(data, "nanopedia-run-x/error.json")
    assert copy.rank is None
    for order in ([copy, other, ranked], [ranked, other, copy]):
        found = readers.Found()
        for item in order:
            found.add(item)
        assert sorted(e.rank for e in found.errors if e.rank is not None) == [0, 1]
        assert len(found.errors) == 2
    twin = elastic.parse(data, "run/attempt_0/3/error.json")
    both = readers.Found()
    for item in (ranked, twin):
        both.add(item)
    assert [e.rank for e in both.errors] == [1, 3]


def test_the_plain_message_form_with_a_top_level_timestamp() -> None:
    e = elastic.parse(
        b'{"message": "SIGSEGV in worker", "timestamp": 1796483106}', "run/attempt_2/5/error.json"
    )
    assert (e.rank, e.attempt, e.message, e.traceback) == (
        5,
        2,
        "SIGSEGV in worker",
        "SIGSEGV in worker",
    )
    assert e.timestamp == 1796483106


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"message": ', "not valid JSON at line 1, column 13"),
        (b"[1, 2]", 'no "message" field'),
        (b'{"message": 7}', '"message" is a int, not text'),
        (b"\xff\xfe{}", "a torchelastic error file"),
        (b"[" * 200_000, "not a torchelastic error file"),
        (
            b'{"message": {"message": "x", "extraInfo": {"timestamp": ' + b"9" * 5000 + b"}}}",
            "not a torchelastic error file",
        ),
    ],
)
def test_a_damaged_error_file_is_refused_saying_what_was_expected(data: bytes, says: str) -> None:
    start = time.monotonic()
    with pytest.raises(ReaderError) as err:
        elastic.parse(data, "run/attempt_0/1/error.json")
    assert says in str(err.value)
    assert str(err.value).startswith("run/attempt_0/1/error.json: ")
    assert time.monotonic() - start < 2


def test_a_timestamp_that_is_no_time_is_left_out() -> None:
    for stamp in ('"soon"', "true", "-5", "99999999999999999"):
        data = b'{"message": "x", "timestamp": ' + stamp.encode() + b"}"
        assert elastic.parse(data, "error.json").timestamp is None


def test_a_huge_error_file_is_refused_before_parsing() -> None:
    with pytest.raises(ReaderError, match="more than the 4,194,304 an error file can hold"):
        elastic.parse(b" " * (elastic.MAX_BYTES + 1), "error.json")


def test_read_capped_stops_at_the_limit_on_an_endless_stream() -> None:
    with open("/dev/zero", "rb") as endless, pytest.raises(ReaderError, match="more than 1,024"):
        readers.read_capped(endless, "/dev/zero", 1024)


# --- Flight Recorder dumps -----------------------------------------------------------------------


def test_the_rank_that_skipped_a_collective_is_behind() -> None:
    report = flight.analyse(_dumps("skip"))
    assert [
        (f.kind, f.group, f.seq, f.ranks, f.others, f.expected, f.entry) for f in report.findings
    ] == [("behind", "0 (default_pg)", 3, (1,), (0,), "all_reduce [[4]]", "training-hang-no-error")]
    assert report.findings[0].text == (
        "process group 0 (default_pg): rank 1 behind: never entered collective #3 "
        "(all_reduce [[4]]) that rank 0 entered"
    )
    assert report.missing == ()


def test_a_different_collective_at_the_same_number_is_a_mismatch() -> None:
    (f,) = flight.analyse(_dumps("mismatch")).findings
    assert (f.kind, f.seq, f.ranks, f.found, f.others, f.expected, f.entry) == (
        "mismatch",
        3,
        (1,),
        ("broadcast [[4]]",),
        (0,),
        "all_reduce [[4]]",
        "collective-mismatch-desync",
    )


def test_a_different_size_at_the_same_number_is_a_mismatch() -> None:
    (f,) = flight.analyse(_dumps("size")).findings
    assert (f.kind, f.seq, f.ranks, f.found, f.expected) == (
        "mismatch",
        3,
        (1,),
        ("all_reduce [[8]]",),
        "all_reduce [[4]]",
    )


def _entry(seq: int, op: str = "all_reduce", sizes: object = ((4,),), pg: str = "0") -> dict:
    return {
        "process_group": [pg, "default_pg"],
        "collective_seq_id": seq,
        "is_p2p": False,
        "profiling_name": f"nccl:{op}",
        "input_sizes": sizes,
        "output_sizes": sizes,
        "state": "completed",
    }


def _dump(rank: int, seqs: list[dict], ranks: str = "[0, 1, 2, 3]") -> flight.Dump:
    doc = {
        "version": "2.10",
        "pg_config": {"0": {"desc": "default_pg", "ranks": ranks}},
        "entries": seqs,
    }
    return flight.parse(json.dumps(doc).encode(), f"nccl_trace_rank_{rank}")


def test_the_majority_call_is_the_expected_one_and_missing_dumps_are_named() -> None:
    dumps = [
        _dump(r, [_entry(1), _entry(2, "broadcast" if r == 2 else "all_reduce")]) for r in (0, 1, 2)
    ]
    report = flight.analyse(dumps)
    (f,) = report.findings
    assert (f.ranks, f.others, f.found) == ((2,), (0, 1), ("broadcast [[4]]",))
    assert report.missing == (3,)


def test_ring_buffers_are_compared_from_the_first_number_every_rank_holds() -> None:
    early = _dump(0, [_entry(n) for n in range(1, 8)], "[0, 1]")
    late = _dump(1, [_entry(n) for n in range(5, 8)], "[0, 1]")
    assert flight.analyse([early, late]).findings == ()


def test_all_to_all_sizes_may_differ_but_not_its_name() -> None:
    dumps = [_dump(r, [_entry(1, "all_to_all", [[r + 1]])], "[0, 1]") for r in (0, 1)]
    assert flight.analyse(dumps).findings == ()


def test_a_pickle_is_refused_unread_with_the_way_to_get_json() -> None:
    data = pickle.dumps({"entries": [], "version": "2.10", "pg_config": {}})
    assert flight.looks_like_dump(data)
    with pytest.raises(ReaderError) as err:
        flight.parse(data, "nccl_trace_rank_0")
    assert "a Python pickle" in err.value.message and "never unpickles" in err.value.message
    assert err.value.hint and "_dump_fr_trace_json()" in err.value.hint
    assert "_dump_nccl_trace_json()" in err.value.hint


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"entries": "x"}, 'no "entries" list'),
        ({"entries": [5]}, "entries[0] is a int, not an object"),
        ({"entries": [{"process_group": "0"}]}, "entries[0].process_group: expected"),
        (
            {"entries": [{"process_group": ["0", ""], "collective_seq_id": "3"}]},
            "entries[0].collective_seq_id: expected an integer",
        ),
        (
            {"entries": [{"process_group": ["0", ""], "collective_seq_id": 3}]},
            "entries[0].profiling_name: expected text",
        ),
    ],
)
def test_a_damaged_dump_is_refused_at_the_field(doc: object, says: str) -> None:
    with pytest.raises(
        ReaderError,
        match=r"rank0\.json: .*" + says.replace("[", r"\[").replace("]", r"\]").replace(".", r"\."),
    ):
        flight.parse(json.dumps(doc).encode(), "rank0.json")


def test_a_dump_whose_name_has_no_rank_is_refused_with_how_to_name_it() -> None:
    with pytest.raises(ReaderError) as err:
        flight.parse(b'{"entries": []}', "trace.json")
    assert err.value.hint and "<prefix><rank>" in err.value.hint


def test_a_huge_or_deep_dump_is_refused_quickly() -> None:
    start = time.monotonic()
    with pytest.raises(ReaderError, match="more than the 67,108,864"):
        flight.parse(b" " * (flight.MAX_BYTES + 1), "rank0.json")
    with pytest.raises(ReaderError, match="RecursionError"):
        flight.parse(b"[" * 500_000, "rank0.json")
    assert time.monotonic() - start < 5


# --- how the findings reach the ranking ----------------------------------------------------------


def test_a_finding_is_decisive_evidence_of_its_entry_when_the_corpus_has_it() -> None:
    report = flight.analyse(_dumps("skip"))
    result = rank.diagnose([], report=report, titles={"training-hang-no-error": "Hang"})
    (best,) = result.matches
    assert (best.id, best.possible, best.evidence[0].rank) == ("training-hang-no-error", False, 1)
    assert best.evidence[0].fingerprint == rank.FLIGHT_FINGERPRINT
    assert result.flight_report is report
    assert rank.diagnose([], report=report).matches == ()  # not in the corpus: no candidate


def test_kinds_of_files() -> None:
    assert readers.is_evidence_name("attempt_0/3/error.json")
    assert readers.is_evidence_name("rank3.json") and readers.is_evidence_name("x_rank_12.json")
    assert not readers.is_evidence_name("config.json")
    assert readers.kind("a/b/error.json", b"") == "elastic"
    assert readers.kind("rank0.json", (FLIGHT / "skip" / "rank0.json").read_bytes()) == "flight"
    assert readers.kind("train.log", b"step 1 loss 2.0\n") == "log"


# --- reading files beside the logs ---------------------------------------------------------------


def _write_error(path: Path, message: str = "ValueError: x", stamp: int = 1_800_000_000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "message": {
            "message": message,
            "extraInfo": {"py_callstack": "tb", "timestamp": str(stamp)},
        }
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _write_dump(path: Path, rank_entries: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {"process_group": ["0", ""], "collective_seq_id": n, "profiling_name": "nccl:all_reduce"}
        for n in range(1, rank_entries + 1)
    ]
    path.write_text(json.dumps({"version": "2.10", "pg_config": {}, "entries": entries}))
    return path


@pytest.mark.parametrize(
    ("name", "evidence"),
    [
        ("run/attempt_0/3/error.json", True),
        ("error.json", True),
        ("rank3.json", True),
        ("3.json", True),
        ("dumps/x_rank_12.json", True),
        ("config.json", False),
        ("rank3.json.gz", False),
        ("rank3.log", False),
        ("a3.json/x.log", False),
    ],
)
def test_files_worth_reading_beside_the_logs_are_error_files_and_ranked_json(
    name: str, evidence: bool
) -> None:
    assert readers.is_evidence_name(name) is evidence


def test_read_capped_reads_up_to_its_limit_and_refuses_one_byte_more() -> None:
    import io

    assert readers.read_capped(io.BytesIO(b"x" * 10), "a", 10) == b"x" * 10
    with pytest.raises(ReaderError) as err:
        readers.read_capped(io.BytesIO(b"x" * 11), "a", 10)
    assert (err.value.name, err.value.message) == (
        "a",
        "more than 10 bytes, far more than a real one; not read",
    )


def test_a_file_is_read_as_what_it_is_and_one_that_cannot_be_read_says_why(
    tmp_path: Path,
) -> None:
    error = _write_error(tmp_path / "run" / "attempt_0" / "2" / "error.json")
    dump = _write_dump(tmp_path / "rank5.json")
    got = readers.read_file(str(error), "elastic")
    assert isinstance(got, elastic.ErrorFile) and (got.file, got.rank) == (str(error), 2)
    named = readers.read_file(str(dump), "flight", "given/rank7.json")
    assert isinstance(named, flight.Dump) and (named.file, named.rank) == ("given/rank7.json", 7)
    with pytest.raises(ReaderError) as err:
        readers.read_file(str(tmp_path / "gone.json"), "flight")
    assert err.value.message == "cannot read it: No such file or directory"
    with pytest.raises(ReaderError) as err:
        readers.read_file(str(tmp_path), "elastic", "folder")
    assert err.value.name == "folder" and err.value.message.startswith("cannot read it: ")


def test_each_reader_reads_to_its_own_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = _write_dump(tmp_path / "rank0.json")
    error = _write_error(tmp_path / "error.json")
    capped = r"more than \d+ bytes, far more than a real one; not read"  # before parsing
    monkeypatch.setattr(flight, "MAX_BYTES", dump.stat().st_size - 1)
    with pytest.raises(ReaderError, match=capped) as err:
        readers.read_file(str(dump), "flight", "named")
    assert err.value.name == "named"
    assert readers.read_file(str(error), "elastic")  # its limit is elastic's
    monkeypatch.setattr(elastic, "MAX_BYTES", error.stat().st_size - 1)
    with pytest.raises(ReaderError, match=capped):
        readers.read_file(str(error), "elastic")
    monkeypatch.setattr(flight, "MAX_BYTES", 1 << 20)
    assert readers.read_file(str(dump), "flight")  # its limit is the dump's


def test_a_file_is_sniffed_by_name_then_by_its_first_bytes(tmp_path: Path) -> None:
    dump = _write_dump(tmp_path / "trace")
    log = tmp_path / "a.json"
    log.write_text("step 1\n")
    assert readers.sniff(str(tmp_path / "x" / "error.json")) == "elastic"  # never opened
    assert readers.sniff(str(dump)) == "flight"
    assert readers.sniff(str(log)) == "log"
    assert readers.sniff(str(tmp_path / "gone.log")) == "log"  # reading it will say why
    assert readers.kind("d", b"\x80\x04") == "flight"
    late = tmp_path / "late"
    late.write_bytes(b'{"x": "' + b"a" * 5000 + b'", "pg_config": {}, "entries": []}')
    assert readers.sniff(str(late)) == "log"  # only the first 4 KiB are looked at


def test_gathering_sorts_logs_from_error_files_and_dumps_and_names_what_failed(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    _write_error(run / "attempt_0" / "1" / "error.json")
    _write_dump(run / "rank0.json")
    _write_dump(run / "rank1.json", 2)
    (run / "attempt_0" / "1" / "stderr.log").write_text("step\n")
    (run / "rank2.json").write_text('{"pg_config": {}, "entries": 5}')
    (tmp_path / "empty").mkdir()
    loose = _write_dump(tmp_path / "loose" / "trace_file")
    logs, found = readers.gather(["-", str(run), str(tmp_path / "empty"), str(loose)])
    assert logs == ["-", str(run / "attempt_0" / "1" / "stderr.log")]
    assert [e.rank for e in found.errors] == [1]
    assert [d.rank for d in found.dumps] == [0, 1]
    assert [(p.name, p.message.split(":")[0]) for p in found.problems] == [
        (str(run / "rank2.json"), 'no "entries" list; expected a Flight Recorder JSON dump'),
        (
            str(tmp_path / "empty"),
            "no logs, torchelastic error files or Flight Recorder dumps below this folder",
        ),
        (str(loose), "no rank at the end of the file name"),
    ]
    report = found.report()
    assert report is not None and [r for _, r in report.files] == [0, 1]
    assert readers.Found().report() is None
    folder_logs, every = readers.gather([str(tmp_path / "loose")], every_file=True)
    assert folder_logs == [] and [p.name for p in every.problems] == [str(loose)]
    plain, nothing = readers.gather([str(tmp_path / "loose")])
    assert plain == [] and [p.name for p in nothing.problems] == [str(tmp_path / "loose")]


def test_files_that_cannot_be_read_fail_together_each_located_with_its_hint() -> None:
    from nanopedia.errors import NanopediaError

    found = readers.Found()
    found.raise_problems()  # nothing to say
    found.problems += [ReaderError("a.json", "bad", "do this"), ReaderError("b.json", "worse")]
    with pytest.raises(NanopediaError) as err:
        found.raise_problems()
    assert [(p.location.path, p.code, p.message, p.hint) for p in err.value.problems] == [
        ("a.json", "E050", "bad", "do this"),
        ("b.json", "E050", "worse", None),
    ]


def test_an_error_file_in_no_rank_folder_read_twice_is_kept_once() -> None:
    first = elastic.ErrorFile("a/error.json", None, None, "E: x", "tb", 5)
    again = elastic.ErrorFile("b/error.json", None, None, "E: x", "tb", 5)
    other = elastic.ErrorFile("c/error.json", None, None, "E: x", "tb", 6)
    found = readers.Found()
    for e in (first, again, other):
        found.add(e)
    assert [e.file for e in found.errors] == ["a/error.json", "c/error.json"]
    ranked = elastic.ErrorFile("r/attempt_0/4/error.json", 4, 0, "E: x", "tb", 6)
    found.add(ranked)
    assert [e.file for e in found.errors] == ["a/error.json", "r/attempt_0/4/error.json"]
    late = elastic.ErrorFile("d/error.json", None, None, "E: x", "tb", 6)
    found.add(late)  # the rank's own copy was read first
    assert len(found.errors) == 2


def test_a_dash_is_standard_input_even_beside_a_file_or_folder_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    _write_dump(tmp_path / "a" / "-")
    monkeypatch.chdir(tmp_path / "a")
    logs, found = readers.gather(["-"])
    assert (logs, found.dumps, found.problems) == (["-"], [], [])
    (tmp_path / "b" / "-").mkdir(parents=True)
    (tmp_path / "b" / "-" / "x.log").write_text("step\n")
    monkeypatch.chdir(tmp_path / "b")
    assert readers.gather(["-"])[0] == ["-"]
