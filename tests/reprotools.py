"""Tests that need torch (and Lightning): they run the pinned repro environment's interpreter.

`make test-repro` (run by `.ci/run` after `make verify` has built `.venv-repro/`) sets
`NANOPEDIA_REQUIRE_REPRO=1`: a missing repro interpreter or package is then an error, never a
skip. Elsewhere (`make test` without `.venv-repro/`) these tests skip, saying why.
`NANOPEDIA_REPRO_PYTHON` names another interpreter.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = bool(os.environ.get("NANOPEDIA_REQUIRE_REPRO"))
PYTHON = Path(os.environ.get("NANOPEDIA_REPRO_PYTHON", ROOT / ".venv-repro" / "bin" / "python"))


def repro_python(*modules: str) -> Path:
    """The repro interpreter, once it imports `modules`; else a skip, or an error where the
    repro tests are required."""
    why = None
    if not PYTHON.exists():
        why = f"no repro interpreter at {PYTHON} (make verify creates .venv-repro/)"
    else:
        probe = subprocess.run(
            [str(PYTHON), "-c", "; ".join(f"import {m}" for m in modules)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if probe.returncode:
            why = f"{PYTHON} cannot import {', '.join(modules)}: {probe.stderr.strip()[-300:]}"
    if why and REQUIRED:
        pytest.fail(f"{why} (NANOPEDIA_REQUIRE_REPRO is set)")
    if why:
        pytest.skip(why)
    return PYTHON


def repro_env(**extra: str) -> dict[str, str]:
    """The environment of a repro run: this checkout's package first on the path."""
    path = [str(ROOT / "generator"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), **extra}
