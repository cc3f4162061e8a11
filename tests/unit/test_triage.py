"""The fleet summary (`diagnosis/triage.py`, `Summary`) folded from job records built by hand:
how jobs are grouped by entry, action, host and rank, and where the bounds cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

from nanopedia.content.corpus import gather
from nanopedia.diagnosis import triage
from nanopedia.diagnosis.jobs import Skip
from nanopedia.diagnosis.triage import REPEATED, Summary
from unit.test_catalogue import Memory


def record(job: str = "job", **fields: Any) -> dict[str, Any]:
    """A matched job's record with the fields the summary reads; `fields` override them."""
    verdict = fields.get("verdict", "nccl-timeout")
    base: dict[str, Any] = {
        "job": job,
        "layout": "rank-files",
        "host_rule": None,
        "status": "matched" if verdict else "unmatched",
        "files": ["rank0.log"],
        "bytes": 100,
        "lines": 10,
        "skipped": [],
        "matches": [{"id": verdict, "title": f"Title of {verdict}", "score": 10.0}]
        if verdict
        else [],
        "hosts": [],
        "verdict": verdict,
        "confidence": "certain",
        "initiating_host": None,
        "initiating_rank": None,
        "domain": "infrastructure",
        "action": "drain-node",
        "error_lines": [],
    }
    return base | fields


def summary(*items: dict[str, Any] | Skip) -> dict[str, Any]:
    s = Summary()
    for item in items:
        s.add(item)
    return s.as_json()


def test_jobs_are_counted_by_status() -> None:
    s = summary(
        record("a"),
        record("b", verdict=None),
        record("c", verdict=None, status="clean"),
        record("d", verdict=None, status="skipped"),
    )
    assert s["jobs"] == {"total": 4, "matched": 1, "unmatched": 1, "clean": 1, "skipped": 1}


def test_files_bytes_and_lines_add_up_over_jobs() -> None:
    s = summary(record("a", files=["x", "y"], bytes=5, lines=2), record("b", bytes=7, lines=3))
    assert (s["files"]["scanned"], s["files"]["bytes"], s["files"]["lines"]) == (3, 12, 5)


def test_entries_are_ranked_by_jobs_then_id_with_their_share() -> None:
    s = summary(
        record("1", verdict="b"),
        record("2", verdict="a"),
        record("3", verdict="c"),
        record("4", verdict="c"),
    )
    assert [(e["id"], e["jobs"], e["share"]) for e in s["entries"]] == [
        ("c", 2, 0.5),
        ("a", 1, 0.25),
        ("b", 1, 0.25),
    ]
    assert s["entries"][0]["title"] == "Title of c"


def test_possible_verdicts_are_counted_apart() -> None:
    s = summary(record("1"), record("2", confidence="possible"), record("3"))
    (entry,) = s["entries"]
    assert (entry["possible"], entry["possible_share"]) == (1, round(1 / 3, 4))


def test_an_entry_counts_every_job_it_was_a_candidate_in() -> None:
    other = {"id": "other", "title": "Other"}
    s = summary(
        record("1", matches=[{"id": "nccl-timeout", "title": "T"}, other]),
        record("2", verdict=None, matches=[other]),
    )
    assert s["entries"][0]["candidate_jobs"] == 1
    assert [e["id"] for e in s["entries"]] == ["nccl-timeout"]


@pytest.mark.parametrize("jobs, shown", [(REPEATED - 1, False), (REPEATED, True)])
def test_a_host_is_shown_once_it_failed_first_in_repeated_jobs(jobs: int, shown: bool) -> None:
    items = [record(str(i), initiating_host="gpu-07", hosts=["gpu-07"]) for i in range(jobs)]
    s = summary(*items, record("x", hosts=["gpu-07", "gpu-08"]))
    assert bool(s["hosts"]) is shown
    if shown:
        assert s["hosts"][0] == {
            "host": "gpu-07",
            "first_failures": jobs,
            "jobs": jobs + 1,
            "entries": [{"id": "nccl-timeout", "jobs": jobs}],
        }


