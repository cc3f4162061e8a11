"""The package versions a log shows, and whether they fall in an entry's affected ranges.

Engineers paste the versions next to the failure: the output of `python -m torch.utils.
collect_env` or `transformers env`, a `pip freeze`, DeepSpeed's start-up banner and `ds_report`,
NCCL's `NCCL version` line, `nvidia-smi`'s header. `find` reads them from the text around a log's
lines (the CLI gives it the first and last MiB of each file: where such dumps sit), and `fits`
compares them with the `affected` ranges of an entry's systems, so the verdict can say "torch
2.4.0 (from the log) is in the affected range" or that it is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.version import InvalidVersion, Version

from nanopedia.diagnosis.catalogue import EntryView, view
from nanopedia.diagnosis.prefilter import literals

if TYPE_CHECKING:
    from nanopedia.model import Entry

#: How much of each end of a log file is read for versions.
EDGE_BYTES = 1 << 20
#: Lines longer than this are not read for versions (no banner is that long).
MAX_LINE = 400

_V = r"(\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:\+[\w.]+)?)"
#: (pattern, package or None for "the first group names it"): each names the version last.
_PATTERNS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple(
    (re.compile(p), pkg)
    for p, pkg in (
        (r"^\s*(?:\[pip3?\]\s+)?([A-Za-z][\w.-]*)==" + _V + r"\s*$", None),  # pip freeze
        (r"^\[conda\]\s+([A-Za-z][\w.-]*)\s+" + _V + r"\s", None),  # collect_env's conda list
        (r"PyTorch version(?: \(GPU\?\))?: " + _V, "torch"),  # collect_env, transformers env
        (r"CUDA used to build PyTorch: " + _V, "cuda"),
        (r"(?:Nvidia driver version|Driver Version): " + _V, "nvidia-driver"),
        (r"^(?:- )?Python version: " + _V, "python"),
        (r"^- `?transformers`? version: " + _V, "transformers"),
        (r"^- Accelerate version: " + _V, "accelerate"),
        (r"^- DeepSpeed version: " + _V, "deepspeed"),
        (r"^- Huggingface_hub version: " + _V, "huggingface-hub"),
        (r"^- Safetensors version: " + _V, "safetensors"),
        (r"DeepSpeed info: version=" + _V, "deepspeed"),  # the engine's start-up banner
        (r"deepspeed info \.+ " + _V, "deepspeed"),  # ds_report
        (r"^torch version \.+ " + _V, "torch"),  # ds_report
        (r"NCCL INFO NCCL version " + _V, "nccl"),
        (r"transformers version: " + _V, "transformers"),
    )
)


class Seen(NamedTuple):
    """A package version the log shows, and where."""

    package: str
    """Normalised as PyPI does (lower case, `-` for `_` and `.`), as entries name packages."""
    version: str
    file: str
    line: int
    """1-based line in the part of the file that was read (the head's lines are the file's)."""


class Fit(NamedTuple):
    """One version the log shows, set against an affected system of the entry."""

    package: str
    version: str
    system: str
    """The affected system's name, as the entry gives it."""
    affected: bool
    ranges: str
    """The system's ranges in words: `2.1 to before 2.5; from 2.7`."""
    file: str
    line: int


