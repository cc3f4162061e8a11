"""Checkers the tests install on demand, and what tests of the built site share (its pages of each
kind, a redirect held still).

The W3C Nu checker (`vnu-jar`), axe-core and ESLint come from the npm registry into `.cache/npm/`
(git-ignored), pinned, the first time a test needs them: nothing of theirs is committed, and a
fresh clone gets them with the first test run. Without npm, Java or the registry, the tests
skip with the reason; under `CI=true` they fail instead, since CI must run them.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT

NPM_DIR = ROOT / ".cache" / "npm"
#: npm packages the tests use, pinned; bump the version here to update.
PACKAGES = {
    "vnu-jar": "26.9.27",
    "axe-core": "4.14.1",
    "eslint": "10.15.0",
    "@eslint/js": "10.0.1",
    "globals": "17.14.0",
}


def unavailable(reason: str) -> None:
    """Skip a test whose tool is missing, or fail it in CI, which must have every tool."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run this test: .ci/run installs what it needs)")
    pytest.skip(reason)


def _installed(name: str) -> Path | None:
    folder = NPM_DIR / "node_modules" / name
    try:
        meta = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return folder if meta.get("version") == PACKAGES[name] else None


def npm_package(name: str) -> Path:
    """The folder of npm package `name` at its pinned version, installed when missing.

    A lock keeps parallel test workers from installing into the folder at the same time;
    `--ignore-scripts` stops vnu-jar's install script from downloading a Java of its own.
    """
    found = _installed(name)
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        unavailable(f"npm is not installed, so {name} cannot be installed into {NPM_DIR}")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    with (NPM_DIR / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _installed(name)
        if found:
            return found
        specs = [f"{n}@{v}" for n, v in sorted(PACKAGES.items())]
        done = subprocess.run(
            [
                str(npm),
                "install",
                "--prefix",
                str(NPM_DIR),
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                *specs,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        found = _installed(name)
        if done.returncode or found is None:
            unavailable(f"npm could not install {' '.join(specs)}: {done.stderr.strip()[-500:]}")
    assert found is not None
    return found


def page_types(site: Path) -> dict[str, Path]:
    """One page of each kind the site has: what validity and accessibility tests visit."""
    entries = sorted((site / "entries").glob("*.html"))
    redirects = [p for p in entries if 'http-equiv="refresh"' in p.read_text(encoding="utf-8")]
    articles = [p for p in entries if p not in redirects]
    tags = sorted(p for p in (site / "tags").glob("*.html") if p.name != "index.html")
    assert redirects and articles and tags, f"{site} lacks a redirect, an entry or a tag page"
    # The entry with the most markup (code examples, repros, tables) shows most problems.
    largest = max(articles, key=lambda p: p.stat().st_size)
    return {
        "index": site / "index.html",
        "entry": largest,
        "tag": tags[0],
        "tags": site / "tags" / "index.html",
        "search": site / "search.html",
        "404": site / "404.html",
        "redirect": redirects[0],
        "diagnose": site / "diagnose.html",
    }


@contextmanager
def held(redirect: Path) -> Iterator[Path]:
    """A copy of a redirect page beside it (so its links and styles resolve) without its refresh,
    which would leave the page before a check ran; removed afterwards."""
    html = redirect.read_text(encoding="utf-8")
    kept = re.sub(r'<meta http-equiv="refresh"[^>]*>\n?', "", html)
    assert kept != html, f"{redirect} has no refresh"
    copy = redirect.with_name("held-" + redirect.name)
    copy.write_text(kept, encoding="utf-8")
    try:
        yield copy
    finally:
        copy.unlink()