def test_hosts_are_ordered_by_first_failures_then_name() -> None:
    items = [record(f"b{i}", initiating_host="b-host") for i in range(2)]
    items += [record(f"a{i}", initiating_host="a-host") for i in range(2)]
    items += [record(f"c{i}", initiating_host="c-host") for i in range(3)]
    assert [h["host"] for h in summary(*items)["hosts"]] == ["c-host", "a-host", "b-host"]


def test_rank_zero_is_a_first_failing_rank_like_any_other() -> None:
    s = summary(*[record(str(i), initiating_rank=0) for i in range(REPEATED)])
    assert s["ranks"] == [
        {"rank": 0, "first_failures": 2, "entries": [{"id": "nccl-timeout", "jobs": 2}]}
    ]
    assert summary(record("1", initiating_rank=3))["ranks"] == []


def test_ranks_are_ordered_by_first_failures_then_number() -> None:
    items = [
        record(f"r{r}-{i}", initiating_rank=r)
        for r, n in ((5, 2), (1, 2), (9, 3))
        for i in range(n)
    ]
    assert [r["rank"] for r in summary(*items)["ranks"]] == [9, 1, 5]


def test_unmatched_jobs_name_no_host_or_rank() -> None:
    s = summary(
        *[record(str(i), verdict=None, initiating_host="h", initiating_rank=1) for i in range(3)]
    )
    assert s["hosts"] == [] and s["ranks"] == [] and s["actions"] == []


def test_actions_count_jobs_and_distinct_hosts() -> None:
    s = summary(
        record("1", initiating_host="h1"),
        record("2", initiating_host="h1", verdict="ecc"),
        record("3", initiating_host="h2"),
        record("4"),
        record("5", domain="workload", action="fix-code", verdict="oom"),
        record("6", action=None, verdict="other"),
    )
    assert s["actions"] == [
        {
            "domain": "infrastructure",
            "action": "drain-node",
            "jobs": 4,
            "hosts": 2,
            "entries": [{"id": "nccl-timeout", "jobs": 3}, {"id": "ecc", "jobs": 1}],
        },
        {
            "domain": "workload",
            "action": "fix-code",
            "jobs": 1,
            "hosts": 0,
            "entries": [{"id": "oom", "jobs": 1}],
        },
    ]


def test_only_infrastructure_failures_are_listed_by_host() -> None:
    s = summary(
        record("1", initiating_host="gpu-1"),
        record("2", initiating_host="gpu-1", verdict="ecc"),
        record("3", initiating_host="gpu-2"),
        record("4", initiating_host="cpu-9", domain="workload"),
        record("5"),
    )
    assert s["infrastructure_hosts"] == [
        {
            "host": "gpu-1",
            "jobs": 2,
            "entries": [{"id": "ecc", "jobs": 1}, {"id": "nccl-timeout", "jobs": 1}],
        },
        {"host": "gpu-2", "jobs": 1, "entries": [{"id": "nccl-timeout", "jobs": 1}]},
    ]


def gap(text: str, job: str, line: int = 3) -> dict[str, Any]:
    return {
        "text": text,
        "example": f"{text} ({job})",
        "file": f"{job}.log",
        "line": line,
        "count": 1,
    }


def test_unknown_error_lines_are_grouped_across_jobs_by_their_normal_form() -> None:
    s = summary(
        record("j1", verdict=None, error_lines=[gap("B error", "j1"), gap("A error", "j1")]),
        record("j2", verdict=None, error_lines=[gap("B error", "j2", 9)]),
        record("j3", verdict=None, error_lines=[gap("C error", "j3")]),
    )
    assert s["gaps"] == [
        {
            "text": "B error",
            "jobs": 2,
            "example": "B error (j1)",
            "job": "j1",
            "file": "j1.log",
            "line": 3,
        },
        {
            "text": "A error",
            "jobs": 1,
            "example": "A error (j1)",
            "job": "j1",
            "file": "j1.log",
            "line": 3,
        },
        {
            "text": "C error",
            "jobs": 1,
            "example": "C error (j3)",
            "job": "j3",
            "file": "j3.log",
            "line": 3,
        },
    ]
    assert [u["job"] for u in s["unmatched"]] == ["j1", "j2", "j3"]


def test_matched_jobs_add_no_unknown_lines() -> None:
    assert summary(record("1", error_lines=[gap("x", "1")]))["gaps"] == []


