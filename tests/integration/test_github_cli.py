"""`--format github` through the CLI, on a labelled log and a folder of jobs (the commands
themselves, from hand-made JSON, are in tests/unit/test_github_format.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nanopedia.diagnosis.github import escape_data, escape_property

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "logs"
#: A raw control character anywhere in the output (GitHub would read a CR or LF as a new command).
RAW_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def test_diagnose_github_puts_the_error_on_the_first_failing_line(cli) -> None:
    log = str(LOGS / "fsdp-mp-torchrun.log")
    shown = cli("diagnose", log, "--format", "github", "--top", "3")
    wanted = json.loads(cli("diagnose", log, "--format", "json", "--top", "3").out)
    lines = shown.out.splitlines()
    assert shown.code == 0 and len(lines) == 3 and not any(RAW_CONTROL.search(x) for x in lines)
    first = wanted["initiating"]
    best = wanted["matches"][0]
    assert lines[0].startswith(
        f"::error file={escape_property(log)},line={first['line']},"
        f"title=nanopedia%3A {best['id']} ({best['confidence']})::"
    )
    assert escape_data(first["text"]) in lines[0]
    for line, row in zip(lines[1:], wanted["matches"][1:], strict=True):
        assert line.startswith("::notice file=") and f"nanopedia%3A also {row['id']}::" in line


def test_triage_github_annotates_each_matched_job(cli, tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes((LOGS / "fsdp-mp-torchrun.log").read_bytes())
    (tmp_path / "b.log").write_text("step 1\nValueError: the frobnicator jammed\n")
    shown = cli("triage", str(tmp_path), "--format", "github", "--jobs", "1")
    lines = shown.out.splitlines()
    assert shown.code == 0 and not any(RAW_CONTROL.search(x) for x in lines)
    errors = [x for x in lines if x.startswith("::error ")]
    assert len(errors) == 1 and "fsdp-mixed-precision-error" in errors[0]
    assert "a.log,line=14," in errors[0]
    warning = next(x for x in lines if x.startswith("::warning "))
    assert "b.log,line=2," in warning and "frobnicator" in warning
    assert lines[-1].startswith("::notice title=nanopedia triage::2 jobs: 1 matched, 1 unmatched")
