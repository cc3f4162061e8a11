"""The safe loader: hostile inputs give one clean located error, fast, and nothing is written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nanopedia.content.load import MAX_BYTES, MAX_DEPTH, decode, parse, read
from nanopedia.content.validate import check_entry
from nanopedia.errors import NanopediaError

BILLION_LAUGHS = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n"
    for i in range(8)
)

HOSTILE: dict[str, tuple[bytes, str, str]] = {
    # name: (file content, expected code, expected location prefix)
    "billion laughs": (BILLION_LAUGHS.encode(), "E003", "x.yaml:1:4"),
    "alias alone": (b"a: 1\nb: *c\n", "E003", "x.yaml:2:4"),
    "python object tag": (b"a: !!python/object/apply:os.system ['true']\n", "E003", "x.yaml:1:4"),
    "timestamp tag": (b"when: !!timestamp 2024-01-02\n", "E003", "x.yaml:1:7"),
    "binary tag": (b"blob: !!binary aGVsbG8=\n", "E003", "x.yaml:1:7"),
    "local tag": (b"x: !custom 1\n", "E003", "x.yaml:1:4"),
    "two documents": (b"id: a\n---\nid: b\n", "E003", "x.yaml:2:1"),
    "duplicate top key": (b"id: a\ntitle: t\nid: b\n", "E004", "x.yaml:3:1"),
    "duplicate nested key": (b"a:\n  - b: 1\n    c: 2\n    b: 3\n", "E004", "x.yaml:4:5"),
    "deep nesting": (b"a: " + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5), "E005", "x.yaml:1:"),
    "very deep flow nesting": (b"[" * 100_000, "E005", "x.yaml:1:"),
    "too large": (b"a: '" + b"x" * MAX_BYTES + b"'\n", "E001", "x.yaml"),
    "invalid utf-8": (b"id: caf\xe9\n", "E001", "x.yaml:1:8"),
    "nul byte": (b"id: a\x00b\n", "E001", "x.yaml:1:6"),
    # the line and column of a bad byte count every newline before it, the first byte's too
    "invalid utf-8 first": (b"\xff: a\n", "E001", "x.yaml:1:1:"),
    "invalid utf-8 after a blank first line": (b"\nid: caf\xe9\n", "E001", "x.yaml:2:8:"),
    "invalid utf-8 lines down": (b"a: 1\nb: 2\n\nc: \xc3\n", "E001", "x.yaml:4:4:"),
    "nul byte at a line start": (b"\n\x00\n", "E001", "x.yaml:2:1:"),
    "nul byte first": (b"\x00\n", "E001", "x.yaml:1:1:"),
    "empty": (b"", "E006", "x.yaml"),
    "only whitespace": (b"   \n\n", "E006", "x.yaml"),
    "only comments": (b"# nothing here\n", "E006", "x.yaml"),
    "syntax error": (b"a: [1, 2\nb: 3\n", "E002", "x.yaml:2:"),
    "tab indentation": (b"a:\n\t- b\n", "E002", "x.yaml:2:"),
    "complex key": (b"? [a, b]\n: c\n", "E002", "x.yaml:1:"),
}


def load_bytes(tmp_path: Path, content: bytes) -> list[str]:
    path = tmp_path / "x.yaml"
    path.write_bytes(content)
    try:
        read(Path("x.yaml"))
    except NanopediaError as err:
        return [str(p) for p in err.problems]
    return []


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_refused_with_location(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    content, code, where = HOSTILE[name]
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.perf_counter()
    found = load_bytes(tmp_path, content)
    elapsed = time.perf_counter() - start
    assert len(found) == 1, found
    assert f"error[{code}]" in found[0]
    assert found[0].startswith(where), found[0]
    assert elapsed < 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "x.yaml"])


#: What a contributor reads for the refusals of the file itself, word for word.
SAID = {
    "too large": f"x.yaml: error[E001]: file is over the {MAX_BYTES} byte limit\n"
    "    hint: split long text or move large logs out of the entry",
    "invalid utf-8": "x.yaml:1:8: error[E001]: invalid UTF-8\n    hint: save the file as UTF-8",
    "nul byte": "x.yaml:1:6: error[E001]: NUL byte in file",
    "empty": "x.yaml: error[E006]: the file is empty\n    hint: an entry is a YAML mapping",
    "only comments": "x.yaml: error[E006]: the file has no content\n"
    "    hint: an entry is a YAML mapping",
}


@pytest.mark.parametrize("name", sorted(SAID))
def test_a_file_refused_whole_is_told_why_and_what_to_do(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_bytes(tmp_path, HOSTILE[name][0]) == [SAID[name]]


def test_symlink_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real.yaml").write_text("id: a\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    with pytest.raises(NanopediaError) as err:
        read(Path("link.yaml"))
    assert str(err.value).startswith("link.yaml: error[E001]: symlinks are not allowed")


def test_scalars_stay_text() -> None:
    doc = parse("a: no\nb: 1.10\nc: 2024-01-02\nd: 0x10\ne: ~\nf:\ng: '~'\n", "x.yaml")
    assert doc.data == {
        "a": "no",
        "b": "1.10",
        "c": "2024-01-02",
        "d": "0x10",
        "e": None,
        "f": None,
        "g": "~",
    }


def test_marks_are_one_based_and_keep_keys() -> None:
    doc = parse("a:\n  - x: 1\n    y: |\n      text\n", "x.yaml")
    assert doc.marks[("a", 0, "x")] == (2, 8)
    assert doc.key_marks[("a", 0, "y")] == (3, 5)
    assert ("a", 0, "y") in doc.blocks


def test_bom_is_ignored() -> None:
    assert decode("\ufeffid: a\n".encode(), "x.yaml") == "id: a\n"


YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises_anything_else(text: str) -> None:
    run_check(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_else(raw: bytes) -> None:
    run_check(raw)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(YAML_VALUES)
def test_arbitrary_yaml_never_raises_anything_else(value: object) -> None:
    run_check(yaml.safe_dump(value, allow_unicode=True).encode())


def run_check(raw: bytes) -> None:
    """Decode, parse and validate; only NanopediaError may escape, and it must be located."""
    try:
        doc = parse(decode(raw, "x.yaml"), "x.yaml")
        check_entry(doc, "x")
    except NanopediaError as err:
        assert err.problems and all(p.location.path == "x.yaml" for p in err.problems)
