"""The .vsix `make vsix` writes (editors/vscode/vsix.py): the site's engine, data and entry pages
in it unchanged, so the extension cannot drift from the diagnosis page; its licences (the code
Apache-2.0, the entries CC BY 4.0) and the package's version."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from conftest import ROOT, gathered_entries

from nanopedia import __version__
from nanopedia.diagnosis import catalogue
from nanopedia.site.exports import DIAGNOSE_DATA, diagnose_file


def files(vsix: Path) -> dict[str, bytes]:
    """The extension's files in the .vsix, by path in the extension."""
    with zipfile.ZipFile(vsix) as z:
        return {
            n[len("extension/") :]: z.read(n) for n in z.namelist() if n.startswith("extension/")
        }


def test_the_vsix_runs_the_sites_engine_on_the_sites_data_unchanged(
    extension: Path, repo_site: Path
) -> None:
    shipped = files(extension)
    worker = (ROOT / "theme" / "static" / "diagnose-worker.js").read_bytes()
    assert shipped["engine/diagnose-worker.js"] == worker
    assert (
        shipped["engine/diagnose-worker.js"]
        == (repo_site / "static/diagnose-worker.js").read_bytes()
    )
    data = shipped["engine/diagnose-data.js"]
    assert data == (repo_site / DIAGNOSE_DATA).read_bytes()
    assert data == diagnose_file(catalogue.usable(ROOT / "entries")[0])
    for css in ("site.css", "pygments.css"):
        assert shipped[f"engine/site/static/{css}"] == (repo_site / "static" / css).read_bytes()


def test_the_vsix_has_the_sites_page_of_every_entry(extension: Path, repo_site: Path) -> None:
    shipped = files(extension)
    pages = {p.name: p.read_bytes() for p in (repo_site / "entries").glob("*.html")}
    packed = {
        n.rsplit("/", 1)[1]: b for n, b in shipped.items() if n.startswith("engine/site/entries/")
    }
    assert packed == pages


def test_the_vsix_carries_both_licences_and_the_packages_version(extension: Path) -> None:
    shipped = files(extension)
    assert shipped["LICENSE.txt"] == (ROOT / "LICENSE").read_bytes()
    assert shipped["engine/LICENSE"] == (ROOT / "entries" / "LICENSE").read_bytes()
    assert b"Attribution 4.0" in shipped["engine/LICENSE"]
    manifest = json.loads(shipped["package.json"])
    assert (manifest["version"], manifest["license"]) == (__version__, "Apache-2.0")
    assert extension.name == f"nanopedia-{__version__}.vsix"


def test_the_verify_command_is_read_from_the_page_of_every_entry_with_a_repro(
    extension: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(extension) as z:
        z.extractall(tmp_path)
    node = shutil.which("node")
    assert node, "node is needed to run the extension's code"
    script = (
        "const fs = require('fs'); const path = require('path');"
        "const { verifyCommand } = require(path.resolve('extension/lib/verdict.js'));"
        "const dir = 'extension/engine/site/entries'; const out = {};"
        "for (const n of fs.readdirSync(dir)) out[n.slice(0, -5)] = "
        "verifyCommand(fs.readFileSync(path.join(dir, n), 'utf8'));"
        "console.log(JSON.stringify(out));"
    )
    found = json.loads(
        subprocess.run(
            [node, "-e", script], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout
    )
    entries = gathered_entries()[0].entries
    expected = {e.id: f"nanopedia verify {e.id}" if e.repro else None for e in entries}
    assert {k: v for k, v in found.items() if k in expected} == expected
    assert any(expected.values()) and not all(expected.values())
