"""`nanopedia.hooks.install()` in real interpreters: the original traceback, then the verdict."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


# The same hooks called in this process, where each branch of `report` and of the wrapping is
# seen (by mutation testing too); the cases above run them as a dying interpreter does.


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`nanopedia.hooks` with the hooks of this process put back after the test."""
    import nanopedia.hooks

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    yield nanopedia.hooks
    nanopedia.hooks.uninstall()


def test_report_prints_the_verdict_with_the_rank_or_says_nothing_matched(
    hooks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "3")
    out = io.StringIO()
    hooks.report(RuntimeError(INPLACE), out)
    text = out.getvalue()
    assert text.startswith("\nnanopedia: the verdict on RuntimeError:\nverdict: ")
    assert "autograd-inplace-modified" in text and "<exception rank3>" in text
    out = io.StringIO()
    hooks.report(ValueError("nothing any entry knows about"), out)
    assert out.getvalue() == "\nnanopedia: no known failure matched ValueError\n"


def test_report_is_once_per_exception_and_never_for_an_ending_on_purpose(hooks: Any) -> None:
    out = io.StringIO()
    error = RuntimeError(INPLACE)
    hooks.report(error, out)
    hooks.report(error, out)
    assert out.getvalue().count("nanopedia: the verdict on RuntimeError") == 1
    for quiet in (KeyboardInterrupt(), SystemExit(1), GeneratorExit()):
        hooks.report(quiet, out)
    assert out.getvalue().count("nanopedia:") == 1

    class Slotted(Exception):  # no attribute can be set on it: diagnosed, not hidden
        __slots__ = ()

        def __setattr__(self, name: str, value: object) -> None:
            raise AttributeError(name)

    hooks.report(Slotted(INPLACE), out)
    assert out.getvalue().count("nanopedia: the verdict on Slotted") == 1


def test_a_diagnosis_that_fails_says_so_in_one_line(
    hooks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nanopedia

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("the cache is gone")

    monkeypatch.setattr(nanopedia, "diagnose", broken)
    out = io.StringIO()
    hooks.report(RuntimeError(INPLACE), out)
    assert out.getvalue() == "nanopedia: no verdict (OSError: the cache is gone)\n"


def test_install_wraps_both_hooks_once_and_uninstall_puts_back_only_its_own(
    hooks: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []
    sys.excepthook = lambda kind, value, tb: seen.append(f"sys {value}")
    threading.excepthook = lambda args: seen.append(f"thread {args.exc_value}")
    hooks.install()
    ours = sys.excepthook
    hooks.install()
    assert sys.excepthook is ours  # a second install changes nothing
    sys.excepthook(RuntimeError, RuntimeError(INPLACE), None)
    assert seen == [f"sys {INPLACE}"]  # the hook that was there ran first
    assert "nanopedia: the verdict on RuntimeError:" in capsys.readouterr().err

    def dies() -> None:
        raise RuntimeError(INPLACE)

    worker = threading.Thread(target=dies)
    worker.start()
    worker.join()
    assert seen[-1] == f"thread {INPLACE}"
    assert "nanopedia: the verdict on RuntimeError:" in capsys.readouterr().err
    hooks.uninstall()
    assert seen[-1] == f"thread {INPLACE}" and sys.excepthook is not ours
    sys.excepthook(RuntimeError, RuntimeError(INPLACE), None)
    assert capsys.readouterr().err == ""  # back to the hook that was there
    hooks.install()
    mine = sys.excepthook = lambda kind, value, tb: None  # someone replaced ours since
    hooks.uninstall()
    assert sys.excepthook is mine
