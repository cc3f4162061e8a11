"""ESLint on every script of the theme, the VS Code extension and the Node tests, with the rules
of `eslint.config.cjs`: a variable used before it is set, a typo in a global, unreachable code or
an unused value in the browser's code fails here rather than in a reader's browser."""

from __future__ import annotations

import os
import shutil
import subprocess

from conftest import ROOT
from tools import NPM_DIR, npm_package, unavailable


def test_the_projects_javascript_passes_eslint() -> None:
    eslint = npm_package("eslint") / "bin" / "eslint.js"
    npm_package("@eslint/js"), npm_package("globals")
    node = shutil.which("node") or unavailable("node is not installed")
    env = {**os.environ, "NODE_PATH": str(NPM_DIR / "node_modules")}
    done = subprocess.run(
        [
            str(node),
            str(eslint),
            "--max-warnings",
            "0",
            "theme",
            "editors",
            "tests/js",
            "eslint.config.cjs",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
