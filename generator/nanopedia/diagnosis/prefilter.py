"""The literal prefilter: which entries can match a small log, found without compiling their
patterns.

Compiling one RE2 set of every fingerprint costs more than reading a one-screen log, and grows
with every entry. Each fingerprint's required literal text (`literals`, the browser worker's rule,
mirrored) is computed once, when the catalogue is compiled, into an `Index` stored with it; a
diagnosis of a small log then compiles only the entries one of whose fingerprints has all the
literals of some alternative in the log (or has no literals at all). The test is conservative: an
entry left out cannot match, so the answer is the one the whole set gives.

The index is looked up by the 3-character prefixes of the log, so its cost follows the log's
size and the literals found, not the number of entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nanopedia.content.portable import class_end

#: Shortest literal worth a prefilter: shorter ones occur everywhere.
MIN_LITERAL = 3
#: Literals are cut to this length (a prefix of a required text is required too).
MAX_LITERAL = 12
_PUNCTUATION = re.compile(r"[\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]")


def unwrap(p: str) -> str:
    """`(?:a|b)` around a whole pattern is `a|b`."""
    while p[:3] == "(?:":
        depth, close, j = 0, -1, 0
        while j < len(p) and close < 0:
            if p[j] == "\\":
                j += 1
            elif p[j] == "[":
                j = class_end(p, j) - 1  # at the class's `]`
            elif p[j] == "(":
                depth += 1
            elif p[j] == ")":
                depth -= 1
                if depth == 0:
                    close = j
            j += 1
        if close != len(p) - 1:
            break
        p = p[3:-1]
    return p


def literals(pattern: str) -> list[list[str]] | None:
    """For each top-level alternative of `pattern`, the ASCII literals (lower-cased, at least
    `MIN_LITERAL` long) every match of it contains; None when some alternative has none.
    Conservative: anything but a plain character ends a literal, a character made optional by a
    quantifier is dropped, groups are skipped."""
    p = unwrap(pattern)
    branches: list[list[str]] = []
    runs: list[str] = []
    run = ""

    def end() -> None:
        nonlocal run
        if len(run) >= MIN_LITERAL:
            runs.append(run[:MAX_LITERAL].lower())
        run = ""

    depth, i = 0, 0
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            following = p[i + 1 : i + 2]
            i += 3 if following == "x" else 1  # \xHH is one character: not a literal we keep
            if depth == 0 and _PUNCTUATION.fullmatch(following):
                run += following
            else:
                end()
        elif ch == "[":
            end()
            i = class_end(p, i) - 1  # at the class's `]`
        elif ch == "(":
            end()
            depth += 1
        elif ch == ")":
            end()
            depth -= 1
        elif depth > 0:
            pass
        elif ch == "|":
            end()
            if not runs:
                return None
            branches.append(runs)
            runs = []
        elif ch in "?*{":
            run = run[:-1]
            end()
            close = p.find("}", i)
            if ch == "{" and close > i:  # a count's digits are not text the line must contain
                i = close
        elif ch < " " or ch > "~" or ch in "+.^$}":
            end()
        else:
            run += ch
        i += 1
    end()
    if not runs:
        return None
    branches.append(runs)
    return branches


@dataclass(frozen=True, slots=True)
class Index:
    """The literals of every fingerprint of a catalogue, inverted for lookup by a log's text.
    Its fields are the JSON values it is stored as, read back without a pass over them."""

    words: Sequence[str]
    """Every distinct literal."""
    prefixes: Mapping[str, Sequence[int]]
    """A literal's first `MIN_LITERAL` characters -> the literals (`words` indices) with them."""
    branches: Sequence[Sequence[Any]]
    """[entry file, literals] of each alternative of each fingerprint."""
    users: Sequence[Sequence[int]]
    """For each literal, the `branches` it is the key of: a branch needs all its literals, so it
    is looked at only when its longest one (the rarest in a log, as a rule) occurs."""
    always: Sequence[str]
    """Entry files with a fingerprint that has no literals: a candidate for every log."""

    def candidates(self, texts: Iterable[bytes]) -> set[str]:
        """The entry files whose entries may match somewhere in `texts` (normalised log
        bytes)."""
        found: set[int] = set()
        for text in texts:
            low = text.lower().decode("latin-1")  # ASCII folded, one character per byte
            prefixes = {low[i : i + MIN_LITERAL] for i in range(len(low) - MIN_LITERAL + 1)}
            for prefix in prefixes:
                for word in self.prefixes.get(prefix, ()):
                    if word not in found and self.words[word] in low:
                        found.add(word)
        ids = set(self.always)
        for word in found:
            for branch in self.users[word]:
                entry, needs = self.branches[branch]
                if entry not in ids and all(n in found for n in needs):
                    ids.add(entry)
        return ids

    def data(self) -> dict[str, Any]:
        """JSON values of the index (`from_data` reads them back)."""
        return {
            "words": self.words,
            "prefixes": self.prefixes,
            "branches": self.branches,
            "users": self.users,
            "always": self.always,
        }


def build(fingerprints: Iterable[tuple[str, str]]) -> Index:
    """The index of (entry file, pattern) pairs, every list in a deterministic order."""
    ids: dict[str, int] = {}
    found: set[tuple[str, tuple[int, ...]]] = set()
    always: set[str] = set()
    for entry, pattern in fingerprints:
        alternatives = literals(pattern)
        if alternatives is None:
            always.add(entry)
            continue
        for runs in alternatives:
            found.add((entry, tuple(sorted({ids.setdefault(r, len(ids)) for r in runs}))))
    words = sorted(ids)
    renumber = {ids[w]: i for i, w in enumerate(words)}
    branches = sorted((e, sorted(renumber[n] for n in needs)) for e, needs in found)
    prefixes: dict[str, list[int]] = {}
    for i, word in enumerate(words):
        prefixes.setdefault(word[:MIN_LITERAL], []).append(i)
    users: list[list[int]] = [[] for _ in words]
    for b, (_, needs) in enumerate(branches):
        users[max(needs, key=lambda n: (len(words[n]), -n))].append(b)
    return Index(words, prefixes, [[e, n] for e, n in branches], users, sorted(always))


def from_data(data: dict[str, Any]) -> Index:
    """The index `Index.data` gave (JSON lists stand for its tuples)."""
    return Index(data["words"], data["prefixes"], data["branches"], data["users"], data["always"])


#: Logs up to this many bytes in all are read whole first, prefiltered and scanned from memory
#: in one buffer of this size: the lookup costs a few hundred nanoseconds a byte, so past this
#: the whole set (compiled once) is cheaper.
HELD_BYTES = 256 << 10


def hold(path: str, limit: int = HELD_BYTES) -> bytes | None:
    """The bytes of log `path` as the scan reads them (decompressed, transcoded), when they
    are at most `limit`; None for standard input, a pipe, a larger log or one that cannot be
    read (the scan then reads it as it comes, and says why it cannot)."""
    from nanopedia.diagnosis.logs import open_log

    if path == "-":
        return None
    try:
        stream, _ = open_log(path)
        with stream:
            data = stream.read(limit + 1)
    except (OSError, EOFError, ValueError):
        return None
    return data if len(data) <= limit else None


def normalised(data: bytes) -> bytes:
    """Held `data` as the scan's buffers show it to the patterns (`logs.buffers`, one buffer of
    `HELD_BYTES`, as the scan of held bytes reads them)."""
    import io

    from nanopedia.diagnosis.logs import buffers

    return b"".join(bytes(buf[:n]) for buf, n in buffers(io.BytesIO(data), HELD_BYTES))