def normalise(name: str) -> str:
    """A package name as PEP 503 compares it (`Huggingface_Hub` -> `huggingface-hub`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def find(lines: Iterable[str], file: str, first_line: int = 1) -> list[Seen]:
    """Every version the lines show, the first sighting of each package kept.

    A pattern none of whose required texts (`_NEEDLES`) the lines hold is passed over before
    they are read one by one: most logs show no version banner, and a search per line and
    pattern took most of a diagnosis's last 0.06 s (two thousand lines of a log's ends)."""
    lines = list(lines)
    lowered = "\n".join(lines).lower()
    present = [
        kept
        for kept, needles in zip(_PATTERNS, _NEEDLES, strict=True)
        if needles is None or any(all(n in lowered for n in branch) for branch in needles)
    ]
    seen: dict[str, Seen] = {}
    for number, line in enumerate(lines if present else (), first_line):
        if len(line) > MAX_LINE or not any(ch.isdigit() for ch in line):
            continue
        for pattern, package in present:
            m = pattern.search(line)
            if m is None:
                continue
            name = normalise(package or m.group(1))
            if name not in seen:
                seen[name] = Seen(name, m.group(m.lastindex or 1), file, number)
            break
    return list(seen.values())


#: Required texts `prefilter.literals` cannot see (under three characters, inside a group), by a
#: text of the pattern that holds them.
_SHORT = {"==": [["=="]], "Nvidia driver version|Driver Version": [["river version: "]]}
#: For each pattern, the lower-case texts every match holds, per alternative (None: unknown).
_NEEDLES = tuple(
    literals(p.pattern) or next((v for k, v in _SHORT.items() if k in p.pattern), None)
    for p, _ in _PATTERNS
)


def _parse(text: str) -> Version | None:
    try:
        return Version(Version(text).public)  # a local build (`+cu121`) is its release
    except InvalidVersion:
        return None


def in_range(version: str, introduced: str, fixed: str | None) -> bool | None:
    """Whether `version` is at or after `introduced` and before `fixed`; None when a version
    cannot be compared."""
    v, low = _parse(version), _parse(introduced)
    high = _parse(fixed) if fixed else None
    if v is None or low is None or (fixed and high is None):
        return None
    return low <= v and (high is None or v < high)


def fits(seen: Sequence[Seen], entry: EntryView | Entry) -> list[Fit]:
    """Each version the log shows of a package the entry's affected systems name, and whether
    it falls in one of that system's ranges."""
    by_package = {s.package: s for s in seen}
    out: list[Fit] = []
    for system in view(entry).systems:
        s = by_package.get(normalise(system.package))
        if s is None:
            continue
        checks = [in_range(s.version, r.introduced, r.fixed) for r in system.affected]
        if all(c is None for c in checks):
            continue
        out.append(
            Fit(
                s.package,
                s.version,
                system.name,
                any(c for c in checks),
                "; ".join(r.words for r in system.affected),
                s.file,
                s.line,
            )
        )
    return out


def read(path: str, name: str, lines: int) -> list[Seen]:
    """The versions the first and last `EDGE_BYTES` of a log file show (a gzip log: its first
    `EDGE_BYTES` unpacked); `lines` is the file's line count from the scan, which numbers the
    tail's lines. Standard input was read by the scan and cannot be read again: nothing."""
    if path == "-":
        return []
    from nanopedia.diagnosis.logs import open_log

    stream, under = open_log(path)
    with stream:
        head = stream.read(EDGE_BYTES)
        if stream is not under or len(head) < EDGE_BYTES:
            return find(_lines(head, whole=len(head) < EDGE_BYTES), name)
        size = under.seek(0, 2)
        if size <= 2 * EDGE_BYTES:  # the two ends meet: one text, no line cut between them
            under.seek(EDGE_BYTES)
            return find(_lines(head + under.read(), whole=True), name)
        under.seek(size - EDGE_BYTES)
        tail = under.read(EDGE_BYTES)
    rest = _lines(tail[tail.find(b"\n") + 1 :], whole=True)
    first = lines - len(rest) + 1
    return _merge(find(_lines(head, whole=False), name), find(rest, name, first))


def from_bytes(data: bytes, name: str) -> list[Seen]:
    """`read` for a log held in memory: its first and last `EDGE_BYTES`."""
    if len(data) <= 2 * EDGE_BYTES:
        return find(_lines(data, whole=True), name)
    tail = data[-EDGE_BYTES:]
    rest = _lines(tail[tail.find(b"\n") + 1 :], whole=True)
    first = data.count(b"\n") + (not data.endswith(b"\n")) - len(rest) + 1
    return _merge(find(_lines(data[:EDGE_BYTES], whole=False), name), find(rest, name, first))


def read_all(logs: Sequence[str | tuple[str, bytes]], scans: Sequence[Any]) -> list[Seen]:
    """The versions a job's logs show, the first sighting of each package kept; each log is a
    path or a text held in memory as `(name, bytes)`; `scans` are their `FileScan`s, in the same
    order; a log that cannot be read again gives none."""
    found: dict[str, Seen] = {}
    for log, one in zip(logs, scans, strict=True):
        try:
            shown = (
                read(log, one.file, one.lines)
                if isinstance(log, str)
                else from_bytes(log[1], one.file)
            )
        except (OSError, EOFError):
            continue
        for s in shown:
            found.setdefault(s.package, s)
    return list(found.values())


def _lines(data: bytes, whole: bool) -> list[str]:
    """Decoded lines; a piece cut mid-line loses its last, partial line."""
    text = data.decode("utf-8", "replace").splitlines()
    return text if whole or not text else text[:-1]


def _merge(head: list[Seen], tail: list[Seen]) -> list[Seen]:
    known = {s.package for s in head}
    return head + [s for s in tail if s.package not in known]
