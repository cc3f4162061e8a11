"""`bench/mutation.py`'s sampled score: which mutants a sample is drawn from, and the estimate a
sample gives for its group (the figure the closing notes quote for the whole package)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import mutation  # noqa: E402

GROUP = mutation.Group(("site/*.py",), ())
PREFIX = "nanopedia.site.page."


def workspace(tmp_path: Path, codes: dict[str, int | None], reached: set[str]) -> Path:
    """A mutmut workspace with one module's mutants (`f__mutmut_1` ...) and the functions a
    test reaches."""
    meta = tmp_path / "mutants" / "src" / "nanopedia" / "site" / "page.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {PREFIX + m: c for m, c in codes.items()}}))
    stats = {"tests_by_mangled_function_name": {PREFIX + f: ["tests/t.py::t"] for f in reached}}
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps(stats))
    return tmp_path


def test_the_population_is_the_untested_mutants_a_test_reaches_and_a_draw_is_the_seeds(
    tmp_path: Path,
) -> None:
    codes: dict[str, int | None] = {f"x_f__mutmut_{i}": None for i in range(1, 21)}
    codes |= {"x_f__mutmut_21": 1, "x_g__mutmut_1": None}  # tested; no test reaches g
    work = workspace(tmp_path, codes, {"x_f"})
    first = mutation.draw(work, GROUP, 5, seed=3)
    kept = json.loads((work / mutation.SAMPLE).read_text())
    assert kept["population"] == sorted(PREFIX + f"x_f__mutmut_{i}" for i in range(1, 21))
    assert len(first) == 5 and set(first) <= set(kept["population"])
    assert mutation.draw(workspace(tmp_path / "same", codes, {"x_f"}), GROUP, 5, seed=3) == first
    other = mutation.draw(workspace(tmp_path / "other", codes, {"x_f"}), GROUP, 5, seed=4)
    assert len(other) == 5 and other != first
    second = mutation.draw(work, GROUP, 30, seed=3)
    assert sorted(second) == kept["population"]  # the rest, no mutant twice


def test_a_draw_returns_only_the_samples_mutants_still_untested(tmp_path: Path) -> None:
    codes: dict[str, int | None] = {f"x_f__mutmut_{i}": None for i in range(1, 5)}
    work = workspace(tmp_path, codes, {"x_f"})
    chosen = mutation.draw(work, GROUP, 2, seed=0)
    codes |= {m.removeprefix(PREFIX): 1 for m in chosen}
    work = workspace(tmp_path / "later", codes, {"x_f"})
    (work / mutation.SAMPLE).write_text((tmp_path / mutation.SAMPLE).read_text())
    rest = mutation.draw(work, GROUP, 2, seed=0)
    assert len(rest) == 2 and not set(rest) & set(chosen)


def test_the_sample_stands_for_its_population(tmp_path: Path) -> None:
    """10 in the population, 4 of its sample of 6 tested (3 killed) and one tested outside the
    sample (not counted: mutmut tests the fast ones first); outside the population 5 of 6
    killed, and one mutant no test reaches: 5 + 10 * 3/4 killed of 18, with the variance of
    the Agresti-Coull share (3 + 2) / (4 + 4) and the finite-population correction."""
    codes: dict[str, int | None] = {f"x_f__mutmut_{i}": None for i in range(1, 11)}
    work = workspace(tmp_path, codes | {"x_g__mutmut_1": None}, {"x_f"})
    chosen = [f"x_f__mutmut_{i}" for i in (1, 2, 3, 4, 5, 6)]
    (work / mutation.SAMPLE).write_text(
        json.dumps(
            {
                "seed": 0,
                "population": [PREFIX + m for m in codes],
                "chosen": [PREFIX + m for m in chosen],
            }
        )
    )
    tested = {"x_f__mutmut_1": 1, "x_f__mutmut_2": 3, "x_f__mutmut_3": 24, "x_f__mutmut_4": 0}
    outside = {f"x_h__mutmut_{i}": 1 for i in range(1, 6)} | {"x_h__mutmut_6": 0}
    meta = work / "mutants" / "src" / "nanopedia" / "site" / "page.py.meta"
    all_codes = codes | tested | {"x_f__mutmut_9": 0} | outside | {"x_g__mutmut_1": None}
    meta.write_text(json.dumps({"exit_code_by_key": {PREFIX + m: c for m, c in all_codes.items()}}))
    score = mutation.estimate(work, GROUP, 18)
    assert score is not None
    assert score.killed == pytest.approx(5 + 10 * 0.75)
    variance = 100 * 0.625 * 0.375 / 8 * (1 - 4 / 10)
    assert score.variance == pytest.approx(variance)
    half = 196 * variance**0.5 / 18
    assert str(score) == f"{100 * 12.5 / 18:5.1f} % ± {half:.1f} (95 %, sampled)"
    every = {PREFIX + m: 1 for m in codes} | {PREFIX + "x_f__mutmut_2": 0}
    meta.write_text(json.dumps({"exit_code_by_key": every}))
    assert mutation.estimate(work, GROUP, 10) == mutation.Score(9, 10)  # all tested: a count


def test_a_sample_with_no_survivor_still_has_an_interval(tmp_path: Path) -> None:
    codes: dict[str, int | None] = {f"x_f__mutmut_{i}": None for i in range(1, 101)}
    work = workspace(tmp_path, codes, {"x_f"})
    chosen = mutation.draw(work, GROUP, 20, seed=0)
    meta = work / "mutants" / "src" / "nanopedia" / "site" / "page.py.meta"
    killed = {PREFIX + m: c for m, c in codes.items()} | dict.fromkeys(chosen, 1)
    meta.write_text(json.dumps({"exit_code_by_key": killed}))
    score = mutation.estimate(work, GROUP, 100)
    assert score is not None and score.killed == 100 and score.variance > 0
    assert str(score).startswith("100.0 % ± ")


def test_without_a_sample_there_is_no_estimate_and_a_full_count_is_exact(tmp_path: Path) -> None:
    work = workspace(tmp_path, {"x_f__mutmut_1": 1}, {"x_f"})
    assert mutation.estimate(work, GROUP, 1) is None
    assert str(mutation.Score(3, 4)) == " 75.0 %"
    assert str(mutation.Score(3, 4) + mutation.Score(1, 1, 0.5, True)).endswith("(95 %, sampled)")


def test_every_module_with_code_is_in_a_group() -> None:
    """A module no group mutates would be left out of the whole package's score."""
    assert mutation.ungrouped() == []
    assert mutation.has_code(mutation.PACKAGE / "cli.py")
    assert not mutation.has_code(mutation.PACKAGE / "mkdocs" / "__init__.py")


def test_a_workspace_gives_more_time_only_when_timeouts_are_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomllib

    monkeypatch.setattr(mutation, "WORK", tmp_path)
    group = mutation.GROUPS["lock"]

    def section() -> dict[str, object]:
        with (tmp_path / "lock" / "pyproject.toml").open("rb") as f:
            return tomllib.load(f)["tool"]["mutmut"]

    mutation.prepare("lock", group, fresh=False)
    assert "timeout_constant" not in section()
    assert section()["only_mutate"] == ["src/nanopedia/incremental/lock.py"]
    mutation.prepare("lock", group, fresh=False, setup_seconds=mutation.SETUP_SECONDS)
    assert section()["timeout_constant"] == mutation.SETUP_SECONDS