def test_the_summary_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triage, "UNMATCHED_KEPT", 2)
    monkeypatch.setattr(triage, "GAP_KEYS", 2)
    monkeypatch.setattr(triage, "GAPS_SHOWN", 1)
    jobs = [record(f"j{i}", verdict=None, error_lines=[gap(f"e{i}", f"j{i}")]) for i in range(4)]
    jobs.append(record("j9", verdict=None, error_lines=[gap("e0", "j9")]))
    s = summary(*jobs)
    assert [u["job"] for u in s["unmatched"]] == ["j0", "j1"] and s["unmatched_more"] == 3
    assert s["gaps"] == [
        {"text": "e0", "jobs": 2, "example": "e0 (j0)", "job": "j0", "file": "j0.log", "line": 3}
    ]


def test_infrastructure_hosts_stop_growing_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triage, "HOSTS_COUNTED", 1)
    s = summary(
        record("1", initiating_host="h1"),
        record("2", initiating_host="h2"),
        record("3", initiating_host="h1"),
    )
    assert [(h["host"], h["jobs"]) for h in s["infrastructure_hosts"]] == [("h1", 2)]
    assert s["actions"][0]["hosts"] == 1


def skip(path: str, reason: str = "binary") -> Skip:
    return Skip(path, reason, "not text")


def test_skips_are_counted_by_reason_and_named_up_to_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(triage, "SKIPS_KEPT", 2)
    s = summary(
        skip("a.bin"),
        skip("big.log", "too-large"),
        record("1", skipped=[{"path": "x", "reason": "binary", "detail": "d"}]),
    )
    assert s["skipped"]["by_reason"] == {"binary": 2, "too-large": 1}
    assert [f["path"] for f in s["skipped"]["files"]] == ["a.bin", "big.log"]
    assert s["skipped"]["more"] == 1
    assert s["files"]["skipped"] == 3


def test_ties_are_broken_by_name_in_every_list() -> None:
    s = summary(
        record("1", initiating_host="b-host", domain="workload", action="fix-code", verdict="z"),
        record("2", initiating_host="a-host", domain="infrastructure", action="drain-node"),
        record("3", verdict=None, error_lines=[gap("b line", "j1") | {"example": "a example"}]),
        record("4", verdict=None, error_lines=[gap("a line", "j2") | {"example": "b example"}]),
    )
    assert [(a["domain"], a["action"]) for a in s["actions"]] == [
        ("infrastructure", "drain-node"),
        ("workload", "fix-code"),
    ]
    assert [g["text"] for g in s["gaps"]] == ["a line", "b line"]
    infra = summary(
        record("1", initiating_host="b-host", verdict="y"),
        record("2", initiating_host="a-host", verdict="z"),
    )
    assert [h["host"] for h in infra["infrastructure_hosts"]] == ["a-host", "b-host"]


def test_more_jobs_come_before_a_name_that_sorts_first() -> None:
    s = summary(
        record("1", initiating_host="z-host", domain="workload", action="fix-code"),
        record("2", initiating_host="z-host", domain="workload", action="fix-code"),
        record("3", initiating_host="a-host"),
    )
    assert [a["action"] for a in s["actions"]] == ["fix-code", "drain-node"]
    infra = summary(
        record("1", initiating_host="z-host"),
        record("2", initiating_host="z-host"),
        record("3", initiating_host="a-host"),
    )
    assert [h["host"] for h in infra["infrastructure_hosts"]] == ["z-host", "a-host"]


def test_shares_are_rounded_to_four_places() -> None:
    s = summary(record("1"), record("2", verdict="b"), record("3", verdict="c"))
    assert s["entries"][0]["share"] == 0.3333


def test_candidate_jobs_count_every_job() -> None:
    s = summary(record("1"), record("2"), record("3"))
    assert s["entries"][0]["candidate_jobs"] == 3


def test_nothing_more_to_say_when_every_skip_is_named() -> None:
    assert summary(skip("a"))["skipped"]["more"] == 0


def test_distinct_unknown_lines_stop_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triage, "GAP_KEYS", 2)
    jobs = [record(f"j{i}", verdict=None, error_lines=[gap(f"e{i}", f"j{i}")]) for i in range(4)]
    assert [g["text"] for g in summary(*jobs)["gaps"]] == ["e0", "e1"]


