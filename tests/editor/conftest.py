"""Fixtures of the editor tests: the extension packaged once per session from the repository's
site, and the policy for missing tools. The editor tests are required where
NANOPEDIA_REQUIRE_EDITOR=1 or CI is set (.ci/run): a tool that cannot be installed or started then
fails them; elsewhere they skip, saying why."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from editor.workbench import vsix

EDITOR_REQUIRED = bool(os.environ.get("NANOPEDIA_REQUIRE_EDITOR") or os.environ.get("CI"))


def missing(reason: str) -> NoReturn:
    """Skip a test whose tool is missing, or fail it where the editor tests are required."""
    if EDITOR_REQUIRED:
        pytest.fail(
            f"{reason} (the editor tests are required here: .ci/run installs what they need)"
        )
    pytest.skip(reason)


@pytest.fixture(scope="session")
def extension(repo_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/nanopedia-<version>.vsix as `make vsix` makes it, from the session's site build."""
    if shutil.which("npm") is None:
        missing("npm is not installed, so vsce cannot be installed")
    try:
        return vsix.package(repo_site, tmp_path_factory.mktemp("vsix"))
    except vsix.ToolError as err:
        missing(str(err))
