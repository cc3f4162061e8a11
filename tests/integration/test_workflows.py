"""The GitHub workflows are valid YAML and their `run:` steps work: each step that calls
`nanopedia` is run here, in a scripted repository, exactly as written (expressions filled in).
The sticky-comment script runs under Node against a fake GitHub API, and `.ci/run` and the
browser fixture are held to what CI claims: lint, tests, and browser tests that never skip."""

from __future__ import annotations

import json
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

from nanopedia.cli import parser

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
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    ran = []
    for step in steps(load(ROOT / ".github" / "workflows" / name)):
        script = step.get("run", "")
        if "nanopedia" not in script:
            continue
        missing = [e for e in EXPRESSION.findall(script) if e not in values]
        assert not missing, f"{name}: no local value for {missing}"
        script = EXPRESSION.sub(lambda m: values[m.group(1)], script)
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=repo.root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{name}: step {step.get('name')!r} failed:\n{done.stderr}"
        ran.append(step["name"])
    assert "Check entries" in ran and "Build the site" in ran
    assert (repo.root / "site" / "index.html").is_file()
    if name == "pr.yml":
        diff = (repo.root / "summary" / "diff.md").read_text()
        assert diff.startswith("<!-- nanopedia-diff -->\n### Nanopedia: 1 changed\n")
        assert "- `alpha-failure` Alpha failure under FSDP\n  - sections: `confirm`\n" in diff
        assert not (repo.root / "summary" / "pr-number").exists()  # the event has the number
        assert summary.read_text() == diff


# The actions' current major versions (checked on their release pages, 2026): older ones run on
# a Node.js that GitHub is retiring.
CURRENT_MAJOR = {
    "actions/checkout": 7,
    "actions/setup-python": 7,
    "actions/setup-node": 7,
    "actions/upload-artifact": 7,
    "actions/download-artifact": 8,
    "actions/github-script": 9,
    "actions/upload-pages-artifact": 5,
    "actions/deploy-pages": 5,
}


def test_every_action_is_at_its_current_major_version() -> None:
    used = [step["uses"] for path in WORKFLOWS for step in steps(load(path)) if "uses" in step]
    assert used
    for ref in used:
        name, _, version = ref.partition("@")
        assert name in CURRENT_MAJOR, f"{ref}: add its current major version to CURRENT_MAJOR"
        assert version == f"v{CURRENT_MAJOR[name]}", f"{ref}: use @v{CURRENT_MAJOR[name]}"


def test_pull_requests_run_ruff_the_editor_tools_and_the_tests_read_only() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "tests.yml")
    on = workflow.get(True) or workflow["on"]
    assert "pull_request" in on and "pull_request_target" not in on
    assert workflow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in workflow["jobs"].values())
    runs = [step.get("run", "") for step in steps(workflow)]
    lint = next(i for i, r in enumerate(runs) if "ruff check ." in r)
    assert "ruff format --check ." in runs[lint]
    editor = next(i for i, r in enumerate(runs) if "vsix.py --tools" in r)
    assert "code-server" in runs[editor].split("--tools")[1]  # the editor tests need it, in CI
    types = next(i for i, r in enumerate(runs) if r.startswith("make typecheck"))
    tests = next(i for i, r in enumerate(runs) if r.startswith("make test"))
    assert lint < tests and types < tests and editor < tests
    assert workflow["jobs"]["test"]["env"]["NANOPEDIA_REQUIRE_BROWSER"] == "1"


def comment_script() -> tuple[str, str]:
    """The sticky-comment job's condition and its github-script source."""
    job = load(ROOT / ".github" / "workflows" / "pr-comment.yml")["jobs"]["comment"]
    script = next(
        s["with"]["script"]
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/github-script@")
    )
    return " ".join(job["if"].split()), script


HARNESS = r"""
// github-script's calling convention, with a fake API that records what the script asks.
const fs = require("fs");
const [script, scenario] = [fs.readFileSync(process.argv[2], "utf8"),
                            JSON.parse(fs.readFileSync(process.argv[3], "utf8"))];
const calls = [];
const api = (name, answer) => async (params) => { calls.push([name, params]);
                                                    return { data: answer ?? [] }; };
const github = { rest: {
  pulls: { list: api("pulls.list", scenario.open_pulls) },
  issues: { listComments: api("issues.listComments", scenario.comments),
            updateComment: api("issues.updateComment"),
            createComment: api("issues.createComment") } } };
github.paginate = async (fn, params) => (await fn(params)).data;
const context = { payload: { workflow_run: scenario.run }, repo: { owner: "o", repo: "r" } };
const core = { info: (m) => calls.push(["info", m]) };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction("github", "context", "core", "require", script)(github, context, core, require)
  .then(() => console.log(JSON.stringify(calls)),
        (err) => { console.error(err); process.exit(1); });
"""
MARKER = "<!-- nanopedia-diff -->"
SHA = "a" * 40


