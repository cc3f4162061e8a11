"""The portable subset of regular expressions, read from a pattern's text alone.

Patterns come from strangers and run on logs of hundreds of MB both in Python (RE2) and in the
browser (JavaScript RegExp). The subset here means the same in both engines, matched line by line:
no backreferences, no lookaround, no inline flags or named groups (case-insensitivity is the
`ignore_case` field, folded into the pattern by `fold_ascii`), ASCII escapes only, no anchors
other than `^` and `$`. Also here: the static refusal of patterns that backtrack exponentially in
the browser, and the pattern's fixed-text length that diagnosis breaks ties with. Nothing here
compiles a pattern: `nanopedia/content/fingerprints.py` does, and times it.
"""

from __future__ import annotations

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
            return (
                "'^' anchors the pattern to the start of a line, but real log lines carry "
                "rank and launcher prefixes, timestamps and pasted markup (use \\^ for the "
                "character itself)"
            )
        i += 1
    if in_class:
        return "unterminated character class"
    return None


def re2_hex(text: str) -> bool:
    """True for two hex digits: the only `\\x` escape both engines read alike."""
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


_CLASS_ESCAPES = frozenset("dDwWsS")
CONTROL_ESCAPES = {"t": 9, "f": 12, "v": 11}


def _class_atom(pattern: str, j: int) -> tuple[int | str, int]:
    """One member of a class at `j`: a code point, or a class escape such as `\\d` kept as
    text; and the index after it."""
    if pattern[j] != "\\":
        return ord(pattern[j]), j + 1
    nxt = pattern[j + 1 : j + 2]
    if nxt == "x" and re2_hex(pattern[j + 2 : j + 4]):
        return int(pattern[j + 2 : j + 4], 16), j + 4
    if nxt in CONTROL_ESCAPES:
        return CONTROL_ESCAPES[nxt], j + 2
    if nxt in _CLASS_ESCAPES or not nxt:
        return pattern[j : j + 2], j + 2
    return ord(nxt), j + 2


def class_members(pattern: str, i: int) -> tuple[bool, list[tuple[int, int] | str], int]:
    """The class opening at `i`: whether it is negated, its members (code point ranges, class
    escapes as text) and the index just past its `]`."""
    j = i + 1
    negated = pattern[j : j + 1] == "^"
    j += negated
    members: list[tuple[int, int] | str] = []
    first = True
    while j < len(pattern) and (first or pattern[j] != "]"):
        first = False
        low, j = _class_atom(pattern, j)
        if isinstance(low, int) and pattern[j : j + 1] == "-" and pattern[j + 1 : j + 2] not in "]":
            high, after = _class_atom(pattern, j + 1)
            if isinstance(high, int):
                members.append((low, high))
                j = after
                continue
        members.append(low if isinstance(low, str) else (low, low))
    return negated, members, j + 1


def _swapped(low: int, high: int) -> list[tuple[int, int]]:
    """The other case of the ASCII letters in a code point range."""
    out = []
    for start, end, shift in ((65, 90, 32), (97, 122, -32)):
        lo, hi = max(low, start), min(high, end)
        if lo <= hi:
            out.append((lo + shift, hi + shift))
    return out


def _class_char(cp: int) -> str:
    """A code point as class text both engines read literally."""
    ch = chr(cp)
    if ch.isascii() and ch.isalnum():
        return ch
    if cp <= 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    return "\\" + ch if ch.isascii() else ch


