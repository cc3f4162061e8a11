"""Corpus-wide quality gates on fingerprints, run by `check`.

A decisive fingerprint decides a diagnosis on its own, so it must be specific: enough fixed text
that it names one error, and no match on a line another entry documents as its own (its
`must_match` examples) unless both entries say they share that line (`overlaps`). A pattern as
broad as `Error` would otherwise pass every per-entry rule and take over every diagnosis.

Every pattern must also be fast in the browser's engine, which backtracks: `browser_slowness`
times them all under Node in one process (per-entry validation times RE2 alone).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import re2

from nanopedia.content import fingerprints, portable
from nanopedia.content.fingerprints import (
    compile_pattern,
    pattern_error,
    scan_options,
)
from nanopedia.content.portable import literal_length
from nanopedia.content.validate import Source
from nanopedia.errors import Location, Problem, problem
from nanopedia.model import Fingerprint
from nanopedia.theme_dir import THEME

#: The script that times patterns in the browser worker's own code (theme/check/patterntime.js).
PATTERN_TIMER = THEME / "check" / "patterntime.js"
#: Runs of a pattern over budget before it is called slow: the fastest counts.
BROWSER_TRIES = 3

#: Fixed characters a decisive pattern needs (`Must flatten tensors` has 20).
MIN_DECISIVE_LITERALS = 12


def fingerprint_gates(sources: Sequence[Source]) -> list[Problem]:
    """Every decisive fingerprint that is too broad or collides with another entry's lines."""
    found: list[Problem] = []
    lines = [
        (s.entry.id, fp.id, line)
        for s in sources
        for fp in s.entry.fingerprints
        for line in fp.must_match
    ]
    for src in sources:
        decisive = [
            (i, fp)
            for i, fp in enumerate(src.entry.fingerprints)
            if fp.indicates == "decisive" and pattern_error(fp) is None
        ]
        for i, fp in decisive:
            if literal_length(fp.pattern) < MIN_DECISIVE_LITERALS:
                found.append(
                    problem(
                        src.doc.path,
                        "E034",
                        f"decisive fingerprint '{fp.id}' has {literal_length(fp.pattern)} fixed "
                        f"characters; at least {MIN_DECISIVE_LITERALS}",
                        "quote the distinctive words of the message, or make it 'supporting'",
                        at=src.at("fingerprints", i, "pattern"),
                    )
                )
        if not decisive:
            continue
        matcher = re2.Set.SearchSet(scan_options())
        for _, fp in decisive:
            matcher.Add(fingerprints.program(fp))
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
                found.append(
                    problem(
                        src.doc.path,
                        "E035",
                        f"decisive fingerprint '{fp.id}' matches a line entry '{owner}' documents "
                        f"(its fingerprint '{fp_id}'): {line[:120]!r}",
                        f"make the pattern more specific, or add '{owner}' to its 'overlaps' if "
                        "both entries own this line",
                        at=src.at("fingerprints", i, "pattern"),
                    )
                )
    return found


def browser_slowness(sources: Sequence[Source], reported: Iterable[Problem] = ()) -> list[Problem]:
    """E033 for every pattern too slow in the browser's engine (JavaScript, timed under Node).

    Patterns already refused at their line (E030 invalid, E033 slow in RE2) are not timed again.
    Without Node the patterns are timed in RE2 only, and one warning (E036) says so.
    """
    skip = {p.location for p in reported if p.code in ("E030", "E033")}
    timed = [
        (src, i, fp)
        for src in sources
        for i, fp in enumerate(src.entry.fingerprints)
        if portable.portable_error(fp.pattern) is None
        and portable.backtracking_error(fp.pattern) is None
        and portable.adjacent_repetition_error(fp.pattern) is None
        and Location(src.doc.path, *src.at("fingerprints", i, "pattern")) not in skip
    ]
    if not timed:
        return []
    timings = browser_timings([fp for _, _, fp in timed])
    if isinstance(timings, str):
        where = os.path.dirname(sources[0].doc.path) or "."
        return [
            Problem(
                Location(where),
                "E036",
                "fingerprint patterns were not timed in the "
                f"browser's JavaScript engine: {timings}; they were timed in RE2 only",
                "install Node.js (https://nodejs.org) so that 'check' times them as the "
                "diagnosis page runs them",
                "warning",
            )
        ]
    found: list[Problem] = []
    for (src, i, fp), timing in zip(timed, timings, strict=True):
        reason = timing.verdict()
        if reason:
            code, message, hint = reason
            found.append(
                problem(
                    src.doc.path,
                    code,
                    f"fingerprint '{fp.id}': {message}",
                    hint,
                    at=src.at("fingerprints", i, "pattern"),
                )
            )
    return found


