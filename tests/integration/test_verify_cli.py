"""`nanopedia verify` as a user runs it: which entries it verifies, what it prints for a repro
that passes or fails, and the environment errors it refuses with (no sandbox, no torch).

The repros are the fixture corpus's tiny scripts (no torch), run in the sandbox as CI runs them;
the command runs in-process, so a mutation test sees what it reaches.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia import pins
from nanopedia.commands import sandbox

pytestmark = pytest.mark.usefixtures("bwrap")  # every script runs in the sandbox

CORPUS = str(FIXTURES / "corpus")
#: The fixture's repro, broken and fixed, as the entry holds them.
BROKEN = (
    "      import sys\n"
    '      print("RuntimeError: expected scalar type BFloat16 but found Float", file=sys.stderr)\n'
    "      sys.exit(1)\n"
)
FIXED = '      print("ok")\n'


def _corpus(tmp_path: Path) -> Path:
    dest = tmp_path / "entries"
    shutil.copytree(FIXTURES / "corpus", dest)
    return dest


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _corpus_with_example(tmp_path: Path, code: str) -> Path:
    dest = _corpus(tmp_path)
    path = dest / "beta-failure.yaml"
    body = textwrap.indent(code, " " * 6)
    path.write_text(
        path.read_text() + "code_examples:\n  - title: Dump it\n    stack: generic\n"
        f"    language: python\n    code: |\n{body}    why: It works.\n"
    )
    return dest


def test_a_passing_repro_prints_one_line_with_its_ranks_and_times(cli) -> None:
    ran = cli("verify", "alpha-failure", "--entries", CORPUS, "--jobs", "3")
    assert ran.code == 0, ran.out + ran.err
    lines = ran.out.splitlines()
    assert re.fullmatch(
        r"PASS alpha-failure/float-input \(1 rank, broken \d+\.\d s, fixed \d+\.\d s\)", lines[0]
    )
    assert lines[1] == "examples: 1 checked, 0 run on CPU"
    assert re.fullmatch(r"repros: 1 of 1 passed in \d+\.\d s \(.*Python 3\.\S+, 3 jobs\)", lines[2])
    assert len(lines) == 3


def test_a_failing_repro_prints_why_and_the_tail_of_each_run(tmp_path: Path, cli) -> None:
    entries = _corpus(tmp_path)
    _replace(entries / "alpha-failure.yaml", FIXED, BROKEN)  # the fix still fails
    ran = cli("verify", "alpha-failure", "--entries", str(entries))
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert re.fullmatch(
        r"FAIL alpha-failure/float-input \(1 rank, broken \d+\.\d s, fixed \d+\.\d s\): .*fixed.*",
        lines[0],
    )
    shown = "    | RuntimeError: expected scalar type BFloat16 but found Float"
    assert lines[1:5] == [
        "  broken output, last lines:",
        shown,
        "  fixed output, last lines:",
        shown,
    ]
    assert re.fullmatch(r"repros: 0 of 1 passed in .*", lines[-1])


def test_a_repro_of_two_ranks_says_ranks(tmp_path: Path, cli) -> None:
    entries = _corpus(tmp_path)
    _replace(
        entries / "alpha-failure.yaml",
        "    shows: [scalar-type]",
        "    ranks: 2\n    shows: [scalar-type]",
    )
    ran = cli("verify", "alpha-failure", "--entries", str(entries))
    assert ran.code == 0, ran.out
    assert ran.out.startswith("PASS alpha-failure/float-input (2 ranks, broken ")


def test_a_silent_broken_script_shows_no_output_and_why_it_failed(tmp_path: Path, cli) -> None:
    entries = _corpus(tmp_path)
    _replace(entries / "alpha-failure.yaml", BROKEN, "      import sys\n      sys.exit(1)\n")
    ran = cli("verify", "alpha-failure", "--entries", str(entries))
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert lines[0].endswith(
        "): fingerprint 'scalar-type' matches no line of the broken output; diagnose ranks "
        "'nothing' first on the broken output, not 'alpha-failure'"
    )
    assert lines[1:5] == [
        "  broken output, last lines:",
        "    | (no output)",
        "  fixed output, last lines:",
        "    | ok",
    ]


def test_json_prints_no_progress_lines_only_the_report(cli) -> None:
    ran = cli("verify", "alpha-failure", "--entries", CORPUS, "--format", "json")
    report = json.loads(ran.out)  # the whole of stdout is one JSON document
    assert ran.code == 0 and report["passed"] is True
    assert [(r["entry"], r["id"], r["passed"]) for r in report["repros"]] == [
        ("alpha-failure", "float-input", True)
    ]


def test_without_ids_every_entry_that_loads_is_verified_and_the_rest_named(
    tmp_path: Path, cli
) -> None:
    entries = _corpus(tmp_path)
    (entries / "broken.yaml").write_text("id: [unclosed\n")
    ran = cli("verify", "--entries", str(entries), "--format", "json")
    assert ran.err.splitlines() == [
        "nanopedia: warning: 1 problem(s) in the entries (run 'nanopedia check'); "
        "verifying the entries that load"
    ]
    assert [r["entry"] for r in json.loads(ran.out)["repros"]] == ["alpha-failure"]


def test_a_missing_entries_folder_is_a_usage_error(tmp_path: Path, cli) -> None:
    ran = cli("verify", "--entries", str(tmp_path / "nope"))
    assert ran.code == 2
    assert "no such entries directory" in ran.err and "pass --entries DIR" in ran.err


@pytest.mark.parametrize("name", ["nope", "alpha-failur"])
def test_verify_unknown_entry_is_a_usage_error(cli, name: str) -> None:
    ran = cli("verify", name, "--entries", CORPUS)
    assert ran.code == 2 and f"no such entry, or it does not load: {name}" in ran.err


@pytest.mark.parametrize(
    ("absent", "said"),
    [({"torch"}, "torch is not installed here"), ({"torch", "yaml"}, "torch, yaml are not")],
)
def test_verify_without_what_repros_import_is_an_environment_error(
    tmp_path: Path, cli, monkeypatch, absent: set[str], said: str
) -> None:
    import importlib.util

    dest = _corpus(tmp_path)
    imports = "".join(f"      import {name}\n" for name in sorted(absent))
    _replace(dest / "alpha-failure.yaml", "      import sys\n", "      import sys\n" + imports)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name, *a)
    )
    ran = cli("verify", "--entries", str(dest))
    assert ran.code == 2
    assert said in ran.err and "run 'make verify'" in ran.err and ran.out == ""


def test_without_bwrap_verify_refuses_and_names_both_ways_out(cli, monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "find", lambda: None)
    ran = cli("verify", "--entries", CORPUS)
    assert ran.code == 2 and ran.out == ""
    root = " (or setpriv, needed as root)" if os.geteuid() == 0 else ""
    assert f"error[E050]: cannot run the repros in a sandbox: bwrap is not installed{root}\n" in (
        ran.err
    )
    assert "apt-get install bubblewrap" in ran.err and "pass --no-sandbox" in ran.err


def test_a_sandbox_that_cannot_start_is_refused_in_bwraps_words(cli, monkeypatch) -> None:
    said = []

    def probe(box: sandbox.Sandbox, python: str, env: dict[str, str]) -> str:
        said.append((python, env["HOME"], env["WORLD_SIZE"]))
        return "bwrap: No permissions to create new namespace"

    monkeypatch.setattr(sandbox, "probe", probe)
    ran = cli("verify", "--entries", CORPUS)
    assert ran.code == 2 and ran.out == ""
    assert (
        "cannot run the repros in a sandbox: bwrap: No permissions to create new namespace"
        in ran.err
    )
    assert "bwrap needs user namespaces (or root); install bubblewrap" in ran.err
    assert said == [(sys.executable, "/tmp", "1")]


def test_no_sandbox_runs_the_repros_without_looking_for_bwrap(cli, monkeypatch) -> None:
    def find() -> None:
        raise AssertionError("--no-sandbox looked for bwrap")

    monkeypatch.setattr(sandbox, "find", find)
    ran = cli("verify", "alpha-failure", "--entries", CORPUS, "--no-sandbox")
    assert ran.code == 0 and ran.out.startswith("PASS alpha-failure/float-input")


def test_pins_that_differ_from_the_installed_versions_are_warned_of(cli, monkeypatch) -> None:
    monkeypatch.setattr(
        pins, "installed_mismatches", lambda: ["torch 9.0 is installed, the repro pins 2.13.0"]
    )
    ran = cli("verify", "alpha-failure", "--entries", CORPUS)
    assert ran.code == 0
    assert ran.err == (
        "nanopedia: warning: torch 9.0 is installed, the repro pins 2.13.0; "
        "results may differ from the pages\n"
    )


def test_installed_mismatches_names_each_differing_pin_and_skips_the_absent(monkeypatch) -> None:
    monkeypatch.setattr(
        pins, "repro_pins", lambda: {"torch": "2.13.0", "numpy": "2.1.0", "absent": "1", "a": "3"}
    )
    installed = {"torch": "2.13.0+cpu", "numpy": "2.2.1", "a": "3.0"}

    def version(name: str) -> str:
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(metadata, "version", version)
    assert pins.installed_mismatches() == [
        "a 3.0 is installed, the repro environment pins 3",
        "numpy 2.2.1 is installed, the repro environment pins 2.1.0",
    ]


def test_verify_locates_a_wrong_keyword_in_an_example(tmp_path: Path, cli, monkeypatch) -> None:
    code = "import shutil\nshutil.copyfile('a', 'b', follow_symlink=False)\n"
    entries = _corpus_with_example(tmp_path, code)
    monkeypatch.chdir(tmp_path)
    ran = cli("verify", "beta-failure", "--entries", "entries")
    assert ran.code == 1
    text = (entries / "beta-failure.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if "follow_symlink=" in t)
    col = text[line - 1].index("shutil.copyfile") + 1
    assert (
        f"entries/beta-failure.yaml:{line}:{col}: error[E070]: shutil.copyfile() has no "
        "keyword argument 'follow_symlink' in shutil"
    ) in ran.out


def test_verify_runs_an_example_marked_runs_on_cpu(tmp_path: Path, cli, monkeypatch) -> None:
    entries = _corpus_with_example(tmp_path, "raise SystemExit('it broke')\n")
    path = entries / "beta-failure.yaml"
    path.write_text(
        path.read_text().replace("    why: It works.", "    why: It works.\n    runs_on_cpu: true")
    )
    monkeypatch.chdir(tmp_path)
    ran = cli("verify", "beta-failure", "--entries", "entries", "--format", "json")
    assert ran.code == 1
    report = json.loads(ran.out)
    assert report["examples"]["failed_runs"] == [
        {"name": "beta-failure/example-1", "reason": "the example exited 1: it broke"}
    ]


def test_examples_are_counted_checked_run_and_not_checked_with_what_is_missing(
    tmp_path: Path, cli, monkeypatch
) -> None:
    entries = _corpus(tmp_path)
    path = entries / "beta-failure.yaml"
    examples = [
        ("import no_such_package_here\nno_such_package_here.go()\n", False),
        ("import no_such_package_here as p\np.stop()\n", False),
        ("print('on the CPU')\n", True),
    ]
    text = path.read_text() + "code_examples:\n"
    for n, (code, runs) in enumerate(examples, 1):
        body = textwrap.indent(code, " " * 6)
        text += (
            f"  - title: Example {n}\n    stack: generic\n    language: python\n"
            f"    code: |\n{body}    why: It works.\n" + ("    runs_on_cpu: true\n" if runs else "")
        )
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    ran = cli("verify", "beta-failure", "--entries", "entries")
    assert ran.code == 0, ran.out + ran.err
    assert ran.out.splitlines()[0] == (
        "examples: 3 checked, 1 run on CPU, not checked (no_such_package_here not installed: 2)"
    )


def test_an_example_whose_imports_end_the_checker_is_located_and_said_why(
    tmp_path: Path, cli, monkeypatch
) -> None:
    entries = _corpus_with_example(tmp_path, "import unittest.__main__\n")  # runs a test program
    monkeypatch.chdir(tmp_path)
    ran = cli("verify", "beta-failure", "--entries", "entries")
    assert ran.code == 1
    text = (entries / "beta-failure.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if "import unittest.__main__" in t)
    assert ran.out.splitlines()[0] == (
        f"entries/beta-failure.yaml:{line}:7: error[E070]: the example cannot be checked: "
        "its imports raised SystemExit: False"
    )
