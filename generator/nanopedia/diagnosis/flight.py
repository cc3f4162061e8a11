"""Flight Recorder dumps: which rank is behind, and which ranks called different collectives.

PyTorch's Flight Recorder keeps each rank's last collectives in a ring buffer
(`TORCH_FR_BUFFER_SIZE` entries) and dumps it per rank: as JSON from
`torch._C._distributed_c10d._dump_fr_trace_json()` (gloo and every backend) or
`_dump_nccl_trace_json()` (NCCL), as a pickle when a timeout dumps it to `TORCH_FR_DUMP_TEMP_FILE`.
Only JSON is read here; a pickle is refused, never loaded (loading one runs code). The fields read
(torch 2.13, dump version "2.10")::

    {"version": "2.10", "pg_config": {"<pg name>": {"desc": ..., "ranks": "[0, 1]"}},
     "entries": [{"process_group": ["<pg name>", "<desc>"], "collective_seq_id": 3,
                  "is_p2p": false, "profiling_name": "gloo:all_reduce",
                  "input_sizes": [[4]], "output_sizes": [[4]], "state": "scheduled", ...}]}

A dump does not say its rank: as torch's analyser (`torch.distributed.flight_recorder.fr_trace`)
does, the rank is the number that ends the file name (`rank3.json`, `nccl_trace_rank_3`).

Per process group (named by the entries' own `process_group`; torch 2.13's gloo dumps key
`pg_config` by "", which its own analyser trips on), collectives are compared by their sequence
number from the first one every rank's buffer still holds: a rank whose last collective is
below the others' never entered the next one (it is behind: `training-hang-no-error`); ranks
that called a different collective, or the same one with different tensor sizes, at the same
number are out of step (`collective-mismatch-desync`). Point-to-point entries are not compared.
Pure functions from bytes to values; the caller reads each file (at most `MAX_BYTES`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal

from nanopedia.diagnosis.elastic import ReaderError

#: Bytes of a dump read at most: 2,000 entries with their stack frames are a few MB.
MAX_BYTES = 64 << 20
#: Entries read per dump, and findings reported per process group.
MAX_ENTRIES = 100_000
FINDINGS_PER_GROUP = 3

#: The entries that explain each kind of finding (fleet entries, issue #36).
BEHIND_ENTRY = "training-hang-no-error"
MISMATCH_ENTRY = "collective-mismatch-desync"

#: Collectives whose tensor sizes may differ between ranks (the root of a gather or scatter, and
#: every all-to-all by its splits): only their names are compared.
_UNEVEN = ("gather", "scatter")
_TRAILING_NUMBER = re.compile(r"([0-9]{1,6})$")

HOW_TO_GET_JSON = (
    "write each rank's dump as JSON: json_text = "
    "torch._C._distributed_c10d._dump_fr_trace_json() (gloo and other backends; "
    "_dump_nccl_trace_json() for NCCL), called on every rank when it times out or before it "
    "exits, with TORCH_FR_BUFFER_SIZE set; torch 2.13 has no setting that makes the automatic "
    "dump (TORCH_FR_DUMP_TEMP_FILE) JSON. A pickle you made yourself can be converted where it "
    'was made: python -c "import json,pickle,sys; print(json.dumps(pickle.load(open(sys.argv[1],'
    "'rb')), default=str))\" DUMP > DUMP.json"
)


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective of one rank's buffer."""

    seq: int
    """`collective_seq_id`: the number of the collective in its process group."""
    op: str
    """`profiling_name` without its backend (`all_reduce` for `gloo:all_reduce`)."""
    name: str
    """`profiling_name` as recorded."""
    inputs: str
    """`input_sizes`, as text (`[[4]]`)."""
    outputs: str
    """`output_sizes`, as text."""
    state: str
    """`scheduled`, `started` or `completed`."""


@dataclass(frozen=True, slots=True)
class Dump:
    """One rank's Flight Recorder dump."""

    file: str
    """The file as named."""
    rank: int
    """The global rank, from the number that ends the file name."""
    version: str
    """The dump format's version."""
    groups: dict[tuple[str, str], tuple[Collective, ...]]
    """(process group name, description) to its collectives, in buffer order."""
    members: dict[str, tuple[int, ...]]
    """Process group name to its ranks, from `pg_config`."""


