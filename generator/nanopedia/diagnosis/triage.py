"""Fleet triage: every job under some folders diagnosed with the engine of `nanopedia diagnose`,
then summed up for a platform team: which entries cost the most jobs, which hosts and ranks keep
failing first (a bad GPU), and which failures the encyclopedia does not know yet.

Python API, for a pipeline that has its own scheduler (Spark, Airflow, a job-failure hook)::

    from nanopedia.diagnosis.triage import triage
    result = triage(["/logs/week-32"], jobs=8)        # folders and files, grouped as the CLI does
    result = triage({"job-17": lines})                # a mapping job -> lines (str or bytes) ...
    result = triage({"job-18": {"rank0.log": l0, "rank1.log": l1}})   # ... or -> {file: lines}
    result.jobs[0]["verdict"]                         # the entry id of the first job, or None
    result.summary["entries"][0]                      # {"id": ..., "jobs": 312, "possible": 4, ...}
    json.dumps(result.as_json(), indent=2, sort_keys=True)   # what `--format json` prints

`TriageResult.as_json()` follows `nanopedia/diagnosis/triage.schema.json`
(`"schema_version": 2`; removing or renaming a field bumps the version, adding one does not;
version 2 only added each job's `domain` and `action` and the summary's `actions`, so a reader of
version 1 reads version 2 as it is).
`workers.stream()` yields the same job records one at a time, in job order, for a fleet too large
to hold; `Summary` folds them.

The parts: `jobs` finds the jobs; `workers` runs them (each file read by `scan`, ranked by
`rank`); `hosts` names the host of each first failure, `error_lines` the errors no entry knows;
this module folds the records into the fleet's summary.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanopedia.diagnosis.catalogue import EntryView, Store, load, views
from nanopedia.diagnosis.jobs import Skip, TriageError
from nanopedia.diagnosis.workers import JOB_DEADLINE, MAX_FILE_BYTES, TOP, Options, Source, stream
from nanopedia.errors import Problem

if TYPE_CHECKING:
    from nanopedia.model import Entry

__all__ = [
    "REPEATED",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Options",
    "Skip",
    "Summary",
    "TriageError",
    "TriageResult",
    "load_entries",
    "stream",
    "triage",
]
"""The triage API: what a pipeline imports from here (the parts live in jobs and workers)."""

#: Version of the JSON this module writes (`triage.schema.json`).
SCHEMA_VERSION = 2
SCHEMA = Path(__file__).resolve().parent / "triage.schema.json"
"""The JSON Schema of `TriageResult.as_json()`, shipped with the package."""


#: A host or rank is shown when it failed first in at least this many jobs.
REPEATED = 2
#: Bounds of the summary, whatever the fleet: named skips, unmatched jobs listed, distinct error
#: lines counted across jobs, and those shown.
SKIPS_KEPT = 1000
UNMATCHED_KEPT = 1000
GAP_KEYS = 20_000
GAPS_SHOWN = 50
#: Distinct hosts counted per domain and action ("drain-node: 9 jobs on 3 hosts") and for
#: infrastructure failures, and hosts of infrastructure failures listed in the summary.
HOSTS_COUNTED = 10_000
INFRA_SHOWN = 100


class Summary:
    """Folds job records (and skips) into the fleet's summary, in bounded memory: counters per
    entry, host and rank, and at most `GAP_KEYS` distinct error lines."""

    def __init__(self) -> None:
        self.status: Counter[str] = Counter()
        self.files = self.bytes = self.lines = 0
        self.titles: dict[str, str] = {}
        self.verdicts: Counter[str] = Counter()
        self.possible: Counter[str] = Counter()
        self.candidates: Counter[str] = Counter()
        self.host_jobs: Counter[str] = Counter()
        self.host_first: dict[str, Counter[str]] = {}
        self.rank_first: dict[int, Counter[str]] = {}
        self.actions: Counter[tuple[str, str]] = Counter()
        self.action_hosts: dict[tuple[str, str], set[str]] = {}
        self.action_entries: dict[tuple[str, str], Counter[str]] = {}
        self.infra_hosts: dict[str, Counter[str]] = {}
        self.gaps: dict[str, list[Any]] = {}  # text -> [jobs, example, job, file, line]
        self.unmatched: list[dict[str, Any]] = []
        self.unmatched_more = 0
        self.skip_reasons: Counter[str] = Counter()
        self.skips: list[dict[str, Any]] = []

    def add(self, item: dict[str, Any] | Skip) -> None:
        if isinstance(item, Skip):
            self._skip(item.as_json())
            return
        self.status[item["status"]] += 1
        self.files += len(item["files"])
        self.bytes += item["bytes"]
        self.lines += item["lines"]
        for skip in item["skipped"]:
            self._skip(skip)
        for m in item["matches"]:
            self.candidates[m["id"]] += 1
            self.titles.setdefault(m["id"], m["title"])
        self.host_jobs.update(item["hosts"])
        verdict = item["verdict"]
        if verdict:
            self.verdicts[verdict] += 1
            self.possible[verdict] += item["confidence"] == "possible"
            if item["initiating_host"]:
                self.host_first.setdefault(item["initiating_host"], Counter())[verdict] += 1
            if item["initiating_rank"] is not None:
                self.rank_first.setdefault(item["initiating_rank"], Counter())[verdict] += 1
            if item["action"]:
                key = (item["domain"], item["action"])
                self.actions[key] += 1
                self.action_entries.setdefault(key, Counter())[verdict] += 1
                hosts = self.action_hosts.setdefault(key, set())
                if item["initiating_host"] and len(hosts) < HOSTS_COUNTED:
                    hosts.add(item["initiating_host"])
            host = item["initiating_host"]
            if (
                item["domain"] == "infrastructure"
                and host
                and (host in self.infra_hosts or len(self.infra_hosts) < HOSTS_COUNTED)
            ):
                self.infra_hosts.setdefault(host, Counter())[verdict] += 1
        if item["status"] == "unmatched":
            self._gap(item)

    def _skip(self, skip: dict[str, Any]) -> None:
        self.skip_reasons[skip["reason"]] += 1
        if len(self.skips) < SKIPS_KEPT:
            self.skips.append(skip)

    def _gap(self, item: dict[str, Any]) -> None:
        if len(self.unmatched) < UNMATCHED_KEPT:
            self.unmatched.append({"job": item["job"], "error_lines": item["error_lines"]})
        else:
            self.unmatched_more += 1
        for row in item["error_lines"]:
            gap = self.gaps.get(row["text"])
            if gap is not None:
                gap[0] += 1
            elif len(self.gaps) < GAP_KEYS:
                self.gaps[row["text"]] = [1, row["example"], item["job"], row["file"], row["line"]]

    def as_json(self) -> dict[str, Any]:
        total = sum(self.status.values())
        matched = self.status["matched"]
        return {
            "jobs": {
                "total": total,
                **{s: self.status[s] for s in ("matched", "unmatched", "clean", "skipped")},
            },
            "files": {
                "scanned": self.files,
                "bytes": self.bytes,
                "lines": self.lines,
                "skipped": sum(self.skip_reasons.values()),
            },
            "entries": [
                {
                    "id": i,
                    "title": self.titles[i],
                    "jobs": n,
                    "share": round(n / matched, 4),
                    "possible": self.possible[i],
                    "possible_share": round(self.possible[i] / n, 4),
                    "candidate_jobs": self.candidates[i],
                }
                for i, n in sorted(self.verdicts.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "actions": [
                {
                    "domain": d,
                    "action": a,
                    "jobs": n,
                    "hosts": len(self.action_hosts[(d, a)]),
                    "entries": _counts(self.action_entries[(d, a)]),
                }
                for (d, a), n in sorted(self.actions.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "infrastructure_hosts": [
                {"host": h, "jobs": sum(c.values()), "entries": _counts(c)}
                for h, c in sorted(
                    self.infra_hosts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])
                )[:INFRA_SHOWN]
            ],
            "hosts": [
                {
                    "host": h,
                    "first_failures": sum(c.values()),
                    "jobs": self.host_jobs[h],
                    "entries": _counts(c),
                }
                for h, c in sorted(
                    self.host_first.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])
                )
                if sum(c.values()) >= REPEATED
            ],
            "ranks": [
                {"rank": r, "first_failures": sum(c.values()), "entries": _counts(c)}
                for r, c in sorted(
                    self.rank_first.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])
                )
                if sum(c.values()) >= REPEATED
            ],
            "gaps": [
                {"text": t, "jobs": n, "example": ex, "job": job, "file": f, "line": ln}
                for t, (n, ex, job, f, ln) in sorted(
                    self.gaps.items(), key=lambda kv: (-kv[1][0], kv[0])
                )[:GAPS_SHOWN]
            ],
            "unmatched": self.unmatched,
            "unmatched_more": self.unmatched_more,
            "skipped": {
                "by_reason": dict(sorted(self.skip_reasons.items())),
                "files": self.skips,
                "more": max(0, sum(self.skip_reasons.values()) - len(self.skips)),
            },
        }


def _counts(c: Counter[str]) -> list[dict[str, Any]]:
    return [{"id": i, "jobs": n} for i, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


@dataclass(frozen=True, slots=True)
class TriageResult:
    """Every job's record, in job order, and the fleet's summary: what `--format json` prints."""

    jobs: tuple[dict[str, Any], ...]
    """One record per job (see `triage.schema.json`, `$defs/job`)."""
    summary: dict[str, Any]
    """`Summary.as_json()`."""
    entries: dict[str, Any]
    """`{"used": n, "skipped": [problem, ...]}`: the entries the diagnosis could use."""

    def as_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "entries": self.entries,
            "jobs": list(self.jobs),
            "summary": self.summary,
        }


def load_entries(
    entries: str | os.PathLike[str] | Sequence[Entry | EntryView] | None, store: Store | None = None
) -> tuple[list[EntryView], list[Problem]]:
    """The entries to match (default: the encyclopedia the package ships) and the problems of
    those left out, from the compiled catalogue (`store` keeps it between calls)."""
    if entries is not None and not isinstance(entries, (str, os.PathLike)):
        return views(entries), []
    from nanopedia.theme_dir import locate_entries

    root = Path(entries) if entries is not None else locate_entries()
    if not root.is_dir():
        raise TriageError(f"no such entries directory: {root}")
    found = load(root, store)
    return list(found.entries), list(found.skipped)


def triage(
    source: Source,
    *,
    entries: str | os.PathLike[str] | Sequence[Entry | EntryView] | None = None,
    jobs: int | None = None,
    ray: str | None = None,
    job_pattern: str | None = None,
    top: int = TOP,
    base_url: str | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    deadline: float = JOB_DEADLINE,
    store: Store | None = None,
) -> TriageResult:
    """Triage a fleet and return every job's record with the summary.

    `source`: a folder or file, a list of them, or a mapping job name -> lines (or -> {file
    name: lines}). `entries`: a folder or a list of `Entry` (default: the shipped encyclopedia).
    `store`: where the compiled catalogue of an entries folder is kept between calls (e.g.
    `nanopedia.incremental.catalogue.user_store()`; default: the shipped artifact, else compiled
    in memory).
    `jobs`: worker processes (default: one per core). `ray`: a cluster address, or "" for a
    local Ray instance of `jobs` CPUs (needs `nanopedia[ray]`). Raises `TriageError` for bad
    usage; unreadable, binary or oversized files are skipped and named, never raised.
    """
    used, left_out = load_entries(entries, store)
    options = Options(top, base_url, max_file_bytes, deadline)
    summary = Summary()
    records = []
    for item in stream(source, used, jobs=jobs, ray=ray, job_pattern=job_pattern, options=options):
        summary.add(item)
        if not isinstance(item, Skip):
            records.append(item)
    return TriageResult(
        tuple(records),
        summary.as_json(),
        {"used": len(used), "skipped": [p.as_dict() for p in left_out]},
    )
