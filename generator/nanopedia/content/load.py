"""Reading entry files: the only module that touches `entries/` on disk.

Entries are untrusted input from strangers, so YAML is read from the parser's event stream
(libyaml when available) instead of a constructor: nothing is ever instantiated from a tag,
anchors and aliases are refused outright (no billion laughs), duplicate keys are errors at any
depth, and every scalar stays a string until the schema converts it, so `no`, `1.10` and
`2024-01-02` mean what the author typed. Every value keeps its line and column for error messages.

No string that reaches the model holds a control character (but tab and newline) or a
bidirectional override: `"\\0"` or `"\\e"` written as YAML escapes, or U+202E typed raw, would
reach every page, feed and terminal that shows the text (E018).

Files are read through `read_file` alone (the build hashes them with it too): only a regular file
is opened, never a symlink, FIFO, device or socket (a FIFO blocks `open()` forever, `/dev/zero`
never ends), and never more than `MAX_BYTES + 1` bytes of it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nanopedia.errors import NanopediaError, Problem, fail, problem

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
        return _Refused(problem(path, code, message, hint, at=(line, col)))

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
            fail(path, "E005", message, hint, at=(line, col))
        hint = "check the indentation and quote values that contain ': ' or start with a symbol"
        fail(path, "E002", message, hint, at=(line, col))
    except yaml.YAMLError as err:  # reader errors carry no mark of the MarkedYAMLError kind
        fail(path, "E002", f"invalid YAML: {err}", at=(1, 1))
    if data is None:
        raise NanopediaError(
            [problem(path, "E006", "the file has no content", "an entry is a YAML mapping")]
        )
    if _MAY_HIDE.search(text) is not None:  # rarely: only then is every string looked at
        hidden = _hidden_problems(text, path, data, marks, key_marks, blocks)
        if hidden:
            raise NanopediaError(hidden)
    return Document(path, data, marks, key_marks, frozenset(blocks))


HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What no text may hold: the control characters (Unicode `Cc`) but tab and newline, and the
bidirectional embeddings, overrides and isolates, which reorder how the text around them is
shown ("Trojan Source", CVE-2021-42574; the set rustc and GCC warn of). The marks U+200E,
U+200F and U+061C are allowed: they reorder nothing but neutral characters beside them, and
right-to-left text needs them."""
_MAY_HIDE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\\\\[0abvfrexuUN]"
)
"""A file in which a string may hold one of `HIDDEN`: the character typed raw, or a double-quoted
YAML escape that makes one (a raw CR is a line break, never part of a value)."""
_C0 = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB "
    "CAN EM SUB ESC FS GS RS US"
).split()
_BIDI = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING",
    "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING",
    "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
    "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
}