@dataclass(frozen=True, slots=True)
class BrowserTiming:
    """How one pattern fared on its `browser_sample` in the browser worker's code under Node."""

    size: int
    """Characters in the sample."""
    ms: float | None
    """CPU milliseconds of the fastest run; None when the pattern was stopped or failed."""
    timeout: bool = False
    """Still running after `BROWSER_TIMEOUT_S` (wall clock), so stopped."""
    error: str | None = None
    """Why JavaScript could not compile the pattern."""

    @property
    def rate(self) -> float:
        """Sample characters per CPU second (0 for a pattern that never finished)."""
        if self.ms is None:
            return 0.0
        return self.size / (self.ms / 1000) if self.ms > 0 else float("inf")

    def verdict(self) -> tuple[str, str, str] | None:
        """(code, message, hint) when the pattern is unusable in the browser, else None."""
        kib = f"{self.size / 1024:.0f} KiB"
        if self.error:
            return (
                "E030",
                f"the browser's JavaScript engine cannot compile it: {self.error}",
                "see 'Fingerprints' in entries/README.md for the portable subset",
            )
        if self.timeout:
            return (
                "E033",
                "pattern is too slow in the browser's JavaScript engine: still "
                f"running after {fingerprints.BROWSER_TIMEOUT_S:.0f} s on a {kib} adversarial "
                "sample, so it was stopped (it backtracks without end)",
                _SLOW_HINT,
            )
        if self.ms is None or self.rate >= fingerprints.MIN_BROWSER_RATE:
            return None
        return (
            "E033",
            f"pattern is too slow in the browser's JavaScript engine: {self.ms:.0f} ms "
            f"of CPU on a {kib} adversarial sample ({self.rate / 1e6:.2f} MB/s, at least "
            f"{fingerprints.MIN_BROWSER_RATE / 1e6:.0f} MB/s needed)",
            _SLOW_HINT,
        )


_SLOW_HINT = (
    "a repeated group whose branches can match the same text ('(?:a|a)*', '(?:a|ab|b)*') or that "
    "holds '.*' ('(?:.*,){12}') backtracks without end: make the branches exclusive and stop each "
    "repetition at the separator ('[^,]*,')"
)


def browser_timings(fps: Sequence[Fingerprint]) -> list[BrowserTiming] | str:
    """Each pattern timed on its `browser_sample` in one Node process, or why that failed.

    patterntime.js runs them with the diagnosis worker's own RegExps and loop, in CPU time, best
    of `BROWSER_TRIES` runs when over budget, and stops one that runs past `BROWSER_TIMEOUT_S`.
    """
    node = shutil.which("node")
    if node is None:
        return "Node.js ('node') is not on PATH"
    samples = [fingerprints.browser_sample(fp) for fp in fps]
    job = {
        "patterns": [
            {
                "program": fingerprints.program(fp),
                "sample": sample,
                "budget_ms": 1000 * len(sample) / fingerprints.MIN_BROWSER_RATE,
            }
            for fp, sample in zip(fps, samples, strict=True)
        ],
        "timeout_ms": 1000 * fingerprints.BROWSER_TIMEOUT_S,
        "tries": BROWSER_TRIES,
    }
    # Enough for every pattern to be stopped, and for Node to start.
    limit = 30 + len(fps) * (fingerprints.BROWSER_TIMEOUT_S + 0.5)
    try:
        run = subprocess.run(
            [node, str(PATTERN_TIMER)],
            input=json.dumps(job),
            text=True,
            capture_output=True,
            timeout=limit,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"Node could not run {PATTERN_TIMER.name}: {err}"
    try:
        results = json.loads(run.stdout)["results"]
        if not isinstance(results, list) or len(results) != len(fps):
            raise ValueError("one result per pattern expected")
        return [
            BrowserTiming(len(sample), r["ms"], bool(r["timeout"]), r["error"])
            for sample, r in zip(samples, results, strict=True)
        ]
    except (ValueError, KeyError, TypeError):
        last = run.stderr.strip().splitlines()[-1:] or [f"exit status {run.returncode}"]
        return f"{PATTERN_TIMER.name} failed: {last[0][:200]}"
