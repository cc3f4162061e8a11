"""The repro runner and its judgement, on tiny scripts that need no torch.

Each case runs real processes (one or two ranks) and judges them as `nanopedia verify` does, so a
hang, a crash or a fixed script that still fails is seen the way CI would see it.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.commands import verify
from nanopedia.diagnosis import scan
from nanopedia.model import Entry, Repro

pytestmark = pytest.mark.usefixtures("bwrap")  # every script runs in the sandbox

FAIL_LINE = "RuntimeError: expected scalar type BFloat16 but found Float"


def _entry() -> Entry:
    """The fixture entry whose decisive fingerprint `scalar-type` matches FAIL_LINE."""
    from nanopedia.content.corpus import gather

    catalog, _ = gather(FIXTURES / "corpus")
    return next(e for e in catalog.entries if e.id == "alpha-failure")


def _repro(broken: str, fixed: str = "print('ok')\n", **kw: object) -> Repro:
    fields = {
        "id": "r",
        "title": "A repro",
        "stack": "generic",
        "broken": broken,
        "fixed": fixed,
        "shows": ["scalar-type"],
        **kw,
    }
    return Repro.model_validate(fields)


FAILS = f"import sys\nprint({FAIL_LINE!r}, file=sys.stderr)\nsys.exit(1)\n"


def _judge(repro: Repro, timeout: float = 30) -> tuple[str, ...]:
    entry = _entry()
    return verify.verify_one(scan.Matcher([entry]), entry, repro, timeout).failures


def test_a_repro_that_fails_then_is_fixed_passes() -> None:
    assert _judge(_repro(FAILS)) == ()


def test_broken_script_that_exits_0_does_not_reproduce() -> None:
    found = _judge(_repro(f"print({FAIL_LINE!r})\n"))
    assert found == ("the broken script exited 0: it does not reproduce the failure",)


def test_a_warning_repro_may_exit_0_when_its_fingerprint_shows() -> None:
    assert _judge(_repro(f"print({FAIL_LINE!r})\n", expect="warning")) == ()


def test_output_missing_the_named_fingerprint() -> None:
    found = _judge(_repro("import sys\nprint('some other error')\nsys.exit(1)\n"))
    assert "fingerprint 'scalar-type' matches no line of the broken output" in found
    assert any("diagnose ranks 'nothing' first" in f for f in found)


def test_fixed_script_that_still_shows_the_failure() -> None:
    found = _judge(_repro(FAILS, fixed=f"print({FAIL_LINE!r})\n"))
    assert found == (f"the fixed output still shows fingerprint 'scalar-type': {FAIL_LINE!r}",)


def test_fixed_swapped_for_broken_always_fails() -> None:
    for expect in ("error", "warning"):
        broken = FAILS if expect == "error" else f"print({FAIL_LINE!r})\n"
        found = _judge(_repro(broken, fixed=broken, expect=expect))
        assert any("the fixed" in f for f in found), (expect, found)


def test_crashing_fixed_script_fails() -> None:
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    assert _judge(_repro(FAILS, fixed=crash)) == ("the fixed script exited -11",)


def test_hang_is_killed_at_the_timeout_with_its_children() -> None:
    hang = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "time.sleep(600)\n"
    )
    start = time.monotonic()
    run = verify.run_script(hang, timeout=1.5)
    assert run.timed_out and time.monotonic() - start < 10
    found = verify.judge(_entry(), _repro(hang), run, None, None)
    assert found[0].startswith("the broken script ran past its timeout")


def test_two_ranks_get_torchrun_variables_and_prefixed_output() -> None:
    script = textwrap.dedent("""
        import os
        keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR")
        print(" ".join(os.environ[k] for k in keys), os.environ["MASTER_PORT"].isdigit())
    """)
    run = verify.run_script(script, ranks=2, timeout=30)
    assert run.code == 0
    assert run.output.splitlines() == [
        "[default0]:0 0 2 127.0.0.1 True",
        "[default1]:1 1 2 127.0.0.1 True",
    ]


def test_when_one_rank_fails_the_other_is_stopped_not_waited_for() -> None:
    script = textwrap.dedent(f"""
        import os, sys, time
        if os.environ["RANK"] == "1":
            print({FAIL_LINE!r}, file=sys.stderr)
            sys.exit(3)
        time.sleep(600)  # rank 0 waits in a "collective" for a peer that is gone
    """)
    start = time.monotonic()
    run = verify.run_script(script, ranks=2, timeout=60)
    assert run.code == 3 and not run.timed_out
    assert time.monotonic() - start < verify.GRACE + 5
    assert f"[default1]:{FAIL_LINE}" in run.output.splitlines()


def test_a_rank_that_aborts_in_the_interpreters_teardown_still_passes() -> None:
    """Two gloo ranks at times abort while C++ objects are destroyed at exit, after the script
    returned; a destructor that aborts at exit has the same shape without torch."""
    script = textwrap.dedent("""
        import os, sys
        class Bomb:
            def __del__(self):
                os.abort()
        sys.modules["bomb"] = Bomb()
        print("steps done")
    """)
    run = verify.run_script(script, ranks=2, timeout=30)
    assert run.code == 0
    assert run.output.splitlines() == ["[default0]:steps done", "[default1]:steps done"]


def test_output_is_capped_at_its_tail() -> None:
    script = "import sys\nsys.stdout.write('x' * (3 << 20))\nprint('\\nlast line')\n"
    run = verify.run_script(script, timeout=30)
    assert len(run.output) <= verify.OUTPUT_CAP
    assert run.output.endswith("last line\n")


def test_without_the_sandbox_a_scripts_home_is_its_own_scratch_folder() -> None:
    script = "import os\nprint(os.environ['HOME'] == os.environ['TMPDIR'] == os.getcwd())\n"
    run = verify.run_script(script, timeout=30, sandboxed=False)
    assert (run.code, run.output) == (0, "True\n")


def test_a_launcher_that_fails_before_any_rank_says_why(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'cannot start: no such interpreter' >&2\nexit 3\n")
    python.chmod(0o755)
    run = verify.run_script("print('never')\n", timeout=30, python=str(python), sandboxed=False)
    assert (run.code, run.output) == (
        3,
        "nanopedia: the repro's launcher failed: cannot start: no such interpreter\n",
    )
