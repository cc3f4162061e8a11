"""Corpus-wide quality gates on fingerprints, run by `check`.

A decisive fingerprint decides a diagnosis on its own, so it must be specific: enough fixed text
that it names one error, and no match on a line another entry documents as its own (its
`must_match` examples) unless both entries say they share that line (`overlaps`). A pattern as
broad as `Error` would otherwise pass every per-entry rule and take over every diagnosis.
"""

from __future__ import annotations

from collections.abc import Sequence

import re2

from .errors import Problem, problem
from .fingerprints import compile_pattern, literal_length, pattern_error, scan_options
from .validate import Source

#: Fixed characters a decisive pattern needs (`Must flatten tensors` has 20).
MIN_DECISIVE_LITERALS = 12


def fingerprint_gates(sources: Sequence[Source]) -> list[Problem]:
    """Every decisive fingerprint that is too broad or collides with another entry's lines."""
    found: list[Problem] = []
    lines = [(s.entry.id, fp.id, line) for s in sources for fp in s.entry.fingerprints
             for line in fp.must_match]
    for src in sources:
        decisive = [(i, fp) for i, fp in enumerate(src.entry.fingerprints)
                    if fp.indicates == "decisive" and pattern_error(fp) is None]
        for i, fp in decisive:
            if literal_length(fp.pattern) < MIN_DECISIVE_LITERALS:
                found.append(problem(
                    src.doc.path, *src.at("fingerprints", i, "pattern"), "E034",
                    f"decisive fingerprint '{fp.id}' has {literal_length(fp.pattern)} fixed "
                    f"characters; at least {MIN_DECISIVE_LITERALS}",
                    "quote the distinctive words of the message, or make it 'supporting'"))
        if not decisive:
            continue
        matcher = re2.Set.SearchSet(scan_options())
        for _, fp in decisive:
            matcher.Add(("(?i)" if fp.ignore_case else "") + fp.pattern)
        matcher.Compile()
        regexes = [compile_pattern(fp) for _, fp in decisive]
        reported: set[tuple[int, str]] = set()
        for owner, fp_id, line in lines:
            if owner == src.entry.id:
                continue
            for k in matcher.Match(line) or ():
                i, fp = decisive[k]
                if owner in fp.overlaps or (k, owner) in reported or not regexes[k].search(line):
                    continue
                reported.add((k, owner))
                found.append(problem(
                    src.doc.path, *src.at("fingerprints", i, "pattern"), "E035",
                    f"decisive fingerprint '{fp.id}' matches a line entry '{owner}' documents "
                    f"(its fingerprint '{fp_id}'): {line[:120]!r}",
                    f"make the pattern more specific, or add '{owner}' to its 'overlaps' if "
                    "both entries own this line"))
    return found
