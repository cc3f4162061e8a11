"""What the Flight Recorder dumps say (`diagnosis/flight.py`), on dumps written here: which rank
is behind, which ranks called another collective, the sentence and JSON of each finding, and
how a damaged dump is refused. The real dumps torch 2.13 wrote are read in test_readers.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanopedia.diagnosis import flight
from nanopedia.diagnosis.elastic import ReaderError


def _entry(
    seq: int,
    op: str = "all_reduce",
    sizes: Any = ((4,),),
    pg: tuple[str, str] = ("0", "default_pg"),
    **more: Any,
) -> dict[str, Any]:
    return {
        "process_group": list(pg),
        "collective_seq_id": seq,
        "is_p2p": False,
        "profiling_name": f"nccl:{op}",
        "input_sizes": sizes,
        "output_sizes": sizes,
        "state": "completed",
        **more,
    }


def _bytes(entries: list[dict[str, Any]], config: Any = None, **more: Any) -> bytes:
    doc = {"version": "2.10", "pg_config": config or {}, "entries": entries, **more}
    return json.dumps(doc).encode()


def _dump(rank: int, entries: list[dict[str, Any]], config: Any = None) -> flight.Dump:
    return flight.parse(_bytes(entries, config), f"nccl_trace_rank_{rank}.json")


def _seqs(*seqs: int, **kw: Any) -> list[dict[str, Any]]:
    return [_entry(s, **kw) for s in seqs]


def _rows(report: flight.Report) -> list[tuple[Any, ...]]:
    return [
        (f.kind, f.group, f.seq, f.ranks, f.others, f.expected, f.found) for f in report.findings
    ]


def test_a_finding_reads_as_one_sentence_and_as_json() -> None:
    behind = flight.Finding("behind", "0 (pg)", 3, (1, 2), (0,), "all_reduce [[4]]", (), "e1")
    assert behind.text == (
        "process group 0 (pg): ranks 1,2 behind: never entered collective #3 (all_reduce [[4]]) "
        "that rank 0 entered"
    )
    odd = flight.Finding(
        "mismatch", "1", 5, (2, 3), (0, 1), "a [[4]]", ("b [[4]]", "a [[8]]"), "e2"
    )
    assert odd.text == (
        "process group 1: collective #5 differs: rank 2: b [[4]]; rank 3: a [[8]]; ranks 0,1: "
        "a [[4]]"
    )
    assert odd.as_json() == {
        "kind": "mismatch",
        "group": "1",
        "seq": 5,
        "ranks": [2, 3],
        "others": [0, 1],
        "expected": "a [[4]]",
        "found": ["b [[4]]", "a [[8]]"],
        "entry": "e2",
        "text": odd.text,
    }
    report = flight.Report((("d0", 0), ("d2", 2)), (behind,), (1,))
    assert report.as_json() == {
        "dumps": [{"file": "d0", "rank": 0}, {"file": "d2", "rank": 2}],
        "findings": [behind.as_json()],
        "missing_ranks": [1],
    }


def test_a_dump_is_read_field_by_field() -> None:
    entries = [
        _entry(1, "all_reduce", [[4, 4]]),
        _entry(2, "gloo:broadcast", None, state="x" * 30),
        {**_entry(3), "is_p2p": True},  # point-to-point: not compared
        {**_entry(4), "is_p2p": "yes"},  # only `true` marks one
        _entry(5, "allgather", [[1] * 100], pg=("1", "")),
        _entry(7, "all_reduce", {"a": [4]}, pg=("1", "")),
        {k: v for k, v in _entry(6).items() if k != "state"},
        {**_entry(8), "profiling_name": "barrier"},  # no backend before the name
    ]
    config = {"0": {"desc": "default_pg", "ranks": "[0, 1]"}, "1": {"ranks": [0]}}
    dump = flight.parse(_bytes(entries, config, version="v" * 30), "dumps/trace_rank_12.json")
    assert (dump.file, dump.rank, dump.version) == ("dumps/trace_rank_12.json", 12, "v" * 20)
    assert dump.members == {"0": (0, 1), "1": (0,)}
    assert list(dump.groups) == [("0", "default_pg"), ("1", "")]
    main = dump.groups[("0", "default_pg")]
    assert [(c.seq, c.op, c.name, c.inputs, c.outputs, c.state) for c in main] == [
        (1, "all_reduce", "nccl:all_reduce", "[[4,4]]", "[[4,4]]", "completed"),
        (2, "gloo:broadcast", "nccl:gloo:broadcast", "?", "?", "x" * 20),  # the first part
        (4, "all_reduce", "nccl:all_reduce", "[[4]]", "[[4]]", "completed"),
        (6, "all_reduce", "nccl:all_reduce", "[[4]]", "[[4]]", ""),
        (8, "barrier", "barrier", "[[4]]", "[[4]]", "completed"),
    ]
    gathered, odd = dump.groups[("1", "")]
    assert odd.inputs == '{"a":[4]}'
    assert gathered.inputs == ("[[" + ",".join(["1"] * 100) + "]]")[:200]
    assert len(gathered.inputs) == 200


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank3.json", 3),
        ("nccl_trace_rank_12", 12),
        ("a/b/dump-7.json", 7),
        ("rank1234567.json", 234567),  # at most six digits are a rank
    ],
)
def test_a_dumps_rank_is_the_number_that_ends_its_name(name: str, rank: int) -> None:
    assert flight.parse(_bytes([]), name).rank == rank


@pytest.mark.parametrize(
    ("config", "members"),
    [
        ({"0": {"ranks": "[0, 1, 2]"}}, {"0": (0, 1, 2)}),
        ({"0": {"ranks": [3, 4]}}, {"0": (3, 4)}),
        ({"0": {"ranks": "[0, oops]"}, "1": {"ranks": "[1"}}, {}),
        ({"0": {"ranks": "[0, oops]"}, "1": {"ranks": "[1]"}}, {"1": (1,)}),
        ({"0": {"ranks": "[" + " " * ((1 << 20) - 3) + "0]"}}, {}),  # exactly 1 MiB: not read
        ({"0": {"ranks": "['a']"}, "1": {"ranks": [1.5]}}, {}),
        ({"0": {"ranks": "[]"}}, {"0": ()}),
        ({"0": "[0, 1]", "1": {"desc": "x"}}, {}),
        ({7: {"ranks": [0]}}, {"7": (0,)}),
        ([{"ranks": [0]}], {}),
        ({"0": {"ranks": "[" + "0, " * 400_000 + "]"}}, {}),  # a text of 1 MiB or more is not read
    ],
)
def test_a_process_groups_members_are_read_from_pg_config(config: Any, members: Any) -> None:
    assert flight._members(config) == members


@pytest.mark.parametrize(
    ("data", "dump"),
    [
        (b"\x80\x04rest", True),  # a pickle: refused later, with how to get JSON
        (b'  {"pg_config": {}}', True),
        (b'{"entries": [], "pg_config": {}}', True),
        (b'{"x": "' + b"a" * 5000 + b'", "pg_config": {}}', True),  # past the head, in the MiB
        (b'{"x": "' + b"a" * (1 << 20) + b'", "pg_config": {}}', False),
        (b'[{"collective_seq_id": 1}]', True),
        (b'{"x": "' + b"a" * 5000 + b'", "collective_seq_id": 1}', False),
        (b'{"x": "' + b"a" * 4068 + b'", "collective_seq_id": 1}', False),  # ends at byte 4097
        (b'["pg_config"]', False),
        (b"step 1 pg_config", False),
        (b"", False),
    ],
)
def test_a_dump_is_told_from_a_log_by_its_first_bytes(data: bytes, dump: bool) -> None:
    assert flight.looks_like_dump(data) is dump


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{oops", 'not valid JSON at line 1, column 2: Expecting property name enclosed in double '
         'quotes; expected a Flight Recorder JSON dump: {"version": ..., "pg_config": {...}, '
         '"entries": [...]}'),
        (b"[]", 'no "entries" list; expected a Flight Recorder JSON dump'),
        (b'{"entries": {}}', 'no "entries" list'),
        (b'{"entries": [[1]]}', "entries[0] is a list, not an object"),
        (b'{"entries": [{"process_group": ["0"]}]}', "entries[0].process_group: expected [name, "
         "description]"),
        (b'{"entries": [{"process_group": ["0", 1]}]}', "entries[0].process_group"),
        (b'{"entries": [{"process_group": ["0", "", ""]}]}', "entries[0].process_group"),
        (b'{"entries": [{"process_group": ["0", ""], "collective_seq_id": true, '
         b'"profiling_name": "x"}]}', "entries[0].collective_seq_id: expected an integer"),
        (b'{"entries": [{"process_group": ["0", ""], "collective_seq_id": 1.0, '
         b'"profiling_name": "x"}]}', "entries[0].collective_seq_id: expected an integer"),
        (b'{"entries": [{"process_group": ["0", ""], "collective_seq_id": 1, '
         b'"profiling_name": 5}]}', "entries[0].profiling_name: expected text"),
        (b'{"entries": [], "x": 1e999999}', None),
        (b'{"entries": "\xff"}', "not a Flight Recorder JSON dump"),
    ],
)  # fmt: skip
def test_a_damaged_dump_is_refused_saying_what_was_expected(data: bytes, says: str | None) -> None:
    if says is None:  # an infinite number is still JSON to Python: read, nothing in it
        assert flight.parse(data, "rank0.json").groups == {}
        return
    with pytest.raises(ReaderError) as err:
        flight.parse(data, "rank0.json")
    assert err.value.name == "rank0.json" and says in err.value.message
    if data.startswith(b"{oops"):
        assert err.value.message == says and err.value.hint == flight.HOW_TO_GET_JSON


def test_a_dump_with_too_many_entries_or_bytes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flight, "MAX_ENTRIES", 2)
    assert len(flight.parse(_bytes(_seqs(1, 2)), "rank0.json").groups[("0", "default_pg")]) == 2
    with pytest.raises(ReaderError) as err:
        flight.parse(_bytes(_seqs(1, 2, 3)), "rank0.json")
    assert (err.value.name, err.value.message) == ("rank0.json", "3 entries, more than the 2 read")
    monkeypatch.setattr(flight, "MAX_BYTES", 10)
    with pytest.raises(ReaderError) as err:
        flight.parse(b"{" + b" " * 10, "rank0.json")
    assert err.value.message == (
        "11 bytes, more than the 10 a Flight Recorder dump is read to; not read"
    )
    assert err.value.hint == "lower TORCH_FR_BUFFER_SIZE, or dump without stack frames"
    monkeypatch.setattr(flight, "MAX_BYTES", 14)
    assert flight.parse(b'{"entries":[]}', "rank0.json").rank == 0  # exactly the limit
    with pytest.raises(ReaderError, match="15 bytes, more than the 14"):
        flight.parse(b'{"entries":[]} ', "rank0.json")


def test_a_name_without_a_rank_is_refused_with_how_to_name_it() -> None:
    with pytest.raises(ReaderError) as err:
        flight.parse(_bytes([]), "trace.json")
    assert err.value.message == "no rank at the end of the file name"
    assert err.value.hint == (
        "name each rank's dump <prefix><rank> (rank3.json, nccl_trace_rank_3), as torch's "
        "analyser expects"
    )


def test_the_rank_that_never_entered_the_next_collective_is_behind() -> None:
    config = {"0": {"desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    dumps = [
        _dump(0, _seqs(1, 2, 3, 4), config),
        _dump(1, _seqs(1, 2), config),
        _dump(2, _seqs(1, 2, 3), config),
    ]
    report = flight.analyse(dumps)
    assert _rows(report) == [
        ("behind", "0 (default_pg)", 3, (1,), (0, 2), "all_reduce [[4]]", ()),
    ]
    assert report.findings[0].entry == flight.BEHIND_ENTRY
    assert report.files == (
        ("nccl_trace_rank_0.json", 0),
        ("nccl_trace_rank_1.json", 1),
        ("nccl_trace_rank_2.json", 2),
    )
    assert report.missing == (3,)


def test_ranks_behind_by_the_same_count_are_named_together() -> None:
    dumps = [_dump(r, _seqs(*range(1, 3 if r in (2, 3) else 5))) for r in (3, 0, 2, 1)]
    assert _rows(flight.analyse(dumps)) == [
        ("behind", "0 (default_pg)", 3, (2, 3), (0, 1), "all_reduce [[4]]", ())
    ]
    assert [f for _, f in flight.analyse(dumps).files] == [0, 1, 2, 3]


def test_the_behind_collective_is_described_by_the_first_rank_that_entered_it() -> None:
    dumps = [
        _dump(0, _seqs(1)),
        _dump(1, [_entry(1), _entry(2, "broadcast")]),
        _dump(2, [_entry(1), _entry(2, "all_gather")]),
    ]
    rows = _rows(flight.analyse(dumps))
    assert rows[0] == ("behind", "0 (default_pg)", 2, (0,), (1, 2), "broadcast [[4]]", ())


def test_the_majority_call_is_expected_and_a_tie_goes_to_the_lowest_rank() -> None:
    major = [_dump(r, [_entry(1, "broadcast" if r == 1 else "all_reduce")]) for r in (0, 1, 2)]
    assert _rows(flight.analyse(major)) == [
        ("mismatch", "0 (default_pg)", 1, (1,), (0, 2), "all_reduce [[4]]", ("broadcast [[4]]",))
    ]
    tie = [_dump(r, [_entry(1, "broadcast" if r in (0, 3) else "all_reduce")]) for r in range(4)]
    assert _rows(flight.analyse(tie)) == [
        ("mismatch", "0 (default_pg)", 1, (1, 2), (0, 3), "broadcast [[4]]",
         ("all_reduce [[4]]", "all_reduce [[4]]")),
    ]  # fmt: skip
    sizes = [_dump(r, [_entry(1, sizes=[[r % 2 + 1]])]) for r in (0, 1)]
    assert _rows(flight.analyse(sizes))[0][3:] == (
        (1,),
        (0,),
        "all_reduce [[1]]",
        ("all_reduce [[2]]",),
    )
    outputs = [_dump(0, [_entry(1)]), _dump(1, [{**_entry(1), "output_sizes": [[8]]}])]
    assert [f.ranks for f in flight.analyse(outputs).findings] == [(1,)]


@pytest.mark.parametrize(
    ("op", "flagged"),
    [
        ("gather", False),
        ("scatter", False),
        ("all_to_all", False),
        ("alltoall_base", False),
        ("all_reduce", True),
        ("reduce_scatter", True),
        ("all_gather", True),
    ],
)
def test_only_uneven_collectives_may_differ_in_size(op: str, flagged: bool) -> None:
    dumps = [_dump(r, [_entry(1, op, [[r + 1]])]) for r in (0, 1)]
    assert bool(flight.analyse(dumps).findings) is flagged
    renamed = [_dump(0, [_entry(1, op)]), _dump(1, [_entry(1, op + "x")])]
    assert bool(flight.analyse(renamed).findings)


def test_at_most_three_findings_per_process_group_behind_first() -> None:
    dumps = [
        _dump(0, [_entry(n, "broadcast") for n in range(1, 7)]),
        _dump(1, [_entry(n) for n in range(1, 6)]),
    ]
    rows = _rows(flight.analyse(dumps))
    assert [(r[0], r[2]) for r in rows] == [("behind", 6), ("mismatch", 1), ("mismatch", 2)]
    only = [_dump(0, [_entry(n, "broadcast") for n in range(1, 6)]), _dump(1, _seqs(*range(1, 6)))]
    assert [r[2] for r in _rows(flight.analyse(only))] == [1, 2, 3]


def test_ring_buffers_are_compared_from_the_first_number_every_rank_holds() -> None:
    early = _dump(0, [_entry(1, "broadcast"), *_seqs(2, 3, 4, 5, 6)])
    late = _dump(1, _seqs(4, 5, 6))
    assert flight.analyse([early, late]).findings == ()
    empty = _dump(2, [])
    assert flight.analyse([early, late, empty]).findings == ()  # no collective of pg 0 at all


def test_process_groups_are_compared_apart_with_members_from_pg_config() -> None:
    config = {"0": {"ranks": "[0, 1]"}, "7": {"ranks": "[0, 1, 5]"}}
    dumps = [
        _dump(0, [*_seqs(1, 2), *_seqs(1, 2, pg=("7", ""))], config),
        _dump(1, [*_seqs(1, 2), *_seqs(1, pg=("7", ""))], config),
    ]
    report = flight.analyse(dumps)
    assert _rows(report) == [("behind", "7", 2, (1,), (0,), "all_reduce [[4]]", ())]
    assert report.missing == (5,)
    alone = flight.analyse([_dump(0, _seqs(1, 2), config)])
    assert (alone.findings, alone.missing) == ((), (1,))
    twice = flight.analyse([_dump(0, _seqs(1, 2)), _dump(0, _seqs(1))])
    assert [r for _, r in twice.files] == [0]
    other = [_dump(0, _seqs(1, 2)), _dump(1, _seqs(1, 2, pg=("0", "other")))]
    assert flight.analyse(other).findings == ()  # (name, description) names a group


def test_a_member_whose_dump_lacks_the_group_is_behind_from_its_first_collective() -> None:
    config = {"0": {"ranks": "[0, 1]"}}
    dumps = [_dump(0, _seqs(1, 2), config), _dump(1, _seqs(1, pg=("9", "")), config)]
    assert _rows(flight.analyse(dumps)) == [
        ("behind", "0 (default_pg)", 1, (1,), (0,), "all_reduce [[4]]", ())
    ]


def test_a_number_one_rank_skipped_does_not_stop_the_comparison_of_later_ones() -> None:
    dumps = [_dump(0, _seqs(1, 2, 3)), _dump(1, [_entry(1), _entry(3, "broadcast")])]
    assert [(r[0], r[2]) for r in _rows(flight.analyse(dumps))] == [("mismatch", 3)]


def test_findings_and_missing_ranks_of_every_group_are_kept() -> None:
    config = {"0": {"ranks": "[0, 1, 3]"}, "7": {"ranks": "[0, 1, 5]"}}
    dumps = [
        _dump(0, [_entry(1), *_seqs(1, 2, pg=("7", ""))], config),
        _dump(1, [_entry(1, "broadcast"), *_seqs(1, pg=("7", ""))], config),
    ]
    report = flight.analyse(dumps)
    assert [(f.kind, f.group) for f in report.findings] == [
        ("mismatch", "0 (default_pg)"),
        ("behind", "7"),
    ]
    assert report.missing == (3, 5)


def test_a_refused_dump_is_named_in_every_refusal() -> None:
    import pickle

    with pytest.raises(ReaderError) as err:
        flight.parse(pickle.dumps({"entries": []}), "dumps/rank3.pkl")
    assert err.value.name == "dumps/rank3.pkl"
    assert err.value.message == (
        "a Python pickle, not a JSON Flight Recorder dump: Nanopedia never unpickles a file "
        "(loading a pickle runs its code)"
    )
    with pytest.raises(ReaderError) as err:
        flight.parse(b" " * (flight.MAX_BYTES + 1), "big/rank0.json")
    assert err.value.name == "big/rank0.json"


def test_a_dump_without_a_version_reads_as_one_of_no_version() -> None:
    assert flight.parse(b'{"entries": []}', "rank0.json").version == ""
