"""torchelastic error files: what torchrun's `@record` writes for a rank that raised.

`torch.distributed.elastic.multiprocessing.errors.record` writes the exception of a failing
worker to `$TORCHELASTIC_ERROR_FILE`, which torchrun points at
`<log_dir>/<run_id>/attempt_<n>/<local_rank>/error.json`. Two shapes exist (torch 2.13,
`ProcessFailure._get_error_data`)::

    {"message": {"message": "RuntimeError: ...",
                 "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1796483106"}}}
    {"message": "<text>", "timestamp": 1796483106}          # a C++ or hand-written error file

The timestamp is whole seconds since the epoch; torchrun's "Root Cause (first observed failure)"
is the file with the smallest one. Pure functions from bytes to values; the caller reads the file
(at most `MAX_BYTES`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePath

#: Bytes of an error file read at most: real ones are a traceback (kilobytes).
MAX_BYTES = 4 << 20
#: Characters of the message and of the traceback kept.
MESSAGE_CHARS = 2000
TRACEBACK_CHARS = 256 << 10


class ReaderError(ValueError):
    """A file a reader cannot take: `message` says what was expected, `hint` how to get it."""

    def __init__(self, name: str, message: str, hint: str | None = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name, self.message, self.hint = name, message, hint


@dataclass(frozen=True, slots=True)
class ErrorFile:
    """One rank's error file."""

    file: str
    """The file as named on the command line or found under a run folder."""
    rank: int | None
    """The rank folder it sits in (`attempt_0/3/error.json`: 3). torchrun names it by local
    rank, which is the global rank on a one-node run."""
    attempt: int | None
    """The restart attempt (`attempt_<n>`), when the path says."""
    message: str
    """The exception, as `@record` wrote it (`RuntimeError: ...`)."""
    traceback: str
    """The Python traceback (`extraInfo.py_callstack`), or the message when there is none."""
    timestamp: int | None
    """When the rank failed: seconds since the epoch."""

    @property
    def sortable(self) -> str | None:
        """The timestamp as the scanner's sortable `MMDDhhmmss.fffffffff`, in UTC."""
        if self.timestamp is None:
            return None
        return datetime.fromtimestamp(self.timestamp, UTC).strftime("%m%d%H%M%S.000000000")

    @property
    def when(self) -> str | None:
        """The timestamp as `2026-12-05 15:05:06 UTC`."""
        if self.timestamp is None:
            return None
        return datetime.fromtimestamp(self.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "rank": self.rank,
            "attempt": self.attempt,
            "message": self.message,
            "timestamp": self.timestamp,
            "time": self.when,
        }


_RANK_DIR = re.compile(r"[0-9]{1,6}")
_ATTEMPT = re.compile(r"attempt_([0-9]{1,6})")
#: Seconds since the epoch that a real error file can hold (2001 to 2286).
_EPOCH_RANGE = (10**9, 10**10)


def is_error_file(name: str) -> bool:
    """`error.json`, the name torchrun gives every rank's error file."""
    return PurePath(name).name == "error.json"


def parse(data: bytes, name: str) -> ErrorFile:
    """The error file in `data`; `ReaderError` when it is not one, saying what was expected."""
    expected = (
        'a torchelastic error file: a JSON object {"message": {"message": ..., '
        '"extraInfo": {"py_callstack": ..., "timestamp": ...}}}'
    )
    if len(data) > MAX_BYTES:
        raise ReaderError(
            name,
            f"{len(data):,} bytes, more than the {MAX_BYTES:,} an error file can hold; not read",
        )
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as err:
        raise ReaderError(
            name,
            f"not valid JSON at line {err.lineno}, column {err.colno}: "
            f"{err.msg}; expected {expected}",
        ) from None
    except (ValueError, RecursionError) as err:  # not UTF-8, a 5,000-digit number, deep nesting
        raise ReaderError(name, f"not {expected} ({type(err).__name__}: {err})") from None
    if not isinstance(doc, dict) or "message" not in doc:
        raise ReaderError(name, f'no "message" field; expected {expected}')
    message = doc["message"]
    if isinstance(message, dict):
        extra = message.get("extraInfo")
        extra = extra if isinstance(extra, dict) else {}
        text, trace, stamp = (
            message.get("message"),
            extra.get("py_callstack"),
            extra.get("timestamp", doc.get("timestamp")),
        )
    else:
        text, trace, stamp = message, None, doc.get("timestamp")
    if not isinstance(text, str):
        raise ReaderError(
            name, f'"message" is a {type(text).__name__}, not text; expected {expected}'
        )
    trace = trace if isinstance(trace, str) and trace.strip() else text
    path = PurePath(name)
    rank = int(path.parent.name) if _RANK_DIR.fullmatch(path.parent.name) else None
    attempt = _ATTEMPT.fullmatch(path.parent.parent.name)
    return ErrorFile(
        name,
        rank,
        int(attempt.group(1)) if attempt else None,
        text[:MESSAGE_CHARS],
        trace[:TRACEBACK_CHARS],
        _seconds(stamp),
    )


def _seconds(value: object) -> int | None:
    """A timestamp field (an int, or digits as text) as seconds since the epoch, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 12:
        value = int(value.strip())
    if isinstance(value, int) and _EPOCH_RANGE[0] <= value < _EPOCH_RANGE[1]:
        return value
    return None


def first(files: list[ErrorFile]) -> list[ErrorFile]:
    """The error files with the earliest timestamp (several when they share its second), as
    torchrun picks its Root Cause; empty when none has a timestamp."""
    stamped = [f for f in files if f.timestamp is not None]
    if not stamped:
        return []
    earliest = min(f.timestamp or 0 for f in stamped)
    return [f for f in stamped if f.timestamp == earliest]
