"""Entry ids and titles that read as another entry's: a stranger's entry impersonating a known
one in review (E019, a warning). Two texts are look-alikes when their skeletons are equal and
the texts are not: NFKC, case folded, invisible characters dropped, letters of other scripts
that look Latin read as Latin, and ASCII look-alikes (`rn` and `m`, `l` and `i`, `0` and `o`)
read as one. The idea is Unicode's confusable skeleton (UTS #39), with a short table: the
scripts a title in this encyclopedia plausibly mixes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator

from nanopedia.errors import Location, Problem

#: Letters of Cyrillic and Greek (lower case, after case folding) that look like Latin ones.
_SCRIPTS = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "ɡ": "g",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "μ": "u",
    }
)
#: ASCII sequences that read as others at a glance, each to one form (longest first).
_ASCII = (
    ("rn", "m"),
    ("vv", "w"),
    ("cl", "d"),
    ("1", "i"),
    ("l", "i"),
    ("|", "i"),
    ("0", "o"),
    ("5", "s"),
)


def skeleton(text: str) -> str:
    """What the text looks like: equal skeletons read alike."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn", "Cc"))
    text = " ".join(text.translate(_SCRIPTS).split())
    for seen, read in _ASCII:
        text = text.replace(seen, read)
    return text


def lookalike_problems(found: Iterable[tuple[str, str, str, tuple[int, int]]]) -> Iterator[Problem]:
    """A warning for each (path, field, text, where) whose text reads as another's of the same
    field without being it; `field` is "id" or "title"."""
    groups: dict[tuple[str, str], list[tuple[str, str, tuple[int, int]]]] = {}
    for path, field, text, at in found:
        groups.setdefault((field, skeleton(text)), []).append((path, text, at))
    for (field, _), members in sorted(groups.items()):
        if len({text for _, text, _ in members}) < 2:
            continue
        for path, text, at in members:
            others = sorted({t for _, t, _ in members if t != text})
            hidden = [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cf"]
            mixed = [c.casefold() for c in text if c.casefold() in _SCRIPT_KEYS]
            why = (
                f" (it holds invisible {', '.join(hidden)})"
                if hidden
                else f" (it mixes in look-alike letters: {', '.join(sorted(set(mixed)))})"
                if mixed
                else ""
            )
            yield Problem(
                Location(path, *at),
                "E019",
                f"{field} {text!r} reads as {', '.join(map(repr, others))} of another entry{why}",
                f"give the {field} its own words, in plain letters",
                "warning",
            )


_SCRIPT_KEYS = frozenset(chr(k) for k in _SCRIPTS)
