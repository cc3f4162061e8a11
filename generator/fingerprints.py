"""Fingerprint patterns: the portable regex subset and the checks `check` runs on them.

Patterns come from strangers and run on logs of hundreds of MB both in Python (RE2) and in the
browser (JavaScript RegExp). The subset below means the same in both engines, matched line by line:
no backreferences, no lookaround, no inline flags or named groups (case-insensitivity is the
`ignore_case` field), ASCII escapes only, no anchors other than `^` and `$`.
"""

from __future__ import annotations

import random
import time
import zlib

import re2

from .model import Fingerprint

_ESCAPES = frozenset("dDwWsSbBtfv")
_PUNCT = frozenset("\\^$.|?*+()[]{}-/ :#'\"=,<>!@%&~`;_")


def portable_error(pattern: str) -> str | None:
    """Why `pattern` is outside the portable subset, or None when it is inside."""
    i = 0
    in_class = False
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                return "the pattern ends with a lone backslash"
            nxt = pattern[i + 1]
            if nxt == "x":
                if not re2_hex(pattern[i + 2 : i + 4]):
                    return "\\x must be followed by two hex digits (\\x{...} is not portable)"
                i += 4
                continue
            if nxt.isdigit():
                return f"backreference or octal escape '\\{nxt}' is not portable"
            if nxt not in _ESCAPES and nxt not in _PUNCT:
                return f"escape '\\{nxt}' is not in the portable subset"
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern[i + 1 : i + 2] == ":":
                return "POSIX classes like [[:alpha:]] are not portable"
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a literal ']' first in a class
                i += 1
        elif ch == "(" and pattern[i + 1 : i + 2] == "?":
            if pattern[i + 2 : i + 3] != ":":
                return (
                    "only non-capturing groups '(?:...)' are portable"
                    " (no flags, names or lookaround)"
                )
        elif ch == "^":
            return ("'^' anchors the pattern to the start of a line, but real log lines carry "
                    "rank and launcher prefixes, timestamps and pasted markup (use \\^ for the "
                    "character itself)")
        i += 1
    if in_class:
        return "unterminated character class"
    return None


def re2_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def compile_pattern(fp: Fingerprint) -> re2._Regexp:
    """The RE2 program for one fingerprint, with the same options diagnosis uses."""
    options = re2.Options()
    options.case_sensitive = not fp.ignore_case
    options.never_nl = True
    options.log_errors = False
    return re2.compile(fp.pattern, options)


def pattern_error(fp: Fingerprint) -> str | None:
    """Why the pattern cannot be used (outside the subset, or RE2 refuses it), or None."""
    reason = portable_error(fp.pattern)
    if reason:
        return reason
    try:
        compile_pattern(fp)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return f"RE2 cannot compile it: {detail}"
    return None


#: Size of the generated adversarial log each pattern is timed on at `check` time.
ADVERSARIAL_BYTES = 256 * 1024
#: Slowest scan rate a pattern may have on that log (bytes/s). Specific patterns run at 400+ MB/s
#: here; one at 100 MB/s alone would halve the rate of the whole diagnosis set (target 200 MB/s).
MIN_RATE = 100e6
CHECK_BUDGET_S = ADVERSARIAL_BYTES / MIN_RATE


def line_program(fp: Fingerprint) -> str:
    """The pattern as diagnosis compiles it: multi-line anchors, case folding as the field says.

    Diagnosis matches whole buffers of lines at once, so `^`/`$` must mean line boundaries and
    `never_nl` (in `scan_options`) keeps every match inside one line.
    """
    return ("(?mi)" if fp.ignore_case else "(?m)") + fp.pattern


def scan_options() -> re2.Options:
    """RE2 options for buffer-at-a-time scanning: no match crosses a newline, room for the DFA."""
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    options.max_mem = 256 << 20
    return options


