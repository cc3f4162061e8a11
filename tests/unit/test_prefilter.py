"""`nanopedia/diagnosis/prefilter.py`: the literals every match of a pattern contains, the index
that finds a small log's candidate entries by them, and the bytes it is looked up in. The rule is
conservative: an entry it leaves out cannot match, so the answer is the one the whole set gives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import re2
import yaml
from conftest import ROOT

from nanopedia.diagnosis import logs, prefilter

UNWRAP = [
    ("(?:a|b)", "a|b"),
    ("(?:(?:abc))", "abc"),
    ("(?:a)(?:b)", "(?:a)(?:b)"),  # two groups: the first does not close at the end
    ("(?:ab)c", "(?:ab)c"),
    (r"(?:a\)b)", r"a\)b"),  # an escaped `)` does not close the group
    ("(?:[)]x)", "[)]x"),  # nor does one in a class
    ("(?:a(b)c)", "a(b)c"),  # a nested group closes before the outer one
    ("(?i)abc", "(?i)abc"),  # a flag group is not a wrapper
    ("(?:abc", "(?:abc"),  # never closed: left as it is
    (r"(?:\d)", r"\d"),  # an escape is two characters, the `)` after it closes
    ("(?:[abc)", "(?:[abc)"),  # a class left open swallows the `)`
    ("abc", "abc"),
]


@pytest.mark.parametrize(("pattern", "unwrapped"), UNWRAP)
def test_a_group_around_the_whole_pattern_is_unwrapped(pattern: str, unwrapped: str) -> None:
    assert prefilter.unwrap(pattern) == unwrapped


LITERALS: list[tuple[str, list[list[str]] | None]] = [
    ("CUDA out of memory", [["cuda out of "]]),  # lower-cased, cut to MAX_LITERAL
    ("NCCL", [["nccl"]]),
    ("abc", [["abc"]]),  # MIN_LITERAL long: kept
    ("ab", None),  # shorter: no literal, a candidate for every log
    ("(?:NCCL error|NCCL timeout)", [["nccl error"], ["nccl timeout"]]),
    ("abc|de", None),  # one alternative without a literal: any log may match it
    ("ab|cde", None),
    ("abc|", None),
    ("abc|def|ghi", [["abc"], ["def"], ["ghi"]]),
    (r"abc\.?def", [["abc", "def"]]),  # an optional character ends the literal without it
    ("abcd*efg", [["abc", "efg"]]),
    ("abcd+efg", [["abcd", "efg"]]),  # one or more: the character stays, the literal ends
    ("abcd*?efg", [["abc", "efg"]]),
    ("x{2,3}yzw", [["yzw"]]),  # a counted character goes, and the count's digits are no text
    ("abc{2}defg", [["defg"]]),  # `ab` is left, too short
    ("abcd{2}", [["abc"]]),
    ("ab{,", None),  # `{` without `}`: the `b` before it is still optional
    ("ab[c\\]]def", [["def"]]),  # a class ends a literal, `]` escaped inside it
    ("[]abc]xyz", [["xyz"]]),
    ("[^]abc]xyz", [["xyz"]]),
    (r"\x41bcdef", [["bcdef"]]),  # \xHH is one character, not kept
    ("(?i)foo bar", [["foo bar"]]),
    ("foo(bar)?bazz", [["foo", "bazz"]]),  # a group is skipped, even a required one
    (r"foo(a\.b)bar", [["foo", "bar"]]),  # escaped punctuation inside a group is skipped
    (r"Tried to allocate \d+(\.\d+)? [GM]iB", [["tried to all"]]),
    (r"^\s*rank\s*: (\d{1,6})", [["rank"]]),  # `: ` is too short
    (r"\(local_rank: \d+\)", [["(local_rank:"]]),  # escaped punctuation is text
    (r"a\b\Bword\sspace", [["word", "space"]]),  # escapes of letters end a literal
    ("caf\u00e9 au lait", [["caf", " au lait"]]),  # a non-ASCII character ends one
    ("tab\there", [["tab", "here"]]),  # so does a control character
    ("end.of+line$", [["end", "line"]]),  # `.` and `+` end literals, `of` is too short
    ("a^bcd", [["bcd"]]),
    ("abc}def", [["abc", "def"]]),
    (r"end\\", [["end\\"]]),
    ("class[unclosed", [["class"]]),
    ("XLA compile failed", [["xla compile "]]),  # `X` is a letter like any other
    ("abc~def", [["abc~def"]]),  # `~`, the last printable ASCII character, is text
    ("abc}def{2,345}ghi", [["abc", "ghi"]]),  # the count's `}` is the next one, not an earlier
    ("x{2}abcd}efg", [["abcd", "efg"]]),  # nor the last one
]


@pytest.mark.parametrize(("pattern", "expected"), LITERALS)
def test_the_literals_every_match_of_each_alternative_contains(
    pattern: str, expected: list[list[str]] | None
) -> None:
    assert prefilter.literals(pattern) == expected


def test_literals_are_text_of_every_match() -> None:
    """Each literal of the table occurs, case folded, in a match of its pattern."""
    samples = {
        r"abc\.?def": ["abcdef", "abc.def"],
        "x{2,3}yzw": ["xxyzw", "xxxyzw"],
        "foo(bar)?bazz": ["foobazz", "foobarbazz"],
        r"\(local_rank: \d+\)": ["(local_rank: 3)"],
        "(?:NCCL error|NCCL timeout)": ["NCCL error", "NCCL timeout"],
    }
    for pattern, lines in samples.items():
        branches = prefilter.literals(pattern)
        assert branches is not None
        for line in lines:
            assert re2.search(pattern, line), (pattern, line)
            assert any(all(lit in line.lower() for lit in b) for b in branches), (pattern, line)


def _index() -> prefilter.Index:
    return prefilter.build(
        [
            ("oom.yaml", "CUDA out of memory"),
            ("nccl.yaml", "NCCL error: unhandled|watchdog .* timed out"),
            ("both.yaml", "Tried to allocate"),
            ("both.yaml", r"\d+ (?:x|y)"),  # no literal: every log
            ("pair.yaml", r"first half.*second half"),
        ]
    )


CANDIDATES = [
    ("nothing to see here", {"both.yaml"}),
    ("RuntimeError: CUDA Out Of Memory.", {"both.yaml", "oom.yaml"}),
    ("NCCL error: unhandled system error", {"both.yaml", "nccl.yaml"}),
    ("[rank0] watchdog caught: collective timed out", {"both.yaml", "nccl.yaml"}),
    ("a watchdog, and nothing timed", {"both.yaml"}),  # one literal of two is not enough
    ("first half, then second half", {"both.yaml", "pair.yaml"}),
    ("first half only", {"both.yaml"}),
    ("cud", {"both.yaml"}),  # a prefix of a literal is not the literal
]


@pytest.mark.parametrize(("text", "expected"), CANDIDATES)
def test_the_candidates_of_a_text_are_the_entries_it_holds_every_literal_of(
    text: str, expected: set[str]
) -> None:
    assert _index().candidates([text.encode()]) == expected


def test_literals_of_one_branch_may_sit_in_different_logs() -> None:
    index = _index()
    assert index.candidates([b"first half", b"second half"]) == {"both.yaml", "pair.yaml"}
    assert index.candidates([]) == {"both.yaml"}


def test_a_literal_found_once_counts_for_every_branch_that_needs_it() -> None:
    index = prefilter.build(
        [("a.yaml", "alpha.*omega"), ("b.yaml", "alpha.*gamma"), ("c.yaml", "omega")]
    )
    assert index.candidates([b"alpha omega gamma"]) == {"a.yaml", "b.yaml", "c.yaml"}
    assert index.candidates([b"alpha gamma"]) == {"b.yaml"}
    assert index.candidates([b"OMEGA"]) == {"c.yaml"}


def test_bytes_past_ascii_are_read_one_character_each() -> None:
    index = prefilter.build([("a.yaml", "abc def")])
    assert index.candidates(["caf\u00e9 abc def".encode()]) == {"a.yaml"}
    assert index.candidates([b"\xff\xfeabc def\x80"]) == {"a.yaml"}


def test_the_index_is_the_same_whatever_the_order_of_its_fingerprints() -> None:
    pairs = [
        ("oom.yaml", "CUDA out of memory"),
        ("nccl.yaml", "NCCL error|watchdog timed out"),
        ("x.yaml", "watchdog.*CUDA out"),
        ("any.yaml", "ab"),
    ]
    one, other = prefilter.build(pairs), prefilter.build(pairs[::-1])
    assert one == other
    assert list(one.words) == sorted(one.words)
    assert one.always == ["any.yaml"]
    assert [one.words[i] for i in one.prefixes["cud"]] == ["cuda out", "cuda out of "]


def test_a_branch_is_looked_up_by_its_longest_literal() -> None:
    index = prefilter.build([("a.yaml", "abc.*longer text")])
    (branch,) = index.branches
    assert branch == ["a.yaml", sorted(index.words.index(w) for w in ("abc", "longer text"))]
    assert index.users[index.words.index("longer text")] == [0]
    assert index.users[index.words.index("abc")] == []


def test_of_literals_as_long_the_first_in_order_is_the_key() -> None:
    index = prefilter.build([("a.yaml", "bbb.*aaa")])
    assert index.users[index.words.index("aaa")] == [0]
    assert index.users[index.words.index("bbb")] == []


def test_an_index_reads_back_from_its_json_values() -> None:
    index = _index()
    again = prefilter.from_data(json.loads(json.dumps(index.data())))
    for text, expected in CANDIDATES:
        assert again.candidates([text.encode()]) == expected
    assert list(again.words) == list(index.words)
    assert set(index.data()) == {"words", "prefixes", "branches", "users", "always"}


def _shipped() -> list[tuple[str, str, list[str]]]:
    """(entry file, pattern, must-match lines) of every fingerprint of entries/."""
    found = []
    for path in sorted((ROOT / "entries").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for fp in (data or {}).get("fingerprints", []) if isinstance(data, dict) else []:
            found.append((path.name, fp["pattern"], list(fp.get("must_match", []))))
    return found


def test_every_shipped_example_line_makes_its_entry_a_candidate() -> None:
    shipped = _shipped()
    index = prefilter.build((name, pattern) for name, pattern, _ in shipped)
    assert len(index.always) < len({name for name, _, _ in shipped}) / 4  # it does filter
    for name, pattern, lines in shipped:
        for line in lines:
            held = prefilter.normalised(f"{line}\n".encode())
            assert name in index.candidates([held]), (name, pattern, line)


def test_a_small_log_is_held_and_a_larger_one_is_not(tmp_path: Path) -> None:
    log = tmp_path / "small.log"
    log.write_bytes(b"x" * 100)
    assert prefilter.hold(str(log), limit=100) == b"x" * 100
    assert prefilter.hold(str(log), limit=99) is None
    assert prefilter.hold(str(log)) == b"x" * 100


def test_a_gzipped_log_is_held_as_its_text(tmp_path: Path) -> None:
    log = tmp_path / "job.log.gz"
    log.write_bytes(gzip.compress(b"RuntimeError: CUDA out of memory\n", mtime=0))
    assert prefilter.hold(str(log)) == b"RuntimeError: CUDA out of memory\n"


def test_standard_input_a_missing_or_damaged_log_is_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "open_log", lambda *a, **k: pytest.fail("standard input read"))
    assert prefilter.hold("-") is None  # never read ahead: the scan reads it as it comes
    monkeypatch.undo()
    assert prefilter.hold(str(tmp_path / "missing.log")) is None
    assert prefilter.hold(str(tmp_path)) is None  # a folder
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"text " * 100, mtime=0)[:20])
    assert prefilter.hold(str(broken)) is None


def test_held_bytes_are_normalised_as_the_scan_shows_them() -> None:
    assert prefilter.normalised(b"a\r\nb\rc\n") == b"a\nb c\n"
    assert prefilter.normalised(b"\x1b[31mred\x1b[0m\n") == b"red\n"
    assert prefilter.normalised(b"") == b""
    assert prefilter.normalised(b"no newline at the end") == b"no newline at the end\n"
    held = b"z" * (prefilter.HELD_BYTES - 1) + b"\n"  # the most a held log holds: one buffer
    assert prefilter.normalised(held) == held
    # A last line without its newline is read as a buffer of its own: joined, nothing between.
    two = b"a\n" + b"b" * (prefilter.HELD_BYTES - 2)
    assert prefilter.normalised(two) == two + b"\n"
