"""The program each repro rank runs (`repro_launch.RUN`): `python script.py`, less the teardown.

Every case runs the same script both ways, as `python script.py` and as `python -c RUN`, and
compares what a reader of the output and the exit code would see; the one difference is meant: a
crash while the interpreter tears down, after the script returned, no longer fails the rank.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nanopedia.commands.repro_launch import RUN

SAME = {
    "names": "import sys\nprint(__name__, __file__, sys.argv, sys.path[0])\n",
    "traceback": "def f():\n    raise ValueError('boom')\nf()\n",
    "syntax error": "x = (\n",
    "exit message": "import sys\nsys.exit('bye')\n",
    "exit code": "import sys\nsys.exit(3)\n",
    "exit None": "import sys\nsys.exit(None)\n",
    "exit code wraps": "import sys\nsys.exit(300)\n",
    "exit -1": "import sys\nsys.exit(-1)\n",
    "interrupt": "raise KeyboardInterrupt\n",
    "threads and atexit": (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "print('main done', flush=True)\n"
    ),
    "unflushed output": "import sys\nsys.stdout.write('no newline, no flush')\n",
    "pickle of a __main__ class": (
        "import pickle\nclass A: pass\nprint(type(pickle.loads(pickle.dumps(A()))).__name__)\n"
    ),
    "warning from __main__": "import warnings\nwarnings.warn('old', DeprecationWarning)\n",
    "script's own names": "path = 1\nstatus = 'mine'\nprint(path, status)\n",
}

#: An object whose destructor aborts once Python clears the modules at exit: the shape of the
#: gloo race (C++ objects destroyed at exit) with no torch.
TEARDOWN_ABORT = (
    "import os, sys\n"
    "class Bomb:\n"
    "    def __del__(self):\n"
    "        os.abort()\n"
    "sys.modules['bomb'] = Bomb()\n"
    "print('steps done')\n"
)


def _run(tmp_path: Path, script: str, argv: list[str]) -> tuple[int, str]:
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
    )
    return done.returncode, done.stdout.decode()


@pytest.mark.parametrize("script", SAME.values(), ids=SAME.keys())
def test_a_script_reads_and_ends_as_under_python_script_py(tmp_path: Path, script: str) -> None:
    expected = _run(tmp_path, script, ["script.py"])
    assert _run(tmp_path, script, ["-c", RUN]) == expected


def test_a_crash_in_the_interpreters_teardown_does_not_fail_the_rank(tmp_path: Path) -> None:
    assert _run(tmp_path, TEARDOWN_ABORT, ["script.py"])[0] != 0  # the race, as Python has it
    assert _run(tmp_path, TEARDOWN_ABORT, ["-c", RUN]) == (0, "steps done\n")


def test_an_exception_still_fails_the_rank_and_shows_only_the_scripts_frames(
    tmp_path: Path,
) -> None:
    code, output = _run(tmp_path, "raise RuntimeError('gloo')\n", ["-c", RUN])
    assert code == 1
    assert output.splitlines() == [
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "script.py"}", line 1, in <module>',
        "    raise RuntimeError('gloo')",
        "RuntimeError: gloo",
    ]