def adversarial_log(fp: Fingerprint, size: int = ADVERSARIAL_BYTES) -> bytes:
    """A deterministic log built to make one pattern work hard.

    Linear-time engines are still slow when a pattern's automaton explodes (counted repetitions,
    wide classes in sequence): the DFA cache thrashes and RE2 falls back to its NFA. Text that
    drives the automaton deep and then fails exposes that: near misses of the pattern's own
    examples (every prefix with its next character changed), the examples repeated inside long
    lines, and long random lines over the examples' alphabet. The seed is the pattern itself, so
    `check` gives the same verdict on every run.
    """
    rnd = random.Random(zlib.crc32(fp.pattern.encode()))
    common = set("abcdefghijklmnopqrstuvwxyz0123456789 ._:-")
    alphabet = sorted(c for c in set("".join(fp.must_match)) | common if c.isascii() and c >= " ")
    lines: list[str] = []
    for example in fp.must_match:
        for cut in range(1, len(example), max(1, len(example) // 64)):
            lines.append(example[:cut] + rnd.choice(alphabet) + example[cut + 1 :])
        lines.append(" ".join([example] * max(1, 4096 // len(example))))
    head = "\n".join(lines).encode()[:size]
    # Random bytes mapped onto the alphabet (fast), cut into 4 KiB lines.
    table = bytes(ord(alphabet[i % len(alphabet)]) % 128 for i in range(256))
    noise = rnd.randbytes(max(0, size - len(head))).translate(table)
    body = b"\n".join(noise[i : i + 4096] for i in range(0, len(noise), 4096))
    return (head + b"\n" + body)[:size]


def scan_seconds(fp: Fingerprint, log: bytes, tries: int = 3) -> float:
    """Best-of-`tries` CPU time to scan `log` with the pattern the way diagnosis does (an RE2 set).

    CPU time of this thread, not wall time: a busy machine (parallel tests, CI neighbours) delays
    the scan but does not make it cost more, so the verdict does not depend on the load. A fast
    first run returns at once; only a run over budget is repeated, each with a freshly compiled
    program: RE2 keeps the DFA states a scan built, so a second scan of the same 256 KiB is fast
    even for a pattern whose automaton explodes on every new log (google-re2 1.1.20251105: 200 ms
    cold, 2 ms warm for `[a-z][^X]{25}Q`).
    """
    best = float("inf")
    for _ in range(tries):
        program = re2.Set.SearchSet(scan_options())
        program.Add(line_program(fp))
        program.Compile()
        start = time.thread_time()
        program.Match(log)
        best = min(best, time.thread_time() - start)
        if best <= CHECK_BUDGET_S:
            break
    return best


def slowness_error(fp: Fingerprint) -> str | None:
    """Why the pattern is too slow for diagnosis (over budget on its adversarial log), or None."""
    seconds = scan_seconds(fp, adversarial_log(fp))
    if seconds <= CHECK_BUDGET_S:
        return None
    rate = ADVERSARIAL_BYTES / seconds / 1e6
    return (
        f"pattern is too slow: {seconds * 1000:.1f} ms on a {ADVERSARIAL_BYTES // 1024} KiB "
        f"adversarial log ({rate:.0f} MB/s, at least {MIN_RATE / 1e6:.0f} MB/s needed)"
    )


def backtracking_error(pattern: str) -> str | None:
    """Why the pattern could backtrack exponentially in JavaScript, or None.

    RE2 is linear whatever the pattern, but the browser page runs the same pattern on a
    backtracking engine, where a repeated group that itself contains an unbounded repetition,
    like `(?:a+)+` or `(?:\\w+\\s?)*`, can take exponential time on a line that almost matches.
    """
    groups: list[bool] = []  # per open group: does it contain an unbounded repetition?
    inner = False  # the last closed group contained one
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        unbounded = ch in "*+" or (ch == "{" and is_open_count(pattern, i))
        if ch == "\\":
            i += 2
            inner = False
            continue
        if ch == "[":
            i = class_end(pattern, i)
            inner = False
            continue
        if ch == "(":
            groups.append(False)
        elif ch == ")" and groups:
            inner = groups.pop()
            if groups and inner:
                groups[-1] = True
            i += 1
            continue
        elif unbounded:
            if inner:
                return (
                    "a repeated group contains an unbounded repetition (like '(?:a+)+'), "
                    "which backtracks exponentially in the browser"
                )
            if groups:
                groups[-1] = True
        inner = False
        i += 1
    return None


def is_open_count(pattern: str, i: int) -> bool:
    """Whether the `{` at `i` opens an unbounded count like `{2,}`."""
    end = pattern.find("}", i)
    body = pattern[i + 1 : end] if end > i else ""
    return body.endswith(",") and body[:-1].isdigit()


def class_end(pattern: str, i: int) -> int:
    """Index just past the character class opening at `i` (escapes and a leading `]` skipped)."""
    j = i + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def literal_length(pattern: str) -> int:
    r"""How many characters of `pattern` are fixed text: escaped punctuation, `\t` and `\xHH`
    count, classes, class escapes, groups, counts and quantifiers do not. Diagnosis breaks a tie
    between two entries by this (the more specific pattern wins), in both engines, from exported
    data."""
    n, i = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            n += nxt in "tx" or not nxt.isalnum()
            i += 4 if nxt == "x" else 2
        elif ch == "[":
            i = class_end(pattern, i)
        elif ch == "{":
            end = pattern.find("}", i)
            i = end + 1 if end > i else i + 1
        elif pattern.startswith("(?:", i):
            i += 3
        else:
            n += ch not in "()|?*+.^$"
            i += 1
    return n
