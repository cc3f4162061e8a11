"""`nanopedia.hooks.install()` in real interpreters: the original traceback, then the verdict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generator")}
INPLACE = (
    "one of the variables needed for gradient computation has been modified by an "
    "inplace operation: [torch.FloatTensor [4]], which is output 0 of ReluBackward0, is "
    "at version 1; expected version 0 instead."
)


def run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**ENV, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_uncaught_exception_keeps_its_traceback_then_gets_the_verdict() -> None:
    done = run(
        "import sys\n"
        "sys.excepthook = lambda *a: (print('earlier hook ran', file=sys.stderr), "
        "sys.__excepthook__(*a))\n"
        "import nanopedia.hooks; nanopedia.hooks.install(); nanopedia.hooks.install()\n"
        f"def step():\n    raise RuntimeError({INPLACE!r})\nstep()\n",
        RANK="3",
    )
    assert done.returncode == 1
    err = done.stderr
    assert err.startswith("earlier hook ran\nTraceback (most recent call last):")
    assert f"RuntimeError: {INPLACE}\n\nnanopedia: the verdict on RuntimeError:" in err
    assert "verdict: autograd-inplace-modified" in err and "first failure: rank 3" in err
    assert err.count("verdict: ") == 1


def test_a_thread_that_dies_gets_a_verdict_and_the_program_goes_on() -> None:
    done = run(
        "import threading, nanopedia.hooks\nnanopedia.hooks.install()\n"
        f"def work():\n    raise RuntimeError({INPLACE!r})\n"
        "t = threading.Thread(target=work); t.start(); t.join()\nprint('main goes on')\n"
    )
    assert done.returncode == 0 and done.stdout == "main goes on\n"
    assert "Exception in thread" in done.stderr and "in work" in done.stderr
    assert "verdict: autograd-inplace-modified" in done.stderr


def test_no_verdict_for_ctrl_c_nothing_matched_or_after_uninstall() -> None:
    quiet = run("import nanopedia.hooks; nanopedia.hooks.install()\nraise KeyboardInterrupt\n")
    assert quiet.returncode == -2 and "nanopedia" not in quiet.stderr  # killed by SIGINT
    unknown = run(
        "import nanopedia.hooks; nanopedia.hooks.install()\n"
        "raise ValueError('the frobnicator jammed')\n"
    )
    assert unknown.stderr.rstrip().endswith("nanopedia: no known failure matched ValueError")
    gone = run(
        "import nanopedia.hooks; nanopedia.hooks.install(); nanopedia.hooks.uninstall()\n"
        f"raise RuntimeError({INPLACE!r})\n"
    )
    assert "nanopedia" not in gone.stderr and gone.stderr.startswith("Traceback")


def test_a_diagnosis_that_fails_never_hides_the_exception(tmp_path: Path) -> None:
    done = run(
        "import nanopedia, nanopedia.hooks\nnanopedia.hooks.install()\n"
        "def broken(*a, **k):\n    raise OSError('catalogue unreadable')\n"
        "nanopedia.diagnose = broken\n"
        f"raise RuntimeError({INPLACE!r})\n"
    )
    assert done.returncode == 1 and f"RuntimeError: {INPLACE}" in done.stderr
    assert done.stderr.rstrip().endswith("nanopedia: no verdict (OSError: catalogue unreadable)")
