"""`nanopedia/content/load.py`: the size and nesting limits hold at exactly their boundary, and a
hidden character is reported where it is typed."""

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


#: YAML, and where each hidden character is reported: where it is typed when it is typed raw
#: (a block's later line, a folded line, the second of two values on a line), else the value's
#: start (an escape in double quotes).
HIDDEN_AT = {
    "plain value": ("a: ok\nb: xy\u202ez\n", ["2:6 'b'"]),
    "third line of a block": ("a: |\n  one\n  two\n  th\u202eree\n", ["4:5 'a'"]),
    "first of two in a block": ("a: |\n  \u202eone\n  t\u202ewo\n", ["2:3 'a'"]),
    "a block whose header's comment holds one too": ("a: |  # \u202e\n  one\u202e\n", ["2:6 'a'"]),
    "folded plain line": ("a: one\n  tw\u2067o\n", ["2:5 'a'"]),
    "folded quoted line at its start": ('a: "x\n\u202ey"\n', ["2:1 'a'"]),
    "two values on a line": ("b: [x\u202e, y\u202e]\n", ["1:6 'b[0]'", "1:10 'b[1]'"]),
    "nested value": ("a:\n  - b: c\n  - d: e\u2066f\n", ["3:9 'a[1].d'"]),
    "an escape in double quotes": ('a: "x\\x1by"\n', ["1:4 'a'"]),
    "a nested key": ("a:\n  b\u202d: 1\n", ["2:4 the key 'b\\u202d'"]),
}


@pytest.mark.parametrize("name", list(HIDDEN_AT))
def test_a_hidden_character_is_reported_where_it_is_typed(name: str) -> None:
    text, said = HIDDEN_AT[name]
    with pytest.raises(NanopediaError) as err:
        parse(text, "x.yaml")
    found = [str(p).split("\n")[0] for p in err.value.problems]
    assert [f.removeprefix("x.yaml:").split(" holds ")[0] for f in found] == [
        s.replace(" ", ": error[E018]: ", 1) for s in said
    ]
