"""The GitHub workflows are valid YAML and their `run:` steps work: each step that calls
`nanopedia` is run here, in a scripted repository, exactly as written (expressions filled in)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, ROOT
from gitscript import Repo

from generator.cli import parser

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def commands() -> set[str]:
    sub = next(a for a in parser()._actions if a.dest == "command")
    return set(sub.choices)


def test_there_are_pr_comment_and_publish_workflows() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"pr.yml", "pr-comment.yml", "main.yml"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflow_is_valid(path: Path) -> None:
    workflow = load(path)
    assert workflow.get("name")
    assert workflow.get(True) or workflow.get("on")  # YAML 1.1 reads the key `on` as true
    assert "permissions" in workflow  # least privilege, never the default token scope
    for step in steps(workflow):
        assert ("uses" in step) != ("run" in step), step
        for line in step.get("run", "").splitlines():
            words = line.split()
            if words[:1] == ["nanopedia"]:
                assert words[1] in commands(), f"{path.name}: unknown command in {line!r}"


@pytest.fixture
def pull_request(tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    """A checkout of a pull request that edits one entry: the fixture corpus, then one change."""
    repo = Repo(tmp_path / "repo")
    shutil.copytree(FIXTURES / "corpus", repo.root / "entries")
    base = repo.commit("base", "2024-01-01T00:00:00Z")
    path = repo.root / "entries" / "alpha-failure.yaml"
    path.write_text(path.read_text().replace("Print the dtype", "Print the dtypes"))
    repo.commit("edit alpha", "2024-01-02T00:00:00Z")
    values = {"github.event.pull_request.base.sha": base, "github.event.pull_request.number": "7"}
    return repo, values


@pytest.mark.parametrize("name", ["pr.yml", "main.yml"])
def test_nanopedia_steps_run(name: str, pull_request: tuple[Repo, dict[str, str]]) -> None:
    repo, values = pull_request
    summary = repo.root.parent / "step-summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = []
    for step in steps(load(ROOT / ".github" / "workflows" / name)):
        script = step.get("run", "")
        if "nanopedia" not in script:
            continue
        missing = [e for e in EXPRESSION.findall(script) if e not in values]
        assert not missing, f"{name}: no local value for {missing}"
        script = EXPRESSION.sub(lambda m: values[m.group(1)], script)
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=repo.root, env=env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}: step {step.get('name')!r} failed:\n{done.stderr}"
        ran.append(step["name"])
    assert "Check entries" in ran and "Build the site" in ran
    assert (repo.root / "site" / "index.html").is_file()
    if name == "pr.yml":
        diff = (repo.root / "summary" / "diff.md").read_text()
        assert diff.startswith("<!-- nanopedia-diff -->\n### Nanopedia: 1 changed\n")
        assert "- `alpha-failure` Alpha failure under FSDP\n  - sections: `confirm`\n" in diff
        assert (repo.root / "summary" / "pr-number").read_text() == "7\n"
        assert summary.read_text() == diff
