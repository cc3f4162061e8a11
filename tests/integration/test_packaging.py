"""A normal install works: the sdist and wheel carry the theme, and the installed package uses it.

The checkout is copied (less what `.gitignore` names), built offline with `python -m build
--no-isolation` (the sdist, then the wheel from that sdist, as pip would), and the wheel installed
into a fresh venv made from the base interpreter. Only the test venv's site-packages go on the new
venv's path, after its own, through a `.pth` line: a `.pth` file in a directory added that way is
not run, so the editable install's finder never brings `/work/main/generator` back. Every command
then runs from a temp dir, outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import venv
import zipfile
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia import __version__
from nanopedia.content.corpus import entry_files
from nanopedia.theme_dir import locate

THEME = ROOT / "theme"
THEME_FILES = sorted(p.relative_to(THEME).as_posix() for p in THEME.rglob("*") if p.is_file())
DIST = f"nanopedia-{__version__}"
# Where each consumer of the theme looks, printed by the installed package.
WHERE = """\
import json
import nanopedia
from nanopedia.commands import bundle
from nanopedia.mkdocs import pages as mkdocs_pages
from nanopedia.commands import new
from nanopedia.site import render
from nanopedia.commands import serve
from nanopedia import theme_dir
print(json.dumps({
    "package": nanopedia.__file__, "theme": str(theme_dir.THEME), "render": str(render.THEME),
    "mkdocs": str(mkdocs_pages.TEMPLATES), "skeleton": str(new.SKELETON),
    "serve": str(serve.SERVE_THEME), "single": str(bundle.SINGLE),
}))
"""


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Installed:
    root: Path
    python: Path
    site_packages: Path

    def run(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
        """Run a command of the venv (`python`, `nanopedia`) in `cwd`; fail with its output."""
        return _run([str(self.root / "bin" / args[0]), *args[1:]], cwd, env)


def _run(command: list[str], cwd: Path, extra: dict[str, str] | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.update(extra or {})
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    here = tmp_path_factory.mktemp("packaging")
    patterns = [
        line.strip()
        for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    # As git reads them: `/site/` only at the root (nanopedia/site/ is code), `build/` anywhere.
    anywhere = [p.strip("/") for p in patterns if not p.startswith("/")] + [".git"]
    at_root = [p.strip("/") for p in patterns if p.startswith("/")]

    def ignored(folder: str, names: list[str]) -> set[str]:
        rules = anywhere + at_root if Path(folder) == ROOT else anywhere
        return {n for n in names if any(fnmatch(n, rule) for rule in rules)}

    shutil.copytree(ROOT, here / "src", ignore=ignored)
    _run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--outdir",
            str(here / "dist"),
            str(here / "src"),
        ],
        here,
    )
    return Dists(here / "dist" / f"{DIST}.tar.gz", next((here / "dist").glob("*.whl")))


@pytest.fixture(scope="module")
def installed(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False, symlinks=True)  # from the base interpreter, not this venv
    python = root / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(dists.wheel),
        ],
        root,
    )
    site_packages = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root
        ).strip()
    )
    (site_packages / "_test_dependencies.pth").write_text(
        "".join(f"{p}\n" for p in site.getsitepackages()), encoding="utf-8"
    )
    return Installed(root, python, site_packages)


def test_locate_prefers_the_copy_inside_the_package(tmp_path: Path) -> None:
    package = tmp_path / "generator" / "nanopedia"
    package.mkdir(parents=True)
    assert locate(package) == tmp_path / "theme"
    (package / "theme").mkdir()
    assert locate(package) == package / "theme"


def test_the_checkout_uses_its_own_theme() -> None:
    assert locate() == THEME
    assert {
        "templates/base.html",
        "skeleton/entry.yaml",
        "mkdocs/entry.md.j2",
        "static/vendor/minisearch/LICENSE.txt",
    } <= set(THEME_FILES)


def test_sdist_and_wheel_carry_every_theme_file(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        names = {m.name for m in sdist.getmembers() if m.isfile()}
    missing = [f for f in THEME_FILES if f"{DIST}/theme/{f}" not in names]
    assert not missing, f"not in the sdist: {missing}"

    with zipfile.ZipFile(dists.wheel) as wheel:
        shipped = {
            n.removeprefix("nanopedia/theme/"): wheel.read(n)
            for n in wheel.namelist()
            if n.startswith("nanopedia/theme/")
        }
    assert sorted(shipped) == THEME_FILES
    changed = [f for f in THEME_FILES if shipped[f] != (THEME / f).read_bytes()]
    assert not changed, f"differ from theme/ in the wheel: {changed}"


def test_installed_package_reads_only_its_installed_theme(
    installed: Installed, tmp_path: Path
) -> None:
    where = json.loads(installed.run(tmp_path, "python", "-c", WHERE))
    theme = installed.site_packages / "nanopedia" / "theme"
    assert Path(where.pop("package")) == installed.site_packages / "nanopedia" / "__init__.py"
    assert {k: Path(v) for k, v in where.items()} == {
        "theme": theme,
        "render": theme,
        "mkdocs": theme / "mkdocs",
        "skeleton": theme / "skeleton" / "entry.yaml",
        "serve": theme / "serve",
        "single": theme / "single",
    }


def test_installed_cli_builds_bundles_and_starts_an_entry(
    installed: Installed, tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "entries", tmp_path / "entries")
    ids = [p.stem for p in entry_files(tmp_path / "entries")]
    assert ids

    installed.run(
        tmp_path, "python", "-m", "nanopedia", "build", "--entries", "entries", "--out", "site"
    )
    site_dir = tmp_path / "site"
    pages = ["index.html", "search.html", "404.html", *(f"entries/{i}.html" for i in ids)]
    assert [p for p in pages if not (site_dir / p).is_file()] == []
    vendor = "static/vendor/minisearch"
    for name in ("minisearch.js", "LICENSE.txt"):
        assert (site_dir / vendor / name).read_bytes() == (THEME / vendor / name).read_bytes()

    installed.run(
        tmp_path, "nanopedia", "bundle", "--single-file", "--entries", "entries", "--out", "dist"
    )
    assert (tmp_path / "dist" / f"{DIST}.html").stat().st_size > 0

    (tmp_path / "fresh").mkdir()
    shutil.copy2(ROOT / "entries" / "tags.yaml", tmp_path / "fresh" / "tags.yaml")
    installed.run(tmp_path, "nanopedia", "new", "alpha-failure", "--entries", "fresh")
    made = (tmp_path / "fresh" / "alpha-failure.yaml").read_text(encoding="utf-8")
    assert made.startswith("# yaml-language-server: $schema=entry.schema.json\n")
    assert "id: alpha-failure\n" in made


def test_installed_mkdocs_plugin_builds_the_section(installed: Installed, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Team docs\n", encoding="utf-8")
    shutil.copytree(ROOT / "entries", tmp_path / "entries")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Team docs\ntheme:\n  name: mkdocs\n  highlightjs: false\n"
        "plugins:\n  - nanopedia:\n      entries: entries\n      section: failures\n",
        encoding="utf-8",
    )
    installed.run(tmp_path, "python", "-m", "mkdocs", "build", "--quiet")
    ids = [p.stem for p in entry_files(tmp_path / "entries")]
    pages = ["failures/index.html", *(f"failures/entries/{i}/index.html" for i in ids)]
    assert [p for p in pages if not (tmp_path / "site" / p).is_file()] == []


def test_installed_diagnose_works_in_an_empty_directory(
    installed: Installed, tmp_path: Path
) -> None:
    """`pip install nanopedia && nanopedia diagnose job.log`: the wheel ships the entries."""
    shipped = installed.site_packages / "nanopedia" / "entries"
    assert sorted(p.name for p in shipped.glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "entries").glob("*.yaml")
    )
    (tmp_path / "job.log").write_text(
        "[rank3]: ValueError: Must flatten tensors with uniform "
        "dtype but got torch.bfloat16 and torch.float32\n"
    )
    out = installed.run(tmp_path, "nanopedia", "diagnose", "--json", "job.log")
    assert json.loads(out)["matches"][0]["id"] == "fsdp-uniform-dtype"


def test_the_wheel_ships_the_compiled_catalogue_of_its_entries(
    dists: Dists, installed: Installed, tmp_path: Path
) -> None:
    """setup.py compiles the catalogue into the wheel: an installed diagnosis reads it as it is
    and compiles nothing into the user's cache."""
    with zipfile.ZipFile(dists.wheel) as wheel:
        assert "nanopedia/diagnosis/catalogue.json" in wheel.namelist()
    cache = tmp_path / "cache"
    (tmp_path / "job.log").write_text(
        "[rank3]: ValueError: Must flatten tensors with uniform "
        "dtype but got torch.bfloat16 and torch.float32\n"
    )
    out = installed.run(
        tmp_path, "nanopedia", "diagnose", "--json", "job.log", env={"NANOPEDIA_CACHE": str(cache)}
    )
    assert json.loads(out)["matches"][0]["id"] == "fsdp-uniform-dtype"
    assert not cache.exists()