def run_comment_script(
    tmp_path: Path, run: dict[str, Any], open_pulls: list[Any], comments: list[Any]
) -> list[list[Any]]:
    """Run the script as the action would, in a folder with the downloaded artifact: the summary
    and a `pr-number` file a fork's workflow planted, naming some other pull request."""
    node = shutil.which("node")
    assert node, "Node.js is needed (installed by .ci/run)"
    (tmp_path / "summary").mkdir()
    (tmp_path / "summary" / "diff.md").write_text(f"{MARKER}\n### Nanopedia: 1 changed\n")
    (tmp_path / "summary" / "pr-number").write_text("999\n")
    (tmp_path / "script.js").write_text(comment_script()[1])
    (tmp_path / "harness.js").write_text(HARNESS)
    scenario = {
        "run": {
            "head_sha": SHA,
            "head_branch": "fix-typo",
            "conclusion": "success",
            "head_repository": {"owner": {"login": "forker"}},
            **run,
        },
        "open_pulls": open_pulls,
        "comments": comments,
    }
    (tmp_path / "scenario.json").write_text(json.dumps(scenario))
    done = subprocess.run(
        [node, "harness.js", "script.js", "scenario.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [call for call in json.loads(done.stdout) if call[0] != "info"]


def pull(number: int, sha: str = SHA) -> dict[str, Any]:
    return {"number": number, "head": {"sha": sha}}


def comment(ident: int, login: str, body: str = MARKER + "\nold") -> dict[str, Any]:
    return {"id": ident, "user": {"login": login, "type": "Bot"}, "body": body}


def test_a_forks_run_comments_on_its_own_pull_request_only(tmp_path: Path) -> None:
    """A fork's run lists no pull request: the number is that of the open pull request whose
    head is the run's commit, never the artifact's; the comment updated is our bot's, not
    another bot's with the same marker."""
    calls = run_comment_script(
        tmp_path,
        {"pull_requests": []},
        [pull(8, "b" * 40), pull(7)],
        [
            comment(41, "evil-app[bot]"),
            comment(42, "github-actions[bot]"),
            {"id": 43, "user": {"login": "github-actions[bot]", "type": "Bot"}, "body": "other"},
        ],
    )
    assert calls == [
        [
            "pulls.list",
            {
                "owner": "o",
                "repo": "r",
                "state": "open",
                "head": "forker:fix-typo",
                "per_page": 100,
            },
        ],
        ["issues.listComments", {"owner": "o", "repo": "r", "issue_number": 7, "per_page": 100}],
        [
            "issues.updateComment",
            {
                "owner": "o",
                "repo": "r",
                "comment_id": 42,
                "body": f"{MARKER}\n### Nanopedia: 1 changed\n",
            },
        ],
    ]


def test_a_same_repository_run_takes_the_number_from_the_event(tmp_path: Path) -> None:
    calls = run_comment_script(
        tmp_path, {"pull_requests": [pull(5)]}, [], [comment(41, "evil-app[bot]")]
    )
    assert [c[0] for c in calls] == ["issues.listComments", "issues.createComment"]
    assert calls[1][1]["issue_number"] == 5


@pytest.mark.parametrize(
    "run",
    [
        {"conclusion": "failure", "pull_requests": [pull(5)]},
        {"conclusion": "cancelled", "pull_requests": [pull(5)]},
        {"pull_requests": [pull(5, "c" * 40)]},  # a pull request that moved on since the run
    ],
)
def test_nothing_is_posted_for_a_failed_run_or_no_matching_pull_request(
    tmp_path: Path, run: dict[str, Any]
) -> None:
    calls = run_comment_script(tmp_path, run, [pull(9, "d" * 40)], [])
    assert not [c for c in calls if c[0].startswith("issues.")]


def test_the_comment_job_runs_only_after_a_successful_pull_request_run() -> None:
    condition, script = comment_script()
    assert "github.event.workflow_run.event == 'pull_request'" in condition
    assert "github.event.workflow_run.conclusion == 'success'" in condition
    assert "pr-number" not in script
    pr = (ROOT / ".github" / "workflows" / "pr.yml").read_text(encoding="utf-8")
    assert "pr-number" not in pr


def ci_commands() -> list[str]:
    """`.ci/run`'s commands (a line ended by `\\` joined to the next), comments and blank lines
    left out."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_ci_lints_then_tests_with_the_browser_slurm_and_editor_tests_required() -> None:
    commands = ci_commands()
    tests = commands.index("make test")
    lint = commands.index(".venv/bin/ruff check .")
    layout = commands.index(".venv/bin/ruff format --check .")
    types = commands.index("make typecheck")
    required = next(
        i
        for i, c in enumerate(commands)
        if c.startswith("export ") and "NANOPEDIA_REQUIRE_BROWSER=1" in c.split()
    )
    exported = commands[required].split()
    assert {
        "NANOPEDIA_REQUIRE_SANDBOX=1",
        "NANOPEDIA_REQUIRE_REPRO=1",
        "NANOPEDIA_REQUIRE_SLURM=1",
        "NANOPEDIA_REQUIRE_EDITOR=1",
    } <= set(exported)
    assert commands.index("make .venv-repro/.installed") < tests  # tests/repro needs it
    tools = next(i for i, c in enumerate(commands) if "vsix.py --tools" in c)
    assert "code-server" in commands[tools].split() and tools < tests  # the real-editor tests
    assert required < tests and lint < tests and layout < tests and types < tests


BROWSER_TEST = """\
def test_needs_a_browser(browser):
    assert browser.is_connected()
"""


@pytest.mark.parametrize(
    ("required", "outcome"),
    [
        ({"NANOPEDIA_REQUIRE_BROWSER": "1"}, "1 error"),
        ({"CI": "true"}, "1 error"),
        ({}, "1 skipped"),
    ],
)
def test_a_missing_chromium_fails_the_browser_tests_when_they_are_required(
    tmp_path: Path, required: dict[str, str], outcome: str
) -> None:
    """Under `.ci/run`'s setting (or CI=true) a missing Chromium is an error, never a skip;
    only a contributor's machine without it skips them, saying why."""
    (tmp_path / "test_browser_needed.py").write_text(BROWSER_TEST)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NANOPEDIA_REQUIRE_BROWSER")}
    env.update(
        required,
        NANOPEDIA_CHROMIUM=str(tmp_path / "no-chromium"),
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT / "generator")]),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "test_browser_needed.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert outcome in done.stdout, done.stdout + done.stderr
    assert f"Chromium not found at {tmp_path / 'no-chromium'}" in done.stdout
    assert done.returncode == (1 if required else 0), done.stdout
