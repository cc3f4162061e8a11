"""`nanopedia new`: the skeleton passes `check` except for the values a human must write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nanopedia.commands.new import skeleton
from nanopedia.errors import CODES


@pytest.fixture
def repo(tmp_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout-like directory: the fixture corpus as `entries/`, as the working directory."""
    monkeypatch.chdir(tmp_corpus.parent)
    return tmp_corpus.parent


def fill(text: str) -> str:
    """What a contributor does: replace every TODO with a real value."""
    text = text.replace("TODO-cause", "the-cause")
    text = text.replace("category: TODO", "category: numerics")
    text = text.replace('"TODO: version, e.g. 2.13.0"', "2.13.0")
    text = text.replace('"TODO: https://..."', "https://docs.pytorch.org/docs/stable/amp.html")
    text = re.sub(r'"TODO: one of [^"]*"', "docs", text)
    text = re.sub(r'"TODO: where the fault lives: [^"]*"', "workload", text)
    text = re.sub(r'"TODO: what a failure hook should do: [^"]*"', "fix-code", text)
    return re.sub(r"TODO:[^\"\n]*", "Written by a person who saw this failure.", text)


def test_new_then_check_reports_only_the_blanks(repo: Path, cli) -> None:
    made = cli("new", "gamma-failure", "--title", 'A "quoted": title', "--tag", "nccl")
    assert (made.code, made.out) == (0, "entries/gamma-failure.yaml\n")
    path = repo / "entries" / "gamma-failure.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=entry.schema.json\n")

    checked = cli("check", "entries/gamma-failure.yaml")
    assert checked.code == 1
    located = re.findall(
        r"^entries/gamma-failure\.yaml:(\d+):\d+: error\[(E\d+)\]: '([^']+)'",
        checked.out,
        flags=re.M,
    )
    assert {code for _, code, _ in located} == {"E060"}
    assert [field for _, _, field in located] == [
        "summary",
        "category",
        "root_causes[0].id",
        "root_causes[0].title",
        "root_causes[0].domain",
        "root_causes[0].action",
        "root_causes[0].explanation",
        "symptoms[0].text",
        "symptoms[0].cause",
        "mechanism",
        "affected_systems[0].name",
        "affected_systems[0].versions",
        "confirm[0]",
        "fix[0].title",
        "fix[0].detail",
        "prevention[0]",
        "references[0].title",
        "references[0].url",
        "references[0].kind",
        "checked_with.torch",
    ]
    lines = text.splitlines()
    assert all("TODO" in lines[int(line) - 1] for line, _, _ in located)
    hint = "hint: fill in: The family the failure belongs to; the home page groups entries by it."
    assert f"{hint} One of: mixed-precision," in checked.out

    path.write_text(fill(text), encoding="utf-8")
    done = cli("check", "entries")
    assert (done.code, done.out) == (0, "")


def test_new_without_title_or_tags_leaves_them_as_blanks(repo: Path, cli) -> None:
    assert cli("new", "delta-failure", "--category", "memory").code == 0
    out = cli("check", "entries/delta-failure.yaml").out
    assert "'title' is still a placeholder" in out
    assert "'tags[0]' is still a placeholder" in out
    assert "'category'" not in out


def test_new_refuses_an_existing_id_and_leaves_the_file_alone(repo: Path, cli) -> None:
    path = repo / "entries" / "alpha-failure.yaml"
    before = path.read_bytes()
    result = cli("new", "alpha-failure")
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "entries/alpha-failure.yaml: error[E050]: entry 'alpha-failure' already exists: "
        "entries/alpha-failure.yaml\n    hint: edit that file, or choose another id\n"
    )
    assert path.read_bytes() == before


def test_new_refuses_a_former_id(repo: Path, cli) -> None:
    result = cli("new", "alpha-old")
    assert result.code == 2
    assert "already exists: entries/alpha-failure.yaml (as an alias)" in result.err
    assert not (repo / "entries" / "alpha-old.yaml").exists()


def test_new_reports_every_bad_argument_at_once(repo: Path, cli) -> None:
    result = cli("new", "Bad_Id", "--tag", "bfl6", "--category", "mixed")
    assert result.code == 2
    assert result.err.splitlines() == [
        "entries/Bad_Id.yaml: error[E050]: 'Bad_Id' is not a valid entry id",
        "    hint: use lower-case words joined by hyphens (at most 80 characters), e.g. 'bad-id'",
        "entries/Bad_Id.yaml: error[E050]: unknown category 'mixed'",
        "    hint: one of: mixed-precision, distributed, numerics, memory, performance, "
        "configuration, compilation, data, cuda, hardware, autograd, checkpointing, environment",
        "entries/tags.yaml: error[E050]: unknown tag 'bfl6'",
        "    hint: did you mean 'bf16'?",
    ]
    assert sorted(p.name for p in (repo / "entries").iterdir()) == [
        "alpha-failure.yaml",
        "beta-failure.yaml",
        "tags.yaml",
    ]


def test_skeleton_fills_every_variable() -> None:
    text = skeleton("x-y", title="T: x", tags=["a", "b"], category="data")
    assert "{{" not in text and "{%" not in text
    assert 'title: "T: x"' in text and "tags: [a, b]" in text and "category: data" in text


def test_placeholder_code_is_documented() -> None:
    readme = (Path(__file__).resolve().parents[2] / "entries" / "README.md").read_text()
    assert f"| E060 | {CODES['E060']} |" in readme
