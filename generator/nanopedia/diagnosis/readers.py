"""The structured evidence beside a job's logs, read from disk: torchelastic error files
(`elastic`) and Flight Recorder dumps (`flight`). The thin wrapper: which file is which, and
each read with its size capped before a byte is parsed; the readers themselves take bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Literal

from nanopedia.diagnosis import elastic, flight
from nanopedia.diagnosis.elastic import ReaderError

Kind = Literal["log", "elastic", "flight"]

#: Bytes looked at to tell a dump from a log.
SNIFF_BYTES = 4096
#: A JSON file whose name ends in a rank (`rank3.json`, `nccl_trace_rank_3.json`): a Flight
#: Recorder dump when its contents say so.
_RANKED_JSON = re.compile(r".*[0-9]\.json")


def is_evidence_name(name: str) -> bool:
    """A file below a job's folder worth reading besides its logs: `error.json`, or a JSON file
    whose name ends in a rank (a dump)."""
    base = PurePath(name).name
    return elastic.is_error_file(base) or bool(_RANKED_JSON.fullmatch(base))


def kind(name: str, head: bytes) -> Kind:
    """What a file is, from its name and its first bytes: `error.json` is an error file; a
    pickle, or JSON with the Flight Recorder's fields, a dump (a pickle is then refused with
    the way to get JSON); anything else a log."""
    if elastic.is_error_file(name):
        return "elastic"
    if flight.looks_like_dump(head):
        return "flight"
    return "log"


def read_capped(stream: IO[bytes], name: str, limit: int) -> bytes:
    """At most `limit` bytes, or `ReaderError` when there are more: nothing larger is parsed."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ReaderError(name, f"more than {limit:,} bytes, far more than a real one; not read")
    return bytes(data)


def read_file(path: str, what: Kind, name: str | None = None) -> elastic.ErrorFile | flight.Dump:
    """The error file or dump at `path`; `ReaderError` for one that cannot be read or parsed."""
    name = name or path
    limit = elastic.MAX_BYTES if what == "elastic" else flight.MAX_BYTES
    try:
        with open(path, "rb") as f:
            data = read_capped(f, name, limit)
    except OSError as err:
        raise ReaderError(name, f"cannot read it: {err.strerror or err}") from None
    return elastic.parse(data, name) if what == "elastic" else flight.parse(data, name)


def sniff(path: str) -> Kind:
    """`kind` of a file on disk (a file that cannot be read is a log: reading it says why)."""
    if elastic.is_error_file(path):
        return "elastic"
    try:
        with open(path, "rb") as f:
            return kind(path, f.read(SNIFF_BYTES))
    except OSError:
        return "log"


@dataclass
class Found:
    """The structured evidence of one job, and what could not be read."""

    errors: list[elastic.ErrorFile] = field(default_factory=list)
    dumps: list[flight.Dump] = field(default_factory=list)
    problems: list[ReaderError] = field(default_factory=list)

    def add(self, item: elastic.ErrorFile | flight.Dump) -> None:
        (self.errors if isinstance(item, elastic.ErrorFile) else self.dumps).append(item)  # type: ignore[arg-type]

    def report(self) -> flight.Report | None:
        return flight.analyse(self.dumps) if self.dumps else None