def dotted(path: Path_) -> str:
    """`symptoms[2].cause`: how a path is named in messages."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the file"


def hidden_character(char: str) -> tuple[str, str]:
    """How a character of `HIDDEN` is named in a message, and the hint that goes with it."""
    code = f"U+{ord(char):04X}"
    if char in _BIDI:
        return (
            f"{code} {_BIDI[char]}, a bidirectional control that reorders the text shown",
            "delete it: it is invisible and makes the text read differently than it is",
        )
    name = f" ({_C0[ord(char)]})" if ord(char) < len(_C0) else ""
    return (
        f"the control character {code}{name}",
        "remove it: text may hold tab and newline, no other control character",
    )


def _hidden_problems(
    text: str,
    path: str,
    data: Any,
    marks: dict[Path_, tuple[int, int]],
    key_marks: dict[Path_, tuple[int, int]],
    blocks: set[Path_],
) -> list[Problem]:
    """One problem for each key or string value that holds a character of `HIDDEN`."""
    lines = text.split("\n")
    found: list[Problem] = []

    def report(where: Path_, value: str, at: tuple[int, int], block: bool, key: bool) -> None:
        match = HIDDEN.search(value)
        if match is None:
            return
        char = match.group()
        line, col = at
        first = line + 1 if block else line
        last = first + value.count("\n", 0, match.start()) + 1
        for number in range(first, min(last, len(lines)) + 1):  # where it is typed, if raw
            index = lines[number - 1].find(char, col - 1 if number == line else 0)
            if index >= 0:
                line, col = number, index + 1
                break
        what, hint = hidden_character(char)
        shown = HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", value)  # never the character
        name = f"the key '{shown}'" if key else f"'{dotted(where)}'"
        found.append(problem(path, "E018", f"{name} holds {what}", hint, at=(line, col)))

    stack: list[tuple[Path_, Any]] = [((), data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for name, item in value.items():
                inner = (*where, name)
                report(inner, name, key_marks.get(inner, (1, 1)), False, True)
                stack.append((inner, item))
        elif isinstance(value, list):
            stack.extend(((*where, i), item) for i, item in enumerate(value))
        elif isinstance(value, str):
            report(where, value, marks.get(where, (1, 1)), where in blocks, False)
    return found


def _document(
    events: Iterator[Any],
    marks: dict[Path_, tuple[int, int]],
    key_marks: dict[Path_, tuple[int, int]],
    blocks: set[Path_],
    refuse: Any,
) -> Any:
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
            [problem(path, "E006", "the file is empty", "an entry is a YAML mapping")]
        )
    if len(raw) > MAX_BYTES:
        raise NanopediaError(
            [
                problem(
                    path,
                    "E001",
                    f"file is over the {MAX_BYTES} byte limit",
                    "split long text or move large logs out of the entry",
                )
            ]
        )
    nul = raw.find(b"\0")
    if nul >= 0:
        line, col = _byte_position(raw, nul)
        fail(path, "E001", "NUL byte in file", None, at=(line, col))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line, col = _byte_position(raw, err.start)
        raise NanopediaError(
            [problem(path, "E001", "invalid UTF-8", "save the file as UTF-8", at=(line, col))]
        ) from None
    return text.removeprefix("\ufeff")


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


_KINDS = {
    stat.S_IFLNK: "a symlink",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _refusal(mode: int, shown: str) -> NanopediaError:
    """The refusal of anything but a regular file, naming what it is."""
    if stat.S_ISLNK(mode):
        message = "symlinks are not allowed"
    else:
        message = f"not a regular file: {_KINDS.get(stat.S_IFMT(mode), 'not a file')}"
    return NanopediaError([problem(shown, "E001", message, "commit a regular file")])


def read_file(path: str | os.PathLike[str], shown: str, dir_fd: int | None = None) -> bytes:
    """The bytes of one entry file, at most `MAX_BYTES + 1` of them (`decode` refuses more),
    or a located E001. `path` is relative to the folder `dir_fd` when that is given.

    `lstat` first, so a FIFO or a device is never opened (opening either can block or act);
    then `O_NOFOLLOW | O_NONBLOCK` and `fstat`, so a file swapped for another kind in between is
    still refused: the open neither follows a new symlink nor waits for a FIFO's writer."""
    try:
        mode = os.lstat(path, dir_fd=dir_fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refusal(mode, shown)
        fd = os.open(path, _FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:  # swapped for a symlink after the lstat
            raise _refusal(stat.S_IFLNK, shown) from None
        reason = f"cannot read file: {err.strerror}"
        fail(shown, "E001", reason)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refusal(info.st_mode, shown)
        chunks: list[bytes] = []
        left = MAX_BYTES + 1
        while left > 0:  # one read for a file whose size stays as stat'ed
            want = min(left, max(info.st_size + 1, 4096))
            chunk = os.read(fd, want)
            chunks.append(chunk)
            left -= len(chunk)
            if len(chunk) < want:  # a short read of a regular file: its end
                break
    except OSError as err:
        reason = f"cannot read file: {err.strerror}"
        fail(shown, "E001", reason)
    finally:
        os.close(fd)
    return b"".join(chunks)


_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read(path: Path, display: str | None = None) -> Document:
    """Read and parse one file; the thin I/O wrapper around `parse`."""
    shown = display or path.as_posix()
    return parse(decode(read_file(path, shown), shown), shown)
