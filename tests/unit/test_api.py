"""`nanopedia`'s public API: the few names a script imports, and `python -m nanopedia`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import nanopedia

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "logs"


def test_diagnose_names_the_entry_and_the_rank_that_failed_first() -> None:
    found = nanopedia.diagnose([LOGS / "fsdp-mp-torchrun.log"])
    assert found.matches[0].id == "fsdp-mixed-precision-error"
    assert found.initiating_rank == 2


def test_diagnose_takes_another_entries_folder(tmp_path: Path) -> None:
    (tmp_path / "tags.yaml").write_text("{}\n")
    assert nanopedia.diagnose([LOGS / "fsdp-mp-torchrun.log"], tmp_path).matches == ()


def test_gather_build_and_problem_are_the_modules_own() -> None:
    from nanopedia.content.corpus import gather
    from nanopedia.errors import Problem
    from nanopedia.incremental.pipeline import build

    assert (nanopedia.gather, nanopedia.build, nanopedia.Problem) == (gather, build, Problem)
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        nanopedia.missing  # noqa: B018


def test_python_dash_m_nanopedia_is_the_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nanopedia", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "usage: nanopedia" in done.stdout


def test_diagnose_text_gives_the_verdict_and_json_of_the_cli(cli) -> None:
    """The same log as text, as a path and through the CLI: one answer, one JSON."""
    log = LOGS / "fsdp-mp-torchrun.log"
    from_text = nanopedia.diagnose(log.read_text(encoding="utf-8"), name=str(log))
    from_path = nanopedia.diagnose(log)
    ran = cli("diagnose", str(log), "--format", "json", "--top", "3")
    assert ran.code == 0
    assert from_path.as_json(3) == json.loads(ran.out) == from_text.as_json(3)
    assert (from_text.verdict, from_text.initiating_rank) == ("fsdp-mixed-precision-error", 2)
    assert from_text.confidence == from_text.as_json()["matches"][0]["confidence"]


def test_diagnose_an_exception_reads_its_traceback() -> None:
    def backward() -> None:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been "
            "modified by an inplace operation: [torch.FloatTensor [4]], which "
            "is output 0 of ReluBackward0, is at version 1; expected version 0"
        )

    try:
        backward()
    except RuntimeError as err:
        found = nanopedia.diagnose(err, name="rank3.traceback")
    assert found.verdict == "autograd-inplace-modified"
    first = found.matches[0].evidence[0]
    assert (first.file, first.rank) == ("rank3.traceback", 3)
    assert first.text.startswith("RuntimeError: one of the variables needed")


def test_diagnose_says_what_it_reads_and_a_string_is_text() -> None:
    with pytest.raises(TypeError, match="reads text, a path, a list of paths or an exception"):
        nanopedia.diagnose(42)  # type: ignore[arg-type]
    assert nanopedia.diagnose(str(LOGS / "fsdp-mp-torchrun.log")).matches == ()
    assert nanopedia.diagnose(b"").verdict is None


ELASTIC = LOGS / "elastic"
FLIGHT = LOGS / "flight"
UNKNOWN = (
    "step 1\nTraceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "FrobnicatorError: the frobnicator stalled\n"
)


def test_diagnose_reads_a_run_folder_and_flight_recorder_dumps() -> None:
    run = nanopedia.diagnose(ELASTIC / "two-errors")
    assert (run.verdict, run.initiating_rank) == ("shape-mismatch", 1)
    assert run.initiating_reason.startswith("earliest torchelastic error file: ")
    assert [e.rank for e in run.diagnosis.error_files] == [0, 1]
    dumps = nanopedia.diagnose([str(FLIGHT / "skip" / f"rank{r}.json") for r in (0, 1)])
    assert dumps.verdict == "training-hang-no-error"
    (finding,) = dumps.diagnosis.flight_report.findings
    assert (finding.kind, finding.ranks) == ("behind", (1,))


def test_diagnose_refuses_a_damaged_error_file_located(tmp_path: Path) -> None:
    from nanopedia.errors import NanopediaError

    bad = tmp_path / "attempt_0" / "1" / "error.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"message": ')
    with pytest.raises(NanopediaError) as err:
        nanopedia.diagnose(tmp_path)
    (problem,) = err.value.problems
    assert (problem.location.path, problem.code) == (str(bad), "E050")
    assert "not valid JSON" in problem.message


@pytest.mark.parametrize(
    "case", ["matched", "unmatched", "binary", "error-files", "dumps", "log-and-dumps"]
)
def test_the_apis_json_is_the_clis_for_the_same_input(cli, tmp_path: Path, case: str) -> None:
    """`nanopedia.diagnose(paths).as_json(top)` is what `diagnose --format json --top` prints,
    the `unmatched` object of a log no entry knows included."""
    (tmp_path / "unknown.log").write_text(UNKNOWN)
    (tmp_path / "binary.log").write_bytes(b"\0ELF\n")
    dumps = [str(FLIGHT / "mismatch" / f"rank{r}.json") for r in (0, 1)]
    paths = {
        "matched": [str(LOGS / "fsdp-mp-torchrun.log")],
        "unmatched": [str(tmp_path / "unknown.log")],
        "binary": [str(tmp_path / "binary.log"), str(tmp_path / "unknown.log")],
        "error-files": [str(ELASTIC / "two-errors")],
        "dumps": dumps,
        "log-and-dumps": [str(tmp_path / "unknown.log"), *dumps],
    }[case]
    ran = cli("diagnose", *paths, "--format", "json", "--top", "3")
    assert nanopedia.diagnose(paths).as_json(3) == json.loads(ran.out)
    if case in ("unmatched", "binary"):
        missed = json.loads(ran.out)["unmatched"]
        assert missed["error"] == "FrobnicatorError: the frobnicator stalled"
        assert [i["reason"] for i in missed["inputs"]] == (["binary"] if case == "binary" else [])