@dataclass(frozen=True, slots=True)
class Finding:
    """What the dumps show about one process group."""

    kind: Literal["behind", "mismatch"]
    """`behind`: ranks never entered a collective that others entered; `mismatch`: ranks
    called a different collective, or different sizes, at the same sequence number."""
    group: str
    """The process group: `0 (default_pg)`."""
    seq: int
    """The sequence number of the collective."""
    ranks: tuple[int, ...]
    """The ranks behind, or the ranks that differ."""
    others: tuple[int, ...]
    """The ranks that entered it, or whose call the differing ranks are set against."""
    expected: str
    """What the others called: `all_reduce [[4]]`."""
    found: tuple[str, ...]
    """For a mismatch, what each differing rank called (in `ranks` order)."""
    entry: str
    """The entry id that explains it."""

    @property
    def text(self) -> str:
        """One sentence for the report."""
        who = _ranks(self.ranks)
        if self.kind == "behind":
            return (
                f"process group {self.group}: {who} behind: never entered collective "
                f"#{self.seq} ({self.expected}) that {_ranks(self.others)} entered"
            )
        calls = "; ".join(f"rank {r}: {f}" for r, f in zip(self.ranks, self.found, strict=True))
        return (
            f"process group {self.group}: collective #{self.seq} differs: {calls}; "
            f"{_ranks(self.others)}: {self.expected}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "group": self.group,
            "seq": self.seq,
            "ranks": list(self.ranks),
            "others": list(self.others),
            "expected": self.expected,
            "found": list(self.found),
            "entry": self.entry,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Report:
    """What a set of dumps says."""

    files: tuple[tuple[str, int], ...]
    """(file, rank) of each dump read."""
    findings: tuple[Finding, ...]
    """Behind and mismatch findings, by process group."""
    missing: tuple[int, ...]
    """Members of a compared process group that left no dump."""

    def as_json(self) -> dict[str, Any]:
        return {
            "dumps": [{"file": f, "rank": r} for f, r in self.files],
            "findings": [f.as_json() for f in self.findings],
            "missing_ranks": list(self.missing),
        }


def _ranks(ranks: Sequence[int]) -> str:
    return f"rank{'s' * (len(ranks) > 1)} {','.join(map(str, ranks))}"


def looks_like_dump(data: bytes) -> bool:
    """A JSON object naming the Flight Recorder's fields near its start, or a pickle (so that
    it is refused with the way to get JSON rather than skipped)."""
    head = data[:4096]
    return head[:1] == b"\x80" or (
        head.lstrip()[:1] == b"{"
        and b'"pg_config"' in data[: 1 << 20]
        or b'"collective_seq_id"' in head
    )


def parse(data: bytes, name: str) -> Dump:
    """One rank's dump from its bytes; `ReaderError` when it is not a JSON dump, saying what
    was expected (and, for a pickle, how to get JSON)."""
    if len(data) > MAX_BYTES:
        raise ReaderError(
            name,
            f"{len(data):,} bytes, more than the {MAX_BYTES:,} a Flight "
            "Recorder dump is read to; not read",
            "lower TORCH_FR_BUFFER_SIZE, or dump without stack frames",
        )
    if data[:1] == b"\x80":
        raise ReaderError(
            name,
            "a Python pickle, not a JSON Flight Recorder dump: Nanopedia "
            "never unpickles a file (loading a pickle runs its code)",
            HOW_TO_GET_JSON,
        )
    expected = 'a Flight Recorder JSON dump: {"version": ..., "pg_config": {...}, "entries": [...]}'
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as err:
        raise ReaderError(
            name,
            f"not valid JSON at line {err.lineno}, column {err.colno}: "
            f"{err.msg}; expected {expected}",
            HOW_TO_GET_JSON,
        ) from None
    except (ValueError, RecursionError) as err:
        raise ReaderError(name, f"not {expected} ({type(err).__name__}: {err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise ReaderError(name, f'no "entries" list; expected {expected}')
    found = _TRAILING_NUMBER.search(PurePath(name).name.removesuffix(".json"))
    if not found:
        raise ReaderError(
            name,
            "no rank at the end of the file name",
            "name each rank's dump <prefix><rank> (rank3.json, "
            "nccl_trace_rank_3), as torch's analyser expects",
        )
    entries = doc["entries"]
    if len(entries) > MAX_ENTRIES:
        raise ReaderError(name, f"{len(entries):,} entries, more than the {MAX_ENTRIES:,} read")
    groups: dict[tuple[str, str], list[Collective]] = {}
    for i, e in enumerate(entries):
        where = f"entries[{i}]"
        if not isinstance(e, dict):
            raise ReaderError(name, f"{where} is a {type(e).__name__}, not an object")
        pg = e.get("process_group")
        if not (isinstance(pg, list) and len(pg) == 2 and all(isinstance(p, str) for p in pg)):
            raise ReaderError(name, f"{where}.process_group: expected [name, description]")
        if e.get("is_p2p") is True:
            continue
        seq, label = e.get("collective_seq_id"), e.get("profiling_name")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ReaderError(name, f"{where}.collective_seq_id: expected an integer")
        if not isinstance(label, str):
            raise ReaderError(name, f"{where}.profiling_name: expected text")
        groups.setdefault((pg[0], pg[1]), []).append(
            Collective(
                seq,
                label.split(":", 1)[-1],
                label,
                _sizes(e.get("input_sizes")),
                _sizes(e.get("output_sizes")),
                str(e.get("state", ""))[:20],
            )
        )
    return Dump(
        name,
        int(found.group(1)),
        str(doc.get("version", ""))[:20],
        {k: tuple(v) for k, v in groups.items()},
        _members(doc.get("pg_config")),
    )


def _sizes(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))[:200] if value is not None else "?"


def _members(config: object) -> dict[str, tuple[int, ...]]:
    """`pg_config`'s ranks of each process group (written as the text of a list)."""
    out: dict[str, tuple[int, ...]] = {}
    if not isinstance(config, dict):
        return out
    for key, pg in config.items():
        ranks = pg.get("ranks") if isinstance(pg, dict) else None
        if isinstance(ranks, str) and len(ranks) < 1 << 20:
            try:
                ranks = ast.literal_eval(ranks)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
        if isinstance(ranks, list) and all(isinstance(r, int) for r in ranks):
            out[str(key)] = tuple(ranks)
    return out


def analyse(dumps: Sequence[Dump]) -> Report:
    """Every process group compared across the ranks' dumps."""
    by_rank = {d.rank: d for d in sorted(dumps, key=lambda d: d.rank)}
    findings: list[Finding] = []
    missing: set[int] = set()
    for key in sorted({k for d in by_rank.values() for k in d.groups}):
        name, desc = key
        members = {r for r, d in by_rank.items() if key in d.groups}
        for d in by_rank.values():
            members |= set(d.members.get(name, ()))
        missing |= members - set(by_rank)
        seen = {r: by_rank[r].groups.get(key, ()) for r in sorted(members & set(by_rank))}
        label = f"{name} ({desc})" if desc else name
        findings += _compare(label, seen)
    return Report(
        tuple((d.file, d.rank) for d in by_rank.values()), tuple(findings), tuple(sorted(missing))
    )


def _call(c: Collective) -> str:
    return f"{c.op} {c.inputs}"


def _compare(label: str, seen: dict[int, tuple[Collective, ...]]) -> list[Finding]:
    if len(seen) < 2:
        return []
    # The buffers are rings: compare from the first number every rank still holds.
    start = max((c[0].seq for c in seen.values() if c), default=0)
    calls = {r: {c.seq: c for c in reversed(cs) if c.seq >= start} for r, cs in seen.items()}
    out: list[Finding] = []
    last = {r: max(c, default=0) for r, c in calls.items()}
    top = max(last.values())
    behind = sorted(r for r, n in last.items() if n < top)
    if behind:
        seq = min(last[r] for r in behind) + 1
        entered = sorted(r for r, c in calls.items() if seq in c)
        ref = calls[entered[0]][seq]
        out.append(
            Finding(
                "behind",
                label,
                seq,
                tuple(r for r in behind if last[r] < seq),
                tuple(entered),
                _call(ref),
                (),
                BEHIND_ENTRY,
            )
        )
    for seq in sorted({n for c in calls.values() for n in c}):
        here = {r: c[seq] for r, c in calls.items() if seq in c}
        if len(here) < 2:
            continue
        sign = {r: _signature(c) for r, c in here.items()}
        if len(set(sign.values())) == 1:
            continue
        counts: dict[tuple[str, str, str], list[int]] = {}
        for r, s in sign.items():
            counts.setdefault(s, []).append(r)
        ref_sign = max(counts, key=lambda s: (len(counts[s]), -min(counts[s])))
        odd = sorted(r for r, s in sign.items() if s != ref_sign)
        ref = here[counts[ref_sign][0]]
        out.append(
            Finding(
                "mismatch",
                label,
                seq,
                tuple(odd),
                tuple(sorted(counts[ref_sign])),
                _call(ref),
                tuple(_call(here[r]) for r in odd),
                MISMATCH_ENTRY,
            )
        )
        if len(out) >= FINDINGS_PER_GROUP:
            break
    return out


def _signature(c: Collective) -> tuple[str, str, str]:
    if c.op in _UNEVEN or c.op.startswith(("alltoall", "all_to_all")):
        return (c.op, "", "")
    return (c.op, c.inputs, c.outputs)
