"""`nanopedia check` and `nanopedia schema` as contributors and CI use them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from pydantic import BaseModel

from nanopedia.content.schema import inner_model
from nanopedia.model import Entry, entry_json_schema


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_three_files_three_problems_in_one_run(tmp_corpus: Path, cli, monkeypatch) -> None:
    """The contributor story of issue 2: every problem, each at its line, in one run."""
    third = tmp_corpus / "gamma-failure.yaml"
    third.write_text((tmp_corpus / "beta-failure.yaml").read_text().replace("beta-", "gamma-"))
    edit(tmp_corpus / "alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bfl6]")
    edit(tmp_corpus / "beta-failure.yaml", "    kind: docs", "    kind: doc")
    edit(third, "category: distributed", "category: distributed\ncategory: numerics")
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", ".")
    assert result.code == 1
    assert result.out.splitlines() == [
        "alpha-failure.yaml:7:14: error[E023]: unknown tag 'bfl6'",
        "    hint: did you mean 'bf16'?",
        "beta-failure.yaml:33:11: error[E013]: 'doc' is not an allowed value for "
        "'references[0].kind'",
        "    hint: did you mean 'docs'?",
        "gamma-failure.yaml:7:1: error[E004]: duplicate key 'category'",
        "    hint: 'category' is already set at line 6; keep one",
    ]
    assert result.err.splitlines()[-1] == "3 problem(s) found"


def test_clean_corpus_exits_zero(tmp_corpus: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", ".")
    assert (result.code, result.out) == (0, "")
    assert result.err.splitlines()[-1] == "all entries are valid"


def test_warnings_are_counted_beside_the_problems(tmp_corpus: Path, cli, monkeypatch) -> None:
    # a look-alike title is a warning (for both entries); an unknown tag is an error
    edit(
        tmp_corpus / "beta-failure.yaml",
        "title: Beta failure in NCCL collectives",
        "title: \u0410lpha failure under FSDP",
    )
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", ".")
    assert result.code == 0
    assert result.err.splitlines()[-1] == "all entries are valid, 2 warning(s)"
    edit(tmp_corpus / "alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bfl6]")
    result = cli("check", ".")
    assert result.code == 1
    assert result.err.splitlines()[-1] == "1 problem(s) found, 2 warning(s)"


def test_repo_entries_pass_check(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    result = cli("check")
    assert result.code == 0, result.out
    assert "[E062]" not in result.out  # every likely cause has a fix to print


def test_a_root_cause_no_fix_step_is_for_is_a_warning_that_check_passes(
    tmp_corpus: Path, cli, monkeypatch
) -> None:
    """E062: `diagnose` would print no fix beside that likely cause; the entry still builds."""
    edit(
        tmp_corpus / "alpha-failure.yaml",
        "symptoms:\n",
        "  - id: upcast\n    title: A norm layer upcasts\n    domain: workload\n"
        "    action: fix-code\n    explanation: The norm runs in fp32.\nsymptoms:\n",
    )
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", ".")
    assert result.code == 0
    assert result.out.splitlines() == [
        "alpha-failure.yaml:16:9: warning[E062]: no fix step is for root cause 'upcast': "
        "diagnose has no fix to give when it is the likely cause",
        "    hint: add a fix step with 'causes: [upcast]', or add 'upcast' to the 'causes' of a "
        "step that fixes it (a step without 'causes' is for every cause)",
    ]
    assert result.err.splitlines()[-1] == "all entries are valid, 1 warning(s)"


def test_json_format(tmp_corpus: Path, cli, monkeypatch) -> None:
    edit(tmp_corpus / "alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bfl6]")
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", "--format", "json", ".")
    assert result.code == 1
    assert json.loads(result.out) == [
        {
            "path": "alpha-failure.yaml",
            "line": 7,
            "column": 14,
            "code": "E023",
            "severity": "error",
            "message": "unknown tag 'bfl6'",
            "hint": "did you mean 'bf16'?",
        }
    ]


def test_json_format_clean_is_empty_list(tmp_corpus: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", "--format", "json", ".")
    assert (result.code, json.loads(result.out)) == (0, [])


def test_github_format(tmp_corpus: Path, cli, monkeypatch) -> None:
    edit(tmp_corpus / "alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bfl6]")
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", "--format", "github", "alpha-failure.yaml")
    assert result.out.strip() == (
        "::error file=alpha-failure.yaml,line=7,col=14,title=E023::unknown tag 'bfl6' "
        "(hint: did you mean 'bf16'?)"
    )


def test_missing_path_is_a_usage_error(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("check", "nope.yaml")
    assert result.code == 2
    assert result.err == "nope.yaml: error[E050]: no such file or directory\n"


def test_bad_option_is_a_usage_error(cli) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli("check", "--format", "xml")
    assert exit_info.value.code == 2


def test_single_file_check_still_resolves_cross_references(tmp_corpus, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_corpus)
    assert cli("check", "alpha-failure.yaml").code == 0


def test_console_script_and_module_agree(tmp_corpus: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nanopedia", "check", str(tmp_corpus)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr


def test_committed_schema_matches_model(cli) -> None:
    committed = json.loads((ROOT / "entries" / "entry.schema.json").read_text(encoding="utf-8"))
    assert committed == entry_json_schema(), "run: nanopedia schema > entries/entry.schema.json"
    printed = cli("schema")
    assert json.loads(printed.out) == committed


def test_every_entry_starts_with_the_schema_modeline() -> None:
    for path in sorted((ROOT / "entries").glob("*.yaml")):
        if path.name == "tags.yaml":
            continue
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=entry.schema.json", path.name


def field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field of the model as `parent.child` paths, list items included."""
    paths = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.append(path)
        inner = inner_model(info.annotation)
        if inner is not None:
            paths.extend(field_paths(inner, path + "."))
    return paths