def fold_ascii(pattern: str) -> str:
    """`pattern` with each ASCII letter matching both its cases, as explicit classes: `k` becomes
    `[kK]`, `[a-c]` becomes `[a-cA-C]`, `[^x]` becomes `[^xX]`. Escapes, counts and groups hold
    no letters to fold (`\\d`, `\\b` are kept as they are)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            width = 4 if pattern[i + 1 : i + 2] == "x" else 2
            atom = pattern[i : i + width]
            letter = chr(int(atom[2:], 16)) if width == 4 and re2_hex(atom[2:]) else ""
            out.append(
                f"[{atom}{letter.swapcase()}]" if letter.isascii() and letter.isalpha() else atom
            )
            i += width
        elif ch == "[":
            negated, members, end = class_members(pattern, i)
            extra = [r for m in members if isinstance(m, tuple) for r in _swapped(*m)]
            if extra:
                body = "".join(
                    m
                    if isinstance(m, str)
                    else _class_char(m[0]) + ("-" + _class_char(m[1]) if m[1] > m[0] else "")
                    for m in [*members, *extra]
                )
                out.append("[" + "^" * negated + body + "]")
            else:
                out.append(pattern[i:end])
            i = end
        else:
            out.append(f"[{ch}{ch.swapcase()}]" if ch.isascii() and ch.isalpha() else ch)
            i += 1
    return "".join(out)


def is_count(pattern: str, i: int) -> bool:
    """Whether the `{` at `i` opens a count (`{3}`, `{2,}`, `{2,5}`), not a literal brace."""
    end = pattern.find("}", i)
    body = pattern[i + 1 : end] if end > i else ""
    low, _, high = body.partition(",")
    return low.isdigit() and (high == "" or high.isdigit())


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


def adjacent_repetition_error(pattern: str) -> str | None:
    """Why the pattern could backtrack polynomially in JavaScript, or None.

    Unbounded repetitions of shared characters with nothing between them that must match
    (`\\w+\\w+\\w+`, `\\s*\\s*\\s*`, `[a-z]*[a-y]*[b-z]*`, `\\d*\\.?\\d*\\.?\\d*`) can split a run
    of those characters in every way: each one multiplies the time a line that almost matches
    takes by the run's length, so four of them on a line of 1,000 characters hold the browser for
    seconds (RE2 stays linear). Three are refused, and two where nothing must match before them
    (every start of the line is one more factor); two after fixed text (`loss\\s*[:=]?\\s*nan`)
    cost only the square of one run.
    """
    chains: list[list[frozenset[str]]] = [[]]  # per open group: the repetitions in a row
    leads = [False]  # per open group: its run began with nothing that must match before it
    fixed_before = False  # something that must match came before (the line's start is no factor)
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "(":
            chains.append([])
            leads.append(False)
            i += 3 if pattern.startswith("(?:", i) else 1
            continue
        if ch == ")":
            if len(chains) > 1:
                chains.pop()
                leads.pop()
            chains[-1] = []  # a group is one opaque atom: a run stops at it
            low, _, i = _quantifier(pattern, i + 1)
            fixed_before = fixed_before or (low > 0 and len(chains) == 1)
            continue
        if ch == "|":
            chains[-1] = []
            if len(chains) == 1:
                fixed_before = False
            i += 1
            continue
        if ch in "^$":
            i += 1
            continue
        if ch == "\\":
            end = i + (4 if pattern[i + 1 : i + 2] == "x" else 2)
            if pattern[i + 1 : i + 2] in ("b", "B"):  # zero-width: skipped like an optional atom
                i = end
                continue
        elif ch == "[":
            end = class_end(pattern, i)
        else:
            end = i + 1
        low, high, after = _quantifier(pattern, end)
        if high is None:
            chars = _members(pattern[i:end])
            run = chains[-1]
            shared = frozenset.intersection(chars, *run)
            if not run:
                leads[-1] = not fixed_before
            chains[-1] = run = (
                [*run, chars]
                if shared
                else ([run[-1], chars] if run and run[-1] & chars else [chars])
            )
            if len(run) >= 3 or (len(run) == 2 and leads[-1]):
                return (
                    f"{len(run)} unbounded repetitions of shared characters follow each other "
                    f"('{pattern[:after]}', like '\\w+\\w+\\w+'), which backtracks "
                    "polynomially in the browser"
                )
        elif low > 0:
            chains[-1] = []
        if low > 0 and len(chains) == 1:
            fixed_before = True
        i = after
    return None


def _quantifier(pattern: str, i: int) -> tuple[int, int | None, int]:
    """(least, most or None for unbounded, index past it) of the quantifier at `i`, lazy or
    not; (1, 1, i) when there is none."""
    ch = pattern[i : i + 1]
    if ch in ("*", "+", "?"):
        low, high, end = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch] + (i + 1,)
    elif ch == "{" and is_count(pattern, i):
        close = pattern.index("}", i)
        first, comma, second = pattern[i + 1 : close].partition(",")
        low, end = int(first), close + 1
        high = int(first) if not comma else (int(second) if second else None)
    else:
        return 1, 1, i
    if pattern[end : end + 1] == "?":
        end += 1
    return low, high, end


def _after_quantifier(pattern: str, i: int) -> int:
    return _quantifier(pattern, i)[2]


#: Characters an atom is tried on to tell whether two atoms overlap: ASCII and a few others.
_SAMPLE = [chr(c) for c in range(1, 128)] + ["\u00e9", "\u00a0", "\u4e2d", "\u2028"]


def _members(atom: str) -> frozenset[str]:
    """The sample characters an atom (a literal, an escape, `.` or a class) matches, as
    JavaScript reads it (ASCII `\\w`, `\\d`)."""
    import re

    try:
        regex = re.compile(atom, re.ASCII)
    except re.error:
        return frozenset(_SAMPLE)  # unknown: assume it overlaps everything
    return frozenset(c for c in _SAMPLE if regex.fullmatch(c))


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
