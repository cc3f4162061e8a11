"""Which fingerprints occur in a buffer of a log: the first question a scan asks of every buffer.

RE2's set answers it (`re2_set`) at about 600 MB/s a core on this machine, whatever the number of
patterns (its lazy DFA walks a table per byte), and builds its DFA states on the first megabytes
each process reads (about 0.1 s for the shipped entries). Hyperscan's block-mode database of the
same patterns, each cut to start at its first text (`from_text`), answers at about 1 GB/s and is
compiled ahead (0.4 s, then read back from the cache in a millisecond), so a log of gigabytes
takes it (`accelerated`; the CLI asks for it when a log is at least `ACCELERATE_BYTES`).
Measured with `bench/diagnose_throughput.py --cli`.

The database is compiled in Hyperscan's prefilter mode, so its answer may name a pattern that does
not occur (a construct it widens; a class such as `\\s` that crosses a newline, which RE2's
`never_nl` does not), never leave one out: `scan` locates every named pattern with its own RE2
program, which decides. RE2 reads UTF-8, where `.` or `[^"]` is one character of up to four
bytes, and Hyperscan reads bytes, so each program is first widened (`bytewise`): an atom that can
match a character over 0x7F matches one to four bytes, and the answer holds on any text.

Hyperscan ships wheels for x86-64 Linux and arm64 macOS; elsewhere the package is not installed
and the RE2 set answers every buffer.
"""

from __future__ import annotations

import hashlib
import platform
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import re2

from nanopedia.content.fingerprints import scan_options
from nanopedia.content.portable import class_end

#: A log at least this large is scanned with the compiled database: below it, its compilation on
#: a cold cache costs more than it saves.
ACCELERATE_BYTES = 64 << 20

#: What answers the question: the indices of the patterns a buffer may hold, ascending.
Presence = Callable[[Any], list[int]]


class Store(Protocol):
    """Where a compiled database is kept between runs (`incremental.catalogue.FolderStore`)."""

    def get(self, name: str) -> bytes | None: ...

    def put(self, name: str, data: bytes) -> None: ...


def re2_set(programs: Sequence[str]) -> re2.Set:
    """One RE2 set of every program, exact: the patterns it names occur in the buffer."""
    found = re2.Set.SearchSet(scan_options())
    for program in programs:
        found.Add(program)
    found.Compile()
    return found


def exact(programs: re2.Set) -> Presence:
    """The RE2 set's answer, as a sorted list (it gives None when nothing occurs)."""

    def present(data: Any) -> list[int]:
        return sorted(programs.Match(data) or [])

    return present


def accelerated(programs: Sequence[str], store: Store | None) -> Presence | None:
    """Hyperscan's answer; None when Hyperscan is not installed or a program cannot be widened
    or compiled (the RE2 set then answers alone). The compiled database is kept in `store`
    (None: compiled every time)."""
    try:
        import hyperscan
    except ImportError:
        return None
    wide = []
    for program in programs:
        widened = bytewise(program)
        if widened is None:
            return None
        wide.append(from_text(widened))
    database = _database(hyperscan, wide, store)
    if database is None:
        return None

    def collect(index: int, _start: int, _end: int, _flags: int, found: list[int]) -> None:
        found.append(index)

    def present(data: Any) -> list[int]:
        found: list[int] = []
        database.scan(data, match_event_handler=collect, context=found)
        return sorted(found)

    return present


def bytewise(program: str) -> str | None:
    """`program` (valid for RE2) for a reader of bytes: each atom that can match a character over
    0x7F (`.`, a negated class, a class holding `\\S`, `\\W` or `\\D`, and those escapes)
    matches one to four bytes instead, so on any text it finds at least what RE2 finds reading
    UTF-8. None when the program holds what bytes cannot stand for: a character over 0x7F
    (`\\x{...}`, `\\xHH` from 80, a class of them, `\\p`, `\\C`, quoted text), or a flag that folds
    case or lets `.` take a newline."""
    if not program.isascii():
        return None
    out: list[str] = []
    i = 0
    while i < len(program):
        ch = program[i]
        if ch == "\\":
            nxt = program[i + 1 : i + 2]  # "" (a trailing backslash) is in every string
            if nxt in "pPCQ" or (nxt == "x" and _HIGH.match(program, i)):
                return None
            end = i + (4 if nxt == "x" else 2)
            out.append(f"(?:{program[i:end]}{{1,4}})" if nxt in _WIDE else program[i:end])
            i = end
        elif ch == "[":
            end = class_end(program, i)
            body = program[i:end]
            if "\\p" in body or "\\P" in body or _HIGH.search(body):
                return None
            wide = body.startswith("[^") or any("\\" + c in body for c in _WIDE)
            out.append(f"(?:{body}{{1,4}})" if wide else body)
            i = end
        elif ch == ".":
            out.append("(?:[^\\n]{1,4})")
            i += 1
        elif ch == "(" and (flags := _FLAGS.match(program, i)) is not None:
            if set(flags.group(1)) & set("is"):
                return None
            out.append(flags.group(0))
            i = flags.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def from_text(program: str) -> str:
    """`program` with each top-level alternative starting at its first atom of text (a character,
    a class that lists characters, such as `[lL]`, or a group each of whose alternatives holds
    three letters, digits or spaces in a row) that every match holds: wherever the program
    matches, what is left matches too, so the answer still names every pattern that occurs.

    Why: Hyperscan finds a pattern's literal first and checks the rest around each hit, and a
    leading context such as `(?:[^mM] |[^\\w ]|train_)loss` before frequent text makes it run a
    state machine over much of a log. Without such prefixes the shipped database reads a training
    log a quarter faster (`bench/diagnose_throughput.py --cli`). Flags (`(?m)`) are kept."""
    flags = ""
    while (flag := _SETS_FLAGS.match(program)) is not None:
        flags += flag.group(0)
        program = program[flag.end() :]
    branches = []
    for branch in _alternatives(program):
        atoms = list(_atoms(branch))
        first = next((n for n, (_, text) in enumerate(atoms) if text), 0)
        kept = [atom for atom, _ in atoms[:first] if _SETS_FLAGS.fullmatch(atom)]
        branches.append("".join(kept + [atom for atom, _ in atoms[first:]]))
    return flags + "|".join(branches)


