"""`nanopedia/content/load.py`: the size and nesting limits hold at exactly their boundary."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanopedia.content.load import MAX_BYTES, MAX_DEPTH, decode, parse, read
from nanopedia.errors import NanopediaError


def sized(size: int) -> bytes:
    """A valid one-key YAML file of exactly `size` bytes."""
    head, tail = b"a: '", b"'\n"
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_a_file_of_exactly_the_byte_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_bytes(sized(MAX_BYTES))
    assert len(read(path).data["a"]) == MAX_BYTES - 6
    assert decode(sized(MAX_BYTES), "e.yaml").endswith("'\n")


def test_one_byte_over_the_limit_is_refused_for_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_bytes(sized(MAX_BYTES + 1))
    for attempt in (lambda: read(path, "e.yaml"), lambda: decode(sized(MAX_BYTES + 1), "e.yaml")):
        with pytest.raises(NanopediaError) as caught:
            attempt()
        assert [str(p).splitlines()[0] for p in caught.value.problems] == [
            f"e.yaml: error[E001]: file is over the {MAX_BYTES} byte limit"
        ]


def nested(levels: int) -> str:
    """A mapping holding lists inside lists: `levels` containers, the root counted."""
    return "a: " + "[" * (levels - 1) + "x" + "]" * (levels - 1) + "\n"


def test_nesting_of_exactly_the_depth_limit_is_read() -> None:
    value = parse(nested(MAX_DEPTH), "e.yaml").data["a"]
    depth = 1
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert (depth, value) == (MAX_DEPTH, "x")


def test_one_level_deeper_is_refused_where_that_level_opens() -> None:
    with pytest.raises(NanopediaError) as caught:
        parse(nested(MAX_DEPTH + 1), "e.yaml")
    [found] = caught.value.problems
    opening = len("a: ") + (MAX_DEPTH - 1) + 1  # the column of the bracket one level too deep
    assert (found.code, found.location.line, found.location.col) == ("E005", 1, opening)
    assert found.message == f"nesting deeper than {MAX_DEPTH} levels"


def test_block_nesting_counts_the_same_as_flow_nesting() -> None:
    def block(levels: int) -> str:
        return (
            "".join(f"{'  ' * i}k{i}:\n" for i in range(levels - 1))
            + f"{'  ' * (levels - 1)}k: v\n"
        )

    assert parse(block(MAX_DEPTH), "e.yaml").data
    with pytest.raises(NanopediaError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        parse(block(MAX_DEPTH + 1), "e.yaml")
