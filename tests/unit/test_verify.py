"""When `nanopedia verify` passes a repro (`commands/verify.py`, `judge`), on runs made up here:
a repro passes only when its broken script fails the way the entry says, diagnose ranks that
entry first, and its fixed script runs clean."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import FIXTURES

from nanopedia.commands.verify import (
    ExampleCheck,
    FailedRun,
    Outcome,
    Run,
    _codes,
    as_json,
    judge,
    matched_lines,
    script_env,
)
from nanopedia.content.corpus import gather
from nanopedia.model import Entry, Repro

BROKEN_LINE = "RuntimeError: expected scalar type BFloat16 but found Float"


@pytest.fixture(scope="module")
def alpha() -> Entry:
    catalog, problems = gather(FIXTURES / "corpus")
    assert problems == []
    return catalog.by_id["alpha-failure"].entry


def repro(entry: Entry) -> Repro:
    return entry.repro[0]


BROKEN = Run(1, f"Traceback\n{BROKEN_LINE}\n", 1.0)
FIXED = Run(0, "ok\n", 1.0)


def test_a_repro_that_fails_as_the_entry_says_and_whose_fix_runs_clean_passes(
    alpha: Entry,
) -> None:
    assert judge(alpha, repro(alpha), BROKEN, FIXED, "alpha-failure") == ()


@pytest.mark.parametrize("first", ["beta-failure", None])
def test_a_repro_fails_when_diagnose_ranks_another_entry_first(
    alpha: Entry, first: str | None
) -> None:
    shown = repr(first) if first else "'nothing'"
    assert judge(alpha, repro(alpha), BROKEN, FIXED, first) == (
        f"diagnose ranks {shown} first on the broken output, not 'alpha-failure'",
    )


def test_a_repro_that_shows_nothing_is_not_judged_by_the_ranking(alpha: Entry) -> None:
    quiet = repro(alpha).model_copy(update={"shows": []})
    assert judge(alpha, quiet, BROKEN, FIXED, "beta-failure") == ()


def test_a_broken_script_that_exits_0_does_not_reproduce_an_error(alpha: Entry) -> None:
    failures = judge(alpha, repro(alpha), replace(BROKEN, code=0), FIXED, "alpha-failure")
    assert failures == ("the broken script exited 0: it does not reproduce the failure",)
    warning = repro(alpha).model_copy(update={"expect": "warning"})
    assert judge(alpha, warning, replace(BROKEN, code=0), FIXED, "alpha-failure") == ()


def test_a_broken_script_that_times_out_says_so_and_not_its_ranking(alpha: Entry) -> None:
    hung = Run(None, BROKEN.output, 61.2)
    assert judge(alpha, repro(alpha), hung, FIXED, None) == (
        "the broken script ran past its timeout (61 s)",
    )


def test_every_fingerprint_a_repro_shows_must_match_its_broken_output(alpha: Entry) -> None:
    silent = Run(1, "Traceback\nSomething else\n", 1.0)
    assert judge(alpha, repro(alpha), silent, FIXED, "alpha-failure") == (
        "fingerprint 'scalar-type' matches no line of the broken output",
    )


def test_the_fixed_script_must_exit_0_in_time(alpha: Entry) -> None:
    assert judge(alpha, repro(alpha), BROKEN, replace(FIXED, code=2), "alpha-failure") == (
        "the fixed script exited 2",
    )
    assert judge(alpha, repro(alpha), BROKEN, Run(None, "", 30.4), "alpha-failure") == (
        "the fixed script ran past its timeout (30 s)",
    )


def test_the_fixed_output_must_not_show_the_failure(alpha: Entry) -> None:
    still = Run(0, f"warning\n{BROKEN_LINE}\n", 1.0)
    assert judge(alpha, repro(alpha), BROKEN, still, "alpha-failure") == (
        f"the fixed output still shows fingerprint 'scalar-type': {BROKEN_LINE!r}",
    )


def test_a_run_stopped_before_the_fixed_script_is_judged_on_the_broken_one(
    alpha: Entry,
) -> None:
    assert judge(alpha, repro(alpha), BROKEN, None, "alpha-failure") == ()
    assert judge(alpha, repro(alpha), replace(BROKEN, code=0), None, "alpha-failure") != ()


def test_each_fingerprint_reports_the_first_line_it_matches(alpha: Entry) -> None:
    output = f"a\n[rank0]: {BROKEN_LINE}\n{BROKEN_LINE}\n"
    assert matched_lines(alpha, ["scalar-type"], output) == {
        "scalar-type": f"[rank0]: {BROKEN_LINE}"
    }


CODES = [
    ('{"codes": [0]}', 1, [0]),
    ('noise\n{"codes": [1, null]}', 2, [1, None]),
    ('{"codes": [0]}', 2, None),
    ('{"codes": [true]}', 1, None),
    ('{"codes": ["0"]}', 1, None),
    ('{"codes": 0}', 1, None),
    ("{}", 1, None),
    ("not json", 1, None),
    ("", 1, None),
]


@pytest.mark.parametrize(
    "status, ranks, codes", CODES, ids=[f"status {i}" for i in range(len(CODES))]
)
def test_only_the_exit_codes_the_launcher_printed_for_every_rank_count(
    status: str, ranks: int, codes: list[int | None] | None
) -> None:
    assert _codes(status, ranks) == codes


def test_a_script_sees_none_of_the_callers_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    env = script_env(2, "/tmp/home", "/venv/bin/python")
    assert "AWS_SECRET_ACCESS_KEY" not in json.dumps(env)
    assert env["PATH"].split(":")[0] == "/venv/bin"
    assert (env["HOME"], env["TMPDIR"], env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == (
        "/tmp/home",
        "/tmp/home",
        "2",
        "2",
    )
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"].isdigit()
    port = env.pop("MASTER_PORT")
    assert 0 < int(port) < 65536
    assert env == {  # the whole environment a repro gets (RANK and LOCAL_RANK per rank)
        "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONWARNINGS": "default",
        "PATH": "/venv/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp/home",
        "LANG": "C.UTF-8",
        "USER": "nobody",
        "LOGNAME": "nobody",
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
    }


def test_the_json_report_names_each_repro_run_and_example_count(alpha: Entry) -> None:
    """`verify --format json` as CI jobs read it: every field by its name, times to the
    hundredth, a repro stopped before its fix with `fixed: null`, the examples' counts."""
    passed = Outcome("alpha-failure", repro(alpha), (), Run(1, "x\n" * 3, 1.234), FIXED)
    stopped = Outcome("beta-failure", repro(alpha), ("it exited 0",), Run(None, "", 9.999), None)
    examples = ExampleCheck((), 3, 1, {"deepspeed": 2}, [FailedRun("alpha-failure/example-2", "1")])
    report = as_json([passed, stopped], examples, [], 12.345)
    assert set(report) == {"environment", "seconds", "repros", "examples", "passed"}
    assert (report["seconds"], report["passed"]) == (12.35, False)
    assert report["repros"] == [
        {
            "entry": "alpha-failure",
            "id": repro(alpha).id,
            "ranks": repro(alpha).ranks,
            "passed": True,
            "failures": [],
            "broken": {"exit": 1, "timed_out": False, "seconds": 1.23, "output_tail": "x\nx\nx"},
            "fixed": {"exit": 0, "timed_out": False, "seconds": 1.0, "output_tail": "ok"},
        },
        {
            "entry": "beta-failure",
            "id": repro(alpha).id,
            "ranks": repro(alpha).ranks,
            "passed": False,
            "failures": ["it exited 0"],
            "broken": {"exit": None, "timed_out": True, "seconds": 10.0, "output_tail": ""},
            "fixed": None,
        },
    ]
    assert report["examples"] == {
        "checked": 3,
        "ran": 1,
        "not_installed": {"deepspeed": 2},
        "problems": [],
        "failed_runs": [{"name": "alpha-failure/example-2", "reason": "1"}],
    }
    clean = as_json([passed], ExampleCheck((), 0, 0, {}, []), [], 0.0)
    assert clean["passed"] is True


def test_when_the_batch_check_gives_no_answer_each_example_is_checked_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nanopedia.commands import verify
    from nanopedia.content import apicheck

    calls = []
    answers = [
        verify.Run(-9, "killed mid-way", 1.0),  # the batch: an example's module killed it
        verify.Run(0, apicheck.RESULT_MARK + '[{"findings": [[2, 1, "no"]], "missing": []}]', 1.0),
        verify.Run(None, "first\nlast words\n", 30.0),  # this one's check never answers
        verify.Run(3, "", 1.0),
    ]

    def run_script(script: str, ranks: int, timeout: float, sandboxed: bool) -> verify.Run:
        calls.append((ranks, timeout, sandboxed))
        return answers[len(calls) - 1]

    monkeypatch.setattr(verify, "run_script", run_script)
    found = verify._api_reports(["a = 1", "b = 2", "c = 3"], 30.0, False)
    assert found == [
        apicheck.Report((apicheck.Finding(2, 1, "no"),), ()),
        "checking it ran past its timeout: last words",
        "checking it exited 3: ",
    ]
    assert calls == [
        (1, verify.API_TIMEOUT, False),
        (1, 30.0, False),
        (1, 30.0, False),
        (1, 30.0, False),
    ]