def _alternatives(program: str) -> list[str]:
    """The top-level alternatives of `program` (split at each `|` outside groups and classes)."""
    parts: list[str] = []
    start = 0
    for i, ch, depth in _walk(program, 0):
        if ch == "|" and depth == 0:
            parts.append(program[start:i])
            start = i + 1
    return [*parts, program[start:]]


def _atoms(branch: str) -> Iterator[tuple[str, bool]]:
    """Each atom of a concatenation with its quantifier, and whether it is text every match
    holds (see `from_text`)."""
    i = 0
    while i < len(branch):
        ch = branch[i]
        if ch == "\\":
            end = i + (4 if branch[i + 1 : i + 2] == "x" else 2)
            text = not branch[i + 1 : i + 2].isalnum()
        elif ch == "[":
            end = class_end(branch, i)
            text = _LISTED.fullmatch(branch, i, end) is not None
        elif ch == "(":
            end = _group_end(branch, i)
            inner = branch[i + 1 : end - 1]
            text = all(_WORDS.search(alt) for alt in _alternatives(inner))
        else:
            end, text = i + 1, ch not in ".^$"
        count = _COUNT.match(branch, end)
        if count is not None:
            end = count.end()
            text = text and count.group(0)[0] not in "?*" and not count.group(0).startswith("{0")
        yield branch[i:end], text
        i = end


def _group_end(program: str, i: int) -> int:
    """Index just past the group opening at `i`."""
    return next(j + 1 for j, ch, depth in _walk(program, i) if ch == ")" and depth == 0)


def _walk(program: str, i: int) -> Iterator[tuple[int, str, int]]:
    """Each character of `program` from `i` on outside classes and escapes, with the depth of the
    groups it is in (an opening `(` counts itself, a closing `)` no longer does)."""
    depth = 0
    while i < len(program):
        ch = program[i]
        if ch == "[":
            i = class_end(program, i)
            continue
        if ch == "\\":
            i += 2
            continue
        depth += (ch == "(") - (ch == ")")
        yield i, ch, depth
        i += 1


#: Escapes of a class that holds every character over 0x7F.
_WIDE = "SWD"
#: `\\xHH` of a character over 0x7F, or `\\x{...}`.
_HIGH = re.compile(r"\\x(?:[89a-fA-F]|\{)")
#: A group's flags: `(?m)`, `(?i:`, `(?-s)`.
_FLAGS = re.compile(r"\(\?([A-Za-z-]*)[:)]")
#: Flags that hold for the rest of the group they are in: `(?m)`.
_SETS_FLAGS = re.compile(r"\(\?[A-Za-z-]*\)")
#: A quantifier, greedy or not.
_COUNT = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\})\??")
#: A class that lists characters: no negation, range or escape (`[lL]`, `['"]`).
_LISTED = re.compile(r"\[[^^\]\\-][^\]\\-]*\]")
#: Three letters, digits or spaces in a row: text a group's alternative must hold.
_WORDS = re.compile(r"[\w ]{3}")


def _database(hyperscan: Any, programs: list[str], store: Store | None) -> Any:
    """The block-mode database of `programs`, read from `store` when an earlier run compiled it
    (its bytes checked against the hash stored with them), else compiled and stored."""
    key = hashlib.sha256(
        "\0".join([hyperscan.__version__, platform.machine(), *programs]).encode()
    ).hexdigest()
    name = f"hyperscan-{key[:24]}.db"
    if store is not None:
        database = _loaded(hyperscan, store.get(name))
        if database is not None:
            return database
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH
    flags |= hyperscan.HS_FLAG_ALLOWEMPTY
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=[p.encode() for p in programs],
            ids=list(range(len(programs))),
            elements=len(programs),
            flags=[flags] * len(programs),
        )
    except hyperscan.error:
        return None
    database.scratch = hyperscan.Scratch(database)
    if store is not None:
        data = hyperscan.dumpb(database)
        store.put(name, hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
    return database


def _loaded(hyperscan: Any, stored: bytes | None) -> Any:
    """A stored database, or None when there is none or it is not what was stored."""
    if stored is None:
        return None
    digest, _, data = stored.partition(b"\n")
    if digest != hashlib.sha256(data).hexdigest().encode():
        return None
    try:
        database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
    except hyperscan.error:  # another CPU's database: compiled again
        return None
    return database
