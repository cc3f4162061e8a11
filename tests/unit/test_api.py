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
