"""Located problems: the one error type every stage reports through.

Every check in Nanopedia produces `Problem`s that carry `file:line:col`, a stable code and, where a
fix is known, a hint. Stages collect them (check everything, then fail once) and raise a single
`NanopediaError` holding all of them; only the CLI formats and prints.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, NoReturn

Severity = Literal["error", "warning"]

#: Every problem code with a one-line meaning; `entries/README.md` lists them.
CODES: dict[str, str] = {
    "E001": "the file could not be read (missing, a symlink, not a regular file, too large, "
    "not UTF-8, NUL byte)",
    "E002": "YAML syntax error",
    "E003": "unsafe or unsupported YAML construct (anchor, alias, explicit tag, several documents)",
    "E004": "duplicate mapping key",
    "E005": "nesting deeper than allowed",
    "E006": "empty file",
    "E007": "a '.yml' file in the entries folder (entries end in '.yaml', so it is not read)",
    "E010": "unknown field",
    "E011": "missing required field",
    "E012": "wrong type or empty value",
    "E013": "value not allowed (enum, pattern, length)",
    "E014": "id does not match the file name",
    "E015": "reference URL is not https",
    "E016": "unsafe link in markdown (scheme not allowed, or protocol-relative `//host`)",
    "E017": "python code example does not parse",
    "E018": "text holds a control character (but tab and newline) or a bidirectional override",
    "E019": "warning: an entry's id or title reads as another entry's",
    "E020": "duplicate id or alias",
    "E021": "related entry does not exist",
    "E022": "symptom or fingerprint points to an unknown root cause",
    "E023": "unknown tag",
    "E024": "registered tag used by no entry",
    "E025": "in-text entry link to an unknown entry",
    "E026": "duplicate id inside an entry (root cause, fingerprint, repro)",
    "E027": "repro names a fingerprint the entry does not have",
    "E028": "an affected version range cannot be compared",
    "E029": "`reviewed` disagrees with the review record `reviews/<id>.md`",
    "E030": "fingerprint pattern is invalid or outside the portable subset",
    "E031": "fingerprint misses a must-match example",
    "E032": "fingerprint matches a must-not-match example",
    "E033": "fingerprint pattern is too slow on an adversarial log",
    "E034": "decisive fingerprint has too little fixed text to be specific",
    "E035": "decisive fingerprint matches another entry's documented lines (undeclared overlap)",
    "E036": "warning: fingerprint patterns were not timed in the browser's engine (no Node.js)",
    "E040": "template or rendering error",
    "E041": "could not write the output",
    "E042": "an entry changed while the site was being built",
    "E050": "usage error",
    "E060": "a `TODO` placeholder from `nanopedia new` is not filled in yet",
    "E061": "warning: the entry does not say which releases it was checked against",
    "E062": "warning: a root cause that no fix step is for",
    "E070": "a code example does not match the installed library (import, attribute, keyword)",
}

USAGE = "E050"
"""The code of a problem with the command line itself (a missing folder, an unreadable log):
a command that fails with only these exits 2, as for a bad argument."""


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """Where a problem is: 1-based line and column; 0 means "the whole file"."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col or 1}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One located finding, formatted in one place for every output format."""

    location: Location
    code: str
    message: str
    hint: str | None = None
    severity: Severity = "error"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        return (loc.path, loc.line, loc.col, self.code, self.message)

    def __str__(self) -> str:
        text = f"{self.location}: {self.severity}[{self.code}]: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def github(self) -> str:
        """A GitHub Actions workflow command that annotates the offending line."""
        loc = self.location
        props = f"file={loc.path}"
        if loc.line > 0:
            props += f",line={loc.line},col={loc.col or 1}"
        props += f",title={self.code}"
        body = self.message + (f" (hint: {self.hint})" if self.hint else "")
        body = body.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::{self.severity} {props}::{body}"

    def as_dict(self) -> dict[str, object]:
        loc = self.location
        return {
            "path": loc.path,
            "line": loc.line,
            "column": loc.col,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class NanopediaError(Exception):
    """Raised once a stage has collected every problem it can find."""

    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.problems = sorted(self.problems, key=Problem.sort_key)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


def problem(
    path: str, code: str, message: str, hint: str | None = None, *, at: tuple[int, int] = (0, 0)
) -> Problem:
    """Shorthand used by every checker, so codes and locations are built the same way; `at` is
    the (line, column) in `path`, where (0, 0) is the whole file."""
    return Problem(Location(path, *at), code, message, hint)


def fail(
    path: str, code: str, message: str, hint: str | None = None, *, at: tuple[int, int] = (0, 0)
) -> NoReturn:
    """Raise the one error type with one problem: what a command does when it cannot go on."""
    raise NanopediaError([problem(path, code, message, hint, at=at)])


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """`did you mean 'bf16'?` for the closest known spelling, or None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def format_problems(problems: list[Problem], fmt: str) -> str:
    """Render problems as text, GitHub annotations or JSON (the CLI prints the result)."""
    ordered = sorted(problems, key=Problem.sort_key)
    if fmt == "json":
        return json.dumps([p.as_dict() for p in ordered], indent=2, ensure_ascii=False)
    if fmt == "github":
        return "\n".join(p.github() for p in ordered)
    return "\n".join(str(p) for p in ordered)
