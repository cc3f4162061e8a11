"""The structured evidence beside a job's logs, read from disk: torchelastic error files
(`elastic`) and Flight Recorder dumps (`flight`). The thin wrapper: which file is which, and
each read with its size capped before a byte is parsed; the readers themselves take bytes.
`gather` sorts what `diagnose`, `nanopedia.diagnose()` and `nanopedia run` are given (files and
run folders) into logs to scan and the evidence read from the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
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
    _unranked: dict[tuple[str, str, int | None], int] = field(default_factory=dict, repr=False)
    """Where in `errors` each error file of no rank folder is, by exception and time."""
    _ranked: set[tuple[str, str, int | None]] = field(default_factory=set, repr=False)
    """The exceptions and times of the error files of a rank folder."""

    def add(self, item: elastic.ErrorFile | flight.Dump) -> None:
        """Keep `item`; an error file that repeats another's exception and time, one of them
        in no rank folder, is one failure: torchrun copies the first failure's file to its own
        `TORCHELASTIC_ERROR_FILE` (which `nanopedia run` sets), and the rank's copy is kept."""
        if isinstance(item, flight.Dump):
            self.dumps.append(item)
            return
        same = (item.message, item.traceback, item.timestamp)
        if item.rank is None:
            if same not in self._ranked and same not in self._unranked:
                self._unranked[same] = len(self.errors)
                self.errors.append(item)
            return
        self._ranked.add(same)
        at = self._unranked.pop(same, None)
        if at is None:
            self.errors.append(item)
        else:
            self.errors[at] = item

    def report(self) -> flight.Report | None:
        return flight.analyse(self.dumps) if self.dumps else None

    def raise_problems(self) -> None:
        """Fail with every file that could not be read as what it is, each a located E050
        problem with the reader's hint (as `diagnose` fails on an unreadable log)."""
        if self.problems:
            from nanopedia.errors import NanopediaError, problem

            raise NanopediaError(
                [problem(e.name, "E050", e.message, e.hint) for e in self.problems]
            )


def gather(paths: Sequence[str], every_file: bool = False) -> tuple[list[str], Found]:
    """The logs among `paths` (`-`: standard input), and the error files and Flight Recorder
    dumps read from the rest; a folder gives every log, error file and dump below it (with
    `every_file`, every file below it is looked at, as a file given by name is: a dump whose
    name has no `.json`). What cannot be read as what it is, and a folder with nothing to read,
    is in `Found.problems`, by name."""
    from nanopedia.diagnosis import jobs  # it names evidence files with this module

    found = Found()
    logs: list[str] = []
    for raw in paths:
        files = [raw]
        if raw != "-" and os.path.isdir(raw):
            files, _ = jobs.logs_below(raw, every_file)
            if not files:
                found.problems.append(
                    ReaderError(
                        raw,
                        "no logs, torchelastic error files or Flight Recorder dumps below "
                        "this folder",
                    )
                )
        for path in files:
            what = "log" if path == "-" else sniff(path)
            if what == "log":
                logs.append(path)
                continue
            try:
                found.add(read_file(path, what))
            except ReaderError as err:
                found.problems.append(err)
    return logs, found
