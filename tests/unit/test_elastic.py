"""torchelastic error files (`diagnosis/elastic.py`): both shapes torchrun writes, what a bad one
says, and which files torchrun's Root Cause picks."""

from __future__ import annotations

import json

import pytest

from nanopedia.diagnosis import elastic
from nanopedia.diagnosis.elastic import ErrorFile, ReaderError, first, is_error_file, parse

NAME = "run/attempt_2/3/error.json"


def test_the_python_shape_gives_message_traceback_time_rank_and_attempt() -> None:
    data = {
        "message": {
            "message": "RuntimeError: boom",
            "extraInfo": {
                "py_callstack": "Traceback\nRuntimeError: boom",
                "timestamp": "1796483106",
            },
        }
    }
    found = parse(json.dumps(data).encode(), NAME)
    assert found == ErrorFile(
        NAME, 3, 2, "RuntimeError: boom", "Traceback\nRuntimeError: boom", 1796483106
    )
    assert found.when == "2026-12-05 15:05:06 UTC"
    assert found.sortable == "1205150506.000000000"
    assert found.as_json() == {
        "file": NAME,
        "rank": 3,
        "attempt": 2,
        "message": "RuntimeError: boom",
        "timestamp": 1796483106,
        "time": "2026-12-05 15:05:06 UTC",
    }


def test_the_plain_shape_uses_the_message_as_its_traceback() -> None:
    found = parse(b'{"message": "c10::Error: x", "timestamp": 1796483106}', "error.json")
    assert (found.message, found.traceback, found.timestamp) == ("c10::Error: x",) * 2 + (
        1796483106,
    )
    assert (found.rank, found.attempt) == (None, None)


def test_a_python_shape_without_its_own_time_takes_the_top_levels() -> None:
    data = {"message": {"message": "m", "extraInfo": "x"}, "timestamp": 1796483106}
    assert parse(json.dumps(data).encode(), NAME).timestamp == 1796483106
    blank = {"message": {"message": "m", "extraInfo": {"py_callstack": "  "}}}
    assert parse(json.dumps(blank).encode(), NAME).traceback == "m"


STAMPS = [
    (1796483106, 1796483106),
    ("1796483106", 1796483106),
    (" 1796483106 ", 1796483106),
    (10**9, 10**9),
    (10**9 - 1, None),
    (10**10, None),
    (True, None),
    ("17964831060000", None),
    ("soon", None),
    (1796483106.5, None),
    (None, None),
]


@pytest.mark.parametrize("stamp, seconds", STAMPS, ids=[f"stamp {i}" for i in range(len(STAMPS))])
def test_a_timestamp_is_whole_seconds_of_this_era(stamp: object, seconds: int | None) -> None:
    data = {"message": "m", "timestamp": stamp}
    found = parse(json.dumps(data).encode(), "error.json")
    assert found.timestamp == seconds
    assert (found.when is None) is (seconds is None)


BAD = [
    (b"{", "not valid JSON at line 1, column 2"),
    (b"[1]", 'no "message" field'),
    (b'{"other": 1}', 'no "message" field'),
    (b'{"message": 5}', '"message" is a int, not text'),
    (b'{"message": {"message": null}}', '"message" is a NoneType, not text'),
    (b'{"message": "m", "timestamp": ' + b"9" * 5000 + b"}", "}}} (ValueError: "),
]


@pytest.mark.parametrize("data, says", BAD, ids=[s for _, s in BAD])
def test_a_file_that_is_not_an_error_file_says_what_was_expected(data: bytes, says: str) -> None:
    with pytest.raises(ReaderError) as err:
        parse(data, "x/error.json")
    assert says in str(err.value) and str(err.value).startswith("x/error.json: ")


def test_an_oversized_file_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elastic, "MAX_BYTES", 10)
    with pytest.raises(ReaderError, match="12 bytes, more than the 10"):
        parse(b'{"message":}', "error.json")


def test_long_messages_and_tracebacks_are_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elastic, "MESSAGE_CHARS", 3)
    monkeypatch.setattr(elastic, "TRACEBACK_CHARS", 4)
    found = parse(b'{"message": "abcdefg"}', "error.json")
    assert (found.message, found.traceback) == ("abc", "abcd")


def test_only_files_named_error_json_are_error_files() -> None:
    assert is_error_file("a/0/error.json") and not is_error_file("a/0/error.json.bak")


def err(rank: int, stamp: int | None) -> ErrorFile:
    return ErrorFile(f"{rank}/error.json", rank, 0, "m", "m", stamp)


def test_the_root_cause_is_every_file_of_the_earliest_second() -> None:
    files = [err(0, 1796483110), err(1, 1796483106), err(2, None), err(3, 1796483106)]
    assert first(files) == [files[1], files[3]]
    assert first([err(0, None)]) == []
    assert first([]) == []


def test_a_bad_file_says_exactly_what_an_error_file_looks_like() -> None:
    with pytest.raises(ReaderError) as err:
        parse(b"[1]", "a/error.json")
    assert err.value.name == "a/error.json"
    assert err.value.message == (
        'no "message" field; expected a torchelastic error file: a JSON object '
        '{"message": {"message": ..., "extraInfo": {"py_callstack": ..., "timestamp": ...}}}'
    )


def test_a_file_of_exactly_the_limit_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"message": "m"}'
    monkeypatch.setattr(elastic, "MAX_BYTES", len(data))
    assert parse(data, "error.json").message == "m"
    monkeypatch.setattr(elastic, "MAX_BYTES", len(data) - 1)
    with pytest.raises(ReaderError) as err:
        parse(data, "big/error.json")
    assert err.value.name == "big/error.json"