def test_entries_readme_documents_every_field() -> None:
    readme = (ROOT / "entries" / "README.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `([a-z_.]+)` \|", readme, flags=re.M)
    assert documented == field_paths(Entry)


def test_a_yml_file_in_the_entries_folder_is_reported(cli, tmp_corpus) -> None:
    (tmp_corpus / "gamma-failure.yml").write_text("id: gamma-failure\n")
    run = cli("check", str(tmp_corpus))
    assert run.code == 1
    assert (
        "gamma-failure.yml: error[E007]: a '.yml' file in the entries folder is not read" in run.out
    )


@pytest.mark.parametrize(
    ("new_id", "title", "field", "why"),
    [
        ("alpha-copy", "Аlрhа fаilurе undеr FSDP", "title", "look-alike letters: а, е, р"),
        ("alpha-copy", "Alpha\u200b failure under FSDP", "title", "invisible U+200B"),
        ("aipha-failure", "A new failure", "id", ""),
        ("alpha-fai1ure", "A new failure", "id", ""),
    ],
)
def test_an_entry_that_reads_as_another_is_a_located_warning(
    tmp_corpus: Path, cli, monkeypatch, new_id: str, title: str, field: str, why: str
) -> None:
    """E01, E08: a stranger's entry impersonating a known one (Cyrillic homoglyphs, a zero-width
    space, `l` for `i`) is named, at the line of its id or title, on both entries."""
    text = (tmp_corpus / "alpha-failure.yaml").read_text()
    text = text.replace("id: alpha-failure", f"id: {new_id}").replace("alpha-old", f"{new_id}-old")
    (tmp_corpus / f"{new_id}.yaml").write_text(
        text.replace("title: Alpha failure under FSDP", f"title: {title}"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", ".")
    line = 2 if field == "id" else 3
    warnings = [w for w in result.out.splitlines() if "E019" in w]
    assert [w.split(": warning")[0] for w in warnings] == [
        f"{name}.yaml:{line}:{len(field) + 3}" for name in sorted(["alpha-failure", new_id])
    ]
    assert all(why in w for w in warnings if w.startswith(new_id))
    assert all("warning[E019]" in w for w in warnings)  # the look-alike may be honest
