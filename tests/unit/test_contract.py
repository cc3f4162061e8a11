"""The data a diagnosis hands on (`diagnosis/contract.py`): the `--format json` object a program
reads, field by field, and the constants and patterns the browser matcher is given."""

from __future__ import annotations

import json

import pytest

from nanopedia.diagnosis import contract, lines, logs, rank, report, scan
from nanopedia.diagnosis.catalogue import EntryView, FingerprintView
from nanopedia.diagnosis.rank import Diagnosis
from nanopedia.diagnosis.scan import FileScan

from .conftest import Made, line


@pytest.mark.parametrize(
    ("base", "link"),
    [
        (None, "site/entries/x.html"),
        ("", "site/entries/x.html"),
        ("https://np.example", "https://np.example/entries/x.html"),
        ("https://np.example/wiki//", "https://np.example/wiki/entries/x.html"),
        ("https://np.example/DOCX/", "https://np.example/DOCX/entries/x.html"),
    ],
)
def test_an_entry_is_linked_under_the_base_url_or_in_the_built_site(
    base: str | None, link: str
) -> None:
    assert contract.entry_link("x", base) == link


def test_the_json_object_carries_every_field_of_the_diagnosis(made: Made) -> None:
    files = (FileScan("run/job.log", (), {}, (), 120, 4096),)
    d = Diagnosis(
        made.diagnosis.matches,
        0,
        made.diagnosis.initiating,
        "the earliest timestamp",
        files,
        (2, 7),
        made.diagnosis.error_files[:1],
        made.diagnosis.flight_report,
        root_cause_rank=6,
    )
    out = contract.as_json(d, "https://np.example/", 2)
    assert [m["id"] for m in out["matches"]] == ["alpha", "beta"]
    assert out["matches"][1] == {
        "id": "beta",
        "title": "Beta | failure",
        "score": 0.5,
        "benign": False,
        "possible": True,
        "url": "https://np.example/entries/beta.html",
        "evidence": [
            {
                "file": "run/job.log",
                "line": 50,
                "rank": 4,
                "text": "Error | `x` *y* @oncall https://a.example",
                "fingerprint": "generic",
                "indicates": "supporting",
                "collateral": False,
                "timestamp": None,
            }
        ],
    }
    assert len(out["matches"][0]["evidence"]) == 7
    assert out["matches"][0]["evidence"][-1]["collateral"] is True
    del out["matches"]
    assert out == {
        "initiating_rank": 0,
        "initiating": contract.evidence_json(made.diagnosis.initiating),
        "initiating_reason": "the earliest timestamp",
        "root_cause_rank": 6,
        "silent_ranks": [2, 7],
        "files": [{"file": "run/job.log", "lines": 120, "bytes": 4096}],
        "error_files": [made.diagnosis.error_files[0].as_json()],
        "flight_recorder": {
            "dumps": [
                {"file": "dump0", "rank": 0},
                {"file": "dump1", "rank": 1},
                {"file": "dump6", "rank": 6},
            ],
            "findings": [
                {
                    "kind": "behind",
                    "group": "0 (default_pg)",
                    "seq": 7,
                    "ranks": [6],
                    "others": [0, 1],
                    "expected": "all_reduce",
                    "found": [],
                    "entry": "nccl-hang",
                    "text": "process group 0 (default_pg): rank 6 behind: never entered "
                    "collective #7 (all_reduce) that ranks 0,1 entered",
                    "url": "https://np.example/entries/nccl-hang.html",
                }
            ],
            "missing_ranks": [2, 7],
        },
    }
    json.dumps(out)


def test_json_without_a_first_failure_or_dumps_says_null_and_top_none_gives_all(
    made: Made,
) -> None:
    d = Diagnosis(made.diagnosis.matches, None, None, None)
    out = contract.as_json(d, None)
    assert [m["id"] for m in out["matches"]] == ["alpha", "beta", "gamma"]
    assert [m["id"] for m in contract.as_json(d, None, 0)["matches"]] == ["alpha", "beta", "gamma"]
    assert out["matches"][2]["benign"] is True and out["matches"][2]["url"] == (
        "site/entries/gamma.html"
    )
    assert (out["initiating"], out["initiating_reason"], out["flight_recorder"]) == (
        None,
        None,
        None,
    )
    assert (out["silent_ranks"], out["files"], out["error_files"]) == ([], [], [])
    assert out["root_cause_rank"] is None


