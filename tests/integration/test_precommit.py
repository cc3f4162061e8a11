"""The pre-commit hook as pre-commit runs it: `nanopedia check` with the staged file names."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import ROOT


def test_hook_manifest_runs_check_on_entry_files() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "nanopedia-check")
    assert hook["entry"] == "nanopedia check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True


def test_repo_config_checks_entries_and_lints_code() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    ids = [h["id"] for repo in config["repos"] for h in repo["hooks"]]
    assert ids == ["nanopedia-check", "ruff", "ruff-format"]


def test_staged_tag_registry_checks_the_whole_directory(tmp_corpus: Path, cli, monkeypatch) -> None:
    """pre-commit passes `tags.yaml` like any file; it must not be validated as an entry."""
    registry = tmp_corpus / "tags.yaml"
    registry.write_text(registry.read_text() + "amp:\n  title: AMP\n  description: Autocast.\n")
    monkeypatch.chdir(tmp_corpus)
    result = cli("check", "tags.yaml", "alpha-failure.yaml")
    assert result.code == 1
    assert result.out.splitlines() == [
        "tags.yaml:10:1: error[E024]: tag 'amp' is used by no entry",
        "    hint: remove it from the registry or tag an entry with it",
    ]
