"""`nanopedia`'s public API: the few names a script imports, and `python -m nanopedia`."""

from __future__ import annotations

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
    done = subprocess.run([sys.executable, "-m", "nanopedia", "--help"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert "usage: nanopedia" in done.stdout