ALPHA_LINE = "[rank0]: RuntimeError: expected scalar type BFloat16 but found Float\n"


def test_the_api_triages_a_mapping_of_jobs_with_the_entries_of_a_folder() -> None:
    result = triage.triage(
        {"job-1": ALPHA_LINE, "job-2": {"rank0.log": "all fine\n", "rank1.log": b"ok\n"}},
        entries=FIXTURES / "corpus",
        jobs=1,
    )
    assert [(j["job"], j["verdict"]) for j in result.jobs] == [
        ("job-1", "alpha-failure"),
        ("job-2", None),
    ]
    assert result.entries == {"used": 2, "skipped": []}
    assert result.summary["jobs"]["total"] == 2
    out = result.as_json()
    assert out["schema_version"] == triage.SCHEMA_VERSION == 2
    assert out["jobs"] == list(result.jobs) and out["summary"] == result.summary


def test_every_option_of_the_api_reaches_the_jobs(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for job, files in {
        "job-a": {"rank0.log": ALPHA_LINE, "rank1.log": "x" * 5000 + "\n"},
        "job-b": {"rank0.log": "all fine\n"},
    }.items():
        (fleet / job).mkdir(parents=True)
        for name, text in files.items():
            (fleet / job / name).write_text(text)
    store = Memory()
    result = triage.triage(
        fleet,
        entries=FIXTURES / "corpus",
        jobs=1,
        base_url="https://docs.example/np/",
        max_file_bytes=1000,
        store=store,
        job_pattern="job-a",  # job-b is no job of this pattern
    )
    (job,) = result.jobs
    assert (job["job"], job["layout"], job["verdict"]) == (
        str(fleet / "job-a"),
        "pattern",
        "alpha-failure",
    )
    assert job["matches"][0]["url"] == "https://docs.example/np/entries/alpha-failure.html"
    assert [(s["path"], s["reason"]) for s in job["skipped"]] == [
        (str(fleet / "job-a" / "rank1.log"), "too-large")
    ]
    assert store.writes == 1  # the folder's catalogue was compiled into the store given
    late = triage.triage(fleet, entries=FIXTURES / "corpus", jobs=1, deadline=0)
    assert {s["reason"] for j in late.jobs for s in j["skipped"]} == {"deadline"}
    assert [j["verdict"] for j in late.jobs] == [None, None]


def test_the_api_keeps_the_top_matches_it_is_asked_for() -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    alpha = catalog.by_id["alpha-failure"].entry
    entries = [alpha, alpha.model_copy(update={"id": "alpha-copy", "title": "Alpha, copied"})]
    whole = triage.triage({"job-1": ALPHA_LINE}, entries=entries, jobs=1)
    one = triage.triage({"job-1": ALPHA_LINE}, entries=entries, jobs=1, top=1)
    assert len(whole.jobs[0]["matches"]) == 2
    assert [m["id"] for m in one.jobs[0]["matches"]] == [whole.jobs[0]["matches"][0]["id"]]


def test_the_api_takes_entries_as_objects() -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    entries = [src.entry for src in catalog.sources]
    result = triage.triage({"job-1": ALPHA_LINE}, entries=entries, jobs=1)
    assert result.jobs[0]["verdict"] == "alpha-failure"
    assert result.entries == {"used": 2, "skipped": []}


def test_without_entries_the_api_reads_the_encyclopedia_it_ships(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nanopedia import theme_dir

    monkeypatch.setattr(theme_dir, "locate_entries", lambda: FIXTURES / "corpus")
    used, left_out = triage.load_entries(None)
    assert sorted(e.id for e in used) == ["alpha-failure", "beta-failure"] and left_out == []
    assert triage.triage({"job-1": ALPHA_LINE}, jobs=1).jobs[0]["verdict"] == "alpha-failure"


def test_the_api_names_an_entries_folder_that_is_missing(tmp_path: Path) -> None:
    with pytest.raises(triage.TriageError, match=f"no such entries directory: {tmp_path / 'x'}"):
        triage.triage({"job": "x"}, entries=tmp_path / "x", jobs=1)