def test_evidence_json_is_every_field_a_reader_of_a_line_needs() -> None:
    ev = line("fp", None, 3, "text", "context", collateral=True)
    assert contract.evidence_json(ev) == {
        "file": "run/job.log",
        "line": 3,
        "rank": None,
        "text": "text",
        "fingerprint": "fp",
        "indicates": "context",
        "collateral": True,
        "timestamp": None,
    }


def test_each_fingerprint_row_carries_the_answer_of_its_cause_and_of_the_first(
    made: Made,
) -> None:
    alpha = made.entries["alpha"]
    fps = (
        FingerprintView("ecc", "ECC (?i)", "ecc", True, "decisive", False, 3, "gpu"),
        FingerprintView("abort", "abort", "abort", False, "context", True, 5, None),
        FingerprintView("gone", "gone", "gone", False, "benign", False, 4, "no-such-cause"),
    )
    entry = EntryView("alpha", alpha.title, fps, alpha.causes, alpha.fixes)
    rows = contract.fingerprint_rows(entry)
    first = {
        "cause": "Casts to `self.dtype`",
        "fix": "Cast from `x.dtype`",
        "domain": "workload",
        "action": "fix-code",
    }
    assert rows[0] == {
        "entry": "alpha",
        "title": "Alpha `bf16` failure",
        "id": "ecc",
        "pattern": "ECC (?i)",
        "program": "ecc",
        "ignore_case": True,
        "indicates": "decisive",
        "collateral": False,
        "specificity": 3,
        "answer": {
            "cause": "A bad GPU",
            "fix": "Drain the node",
            "domain": "infrastructure",
            "action": "drain-node",
        },
        "first": first,
    }
    assert [(r["id"], r["collateral"], r["answer"], r["first"]) for r in rows[1:]] == [
        ("abort", True, None, first),
        ("gone", False, None, first),
    ]


def test_the_browser_is_given_the_rankers_and_scanners_own_constants(made: Made) -> None:
    beta = made.entries["beta"]
    fp = FingerprintView("b", "b", "b", False, "supporting", False, 1, None)
    beta = EntryView(beta.id, beta.title, (fp,), beta.causes, beta.fixes)
    data = contract.export_data([beta, made.entries["alpha"]])
    assert [(r["entry"], r["id"]) for r in data.pop("fingerprints")] == [
        ("alpha", "cast-warning"),
        ("alpha", "ecc"),
        ("alpha", "nccl-abort"),
        ("beta", "b"),
    ]  # by entry id
    assert data == {
        "weights": rank.WEIGHTS,
        "collateral_factor": rank.COLLATERAL_FACTOR,
        "extra_line_share": rank.EXTRA_LINE_SHARE,
        "extra_lines": rank.EXTRA_LINES,
        "strength": list(report.STRENGTH),
        "confidence": report.CONFIDENCE,
        "evidence_cap": scan.EVIDENCE_CAP,
        "late_lines": scan.LATE_LINES,
        "text_chars": scan.TEXT_CHARS,
        "buffer_bytes": logs.BUFFER_BYTES,
        "max_line_bytes": logs.MAX_LINE_BYTES,
        "timestamp_window": lines.TIMESTAMP_WINDOW,
        "root_cause": scan.ROOT_CAUSE,
        "root_rank": scan.ROOT_RANK,
        "root_span": scan.ROOT_SPAN,
        "launcher_ranks": scan.LAUNCHER_RANKS,
        "wrap_sample": logs.WRAP_SAMPLE,
        "wrap_min": logs.WRAP_MIN,
        "neighbour_lines": lines.NEIGHBOUR_LINES,
        "max_ranks": scan.MAX_RANKS,
        "prefix_rank": lines.PREFIX_RANK.pattern,
        "message_rank": lines.MESSAGE_RANK.pattern,
        "joined_rank": lines.JOINED_RANK.pattern,
        "file_rank": lines.FILE_RANK.pattern,
        "iso_time": lines.ISO_TIME.pattern,
        "glog_time": lines.GLOG_TIME.pattern,
        "enqueued": lines.ENQUEUED.pattern,
    }
