"""Reading entry files: the only module that touches `entries/` on disk.

Entries are untrusted input from strangers, so YAML is read from the parser's event stream
(libyaml when available) instead of a constructor: nothing is ever instantiated from a tag,
anchors and aliases are refused outright (no billion laughs), duplicate keys are errors at any
depth, and every scalar stays a string until the schema converts it, so `no`, `1.10` and
`2024-01-02` mean what the author typed. Every value keeps its line and column for error messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import NanopediaError, Problem, problem

MAX_BYTES = 256 * 1024
MAX_DEPTH = 12
NULLS = frozenset({"", "~", "null", "Null", "NULL"})

try:  # libyaml is about 14 times faster; the pure-Python parser is the fallback.
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

Path_ = tuple[str | int, ...]

_SCALAR, _MAPPING, _SEQUENCE = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
_MAPPING_END, _SEQUENCE_END = yaml.MappingEndEvent, yaml.SequenceEndEvent
_DOCUMENT_START, _ALIAS = yaml.DocumentStartEvent, yaml.AliasEvent


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed YAML file: plain data plus the `(line, col)` of every value and key."""

    path: str
    data: Any
    marks: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    """1-based position of the value at each path (keys and list indices from the root)."""
    key_marks: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    """1-based position of the mapping key that introduces the value at each path."""
    blocks: frozenset[Path_] = frozenset()
    """Paths of block scalars (`|`, `>`), whose text starts on the line after the indicator."""

    def position(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        """Where `path` is written, falling back to the nearest written ancestor."""
        path = tuple(path)
        while True:
            if key and path in self.key_marks:
                return self.key_marks[path]
            if path in self.marks:
                return self.marks[path]
            if not path:
                return (1, 1)
            path = path[:-1]


class _Refused(Exception):
    def __init__(self, found: Problem) -> None:
        self.problem = found


def _mark(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1)


def parse(text: str, path: str) -> Document:
    """Parse one YAML document from a string into plain data with marks, or raise located errors."""
    marks: dict[Path_, tuple[int, int]] = {}
    key_marks: dict[Path_, tuple[int, int]] = {}
    blocks: set[Path_] = set()

    def refuse(event: Any, code: str, message: str, hint: str | None = None) -> _Refused:
        line, col = _mark(event.start_mark)
        return _Refused(problem(path, line, col, code, message, hint))

    try:
        loader = _Loader(text)  # the pure-Python reader refuses some text here already
        try:
            data = _document(iter(loader.get_event, None), marks, key_marks, blocks, refuse)
        finally:
            loader.dispose()
    except _Refused as err:
        raise NanopediaError([err.problem]) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, col = _mark(mark) if mark else (1, 1)
        message = f"invalid YAML: {err.problem or err.context}"
        if "nesting depth" in message:  # libyaml's own limit, far beyond ours
            hint = "entries are shallow; check the brackets"
            raise NanopediaError([problem(path, line, col, "E005", message, hint)]) from None
        hint = "check the indentation and quote values that contain ': ' or start with a symbol"
        raise NanopediaError([problem(path, line, col, "E002", message, hint)]) from None
    except yaml.YAMLError as err:  # reader errors carry no mark of the MarkedYAMLError kind
        raise NanopediaError([problem(path, 1, 1, "E002", f"invalid YAML: {err}")]) from None
    if data is None:
        raise NanopediaError(
            [problem(path, 0, 0, "E006", "the file has no content", "an entry is a YAML mapping")]
        )
    return Document(path, data, marks, key_marks, frozenset(blocks))


def _document(events: Iterator[Any], marks: dict, key_marks: dict, blocks: set,
              refuse: Any) -> Any:
    """Build plain data from the event stream; the one place the YAML structure is interpreted.

    Dispatches on the exact event class and keeps the innermost container in locals: this loop
    runs for every scalar of every entry (it was a tenth of a cold build as `isinstance` chains
    and a helper per value)."""
    data: Any = None
    documents = 0
    stack: list[tuple[Any, Path_]] = []  # every open container with its path, innermost last
    top: Any = None  # the innermost open container
    top_path: Path_ = ()
    key: str | None = None  # the key waiting for its value, when `top` is a mapping
    key_mark = (0, 0)
    for event in events:
        kind = event.__class__
        if kind is _SCALAR or kind is _MAPPING or kind is _SEQUENCE:
            if event.anchor is not None:
                raise refuse(
                    event,
                    "E003",
                    f"YAML anchor '&{event.anchor}' is not allowed",
                    "write the value out",
                )
            if event.tag is not None:
                raise refuse(
                    event,
                    "E003",
                    f"explicit YAML tag '{event.tag}' is not allowed",
                    "remove the tag; values are read as plain text",
                )
            mark = event.start_mark
            at = (mark.line + 1, mark.column + 1)
            if key is None and top.__class__ is dict:  # this node is a key
                if kind is not _SCALAR:
                    raise refuse(event, "E002", "mapping keys must be plain text", None)
                key = event.value
                if key in top:
                    first = key_marks.get((*top_path, key), (0, 0))
                    raise refuse(
                        event,
                        "E004",
                        f"duplicate key '{key}'",
                        f"'{key}' is already set at line {first[0]}; keep one",
                    )
                key_mark = at
                continue
            value: Any
            if kind is _SCALAR:
                value = event.value
                if value in NULLS and event.implicit[0] and event.style in (None, ""):
                    value = None
            else:
                if len(stack) >= MAX_DEPTH:
                    raise refuse(
                        event,
                        "E005",
                        f"nesting deeper than {MAX_DEPTH} levels",
                        "entries are shallow; check the indentation",
                    )
                value = {} if kind is _MAPPING else []
            vpath: Path_
            if top is None:
                data = value
                vpath = ()
            elif key is None:  # in a sequence
                vpath = (*top_path, len(top))
                top.append(value)
            else:
                vpath = (*top_path, key)
                top[key] = value
                key_marks[vpath] = key_mark
                key = None
            marks[vpath] = at
            if kind is _SCALAR:
                if event.style in ("|", ">"):
                    blocks.add(vpath)
            else:
                stack.append((value, vpath))
                top, top_path = value, vpath
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            stack.pop()
            top, top_path = stack[-1] if stack else (None, ())
        elif kind is _DOCUMENT_START:
            documents += 1
            if documents > 1:
                raise refuse(
                    event, "E003", "several YAML documents in one file", "keep one entry per file"
                )
        elif kind is _ALIAS:
            raise refuse(
                event, "E003", f"YAML alias '*{event.anchor}' is not allowed", "write the value out"
            )
    return data


def decode(raw: bytes, path: str) -> str:
    """Bytes to text with the same located refusals for every source (file, stdin, tests)."""
    if not raw.strip():
        raise NanopediaError(
            [problem(path, 0, 0, "E006", "the file is empty", "an entry is a YAML mapping")]
        )
    if len(raw) > MAX_BYTES:
        raise NanopediaError(
            [
                problem(
                    path,
                    0,
                    0,
                    "E001",
                    f"file is over the {MAX_BYTES} byte limit",
                    "split long text or move large logs out of the entry",
                )
            ]
        )
    nul = raw.find(b"\0")
    if nul >= 0:
        line, col = _byte_position(raw, nul)
        raise NanopediaError([problem(path, line, col, "E001", "NUL byte in file", None)])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line, col = _byte_position(raw, err.start)
        raise NanopediaError(
            [problem(path, line, col, "E001", "invalid UTF-8", "save the file as UTF-8")]
        ) from None
    return text.removeprefix("\ufeff")


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def read(path: Path, display: str | None = None) -> Document:
    """Read and parse one file; the thin I/O wrapper around `parse`."""
    shown = display or path.as_posix()
    if path.is_symlink():
        raise NanopediaError(
            [problem(shown, 0, 0, "E001", "symlinks are not allowed", "commit a regular file")]
        )
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as err:
        reason = f"cannot read file: {err.strerror}"
        raise NanopediaError([problem(shown, 0, 0, "E001", reason)]) from None
    return parse(decode(raw, shown), shown)
