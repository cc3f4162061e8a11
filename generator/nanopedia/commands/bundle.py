"""`nanopedia bundle`: the built site as one reproducible zip, or as one self-contained HTML file.

Both are for reading offline: a zip copied to a shared filesystem of an air-gapped cluster, or a
single file dropped next to the job logs, opened by double-click (`file://`).

The zip is byte-for-byte reproducible: members sorted, every timestamp `SOURCE_DATE_EPOCH` (or a
fixed default), fixed permissions and creator system, relative paths under one top folder, no
symlinks. A `.sha256` file in `sha256sum` format goes beside it.

The single file holds every page of the site as an inert `<template>` (each page rendered by the
theme's own templates through `theme/single/base.html`, which keeps only the page's main content),
a router script that shows one at a time, and search; styles and scripts are inlined, and its
Content-Security-Policy allows exactly those inline blocks by their sha256.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import jinja2
from markupsafe import Markup

from nanopedia import __version__
from nanopedia import config as site_config
from nanopedia.errors import fail
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.incremental.write import MARKER
from nanopedia.site.render import THEME, environment
from nanopedia.site.search import FOLDER as SEARCH_FOLDER
from nanopedia.site.search import INDEX_FILE

#: 1980-01-01, the earliest time a zip can record, when `SOURCE_DATE_EPOCH` is not set.
DEFAULT_EPOCH = 315532800
FILE_MODE = 0o644
DIR_MODE = 0o755
#: The zip "made by" system: Unix, so unzip applies the recorded permissions everywhere.
UNIX = 3
SINGLE = THEME / "single"
#: Scripts of the single file, in execution order: the library, the index scripts, then search
#: and the diagnosis page's data, worker source and page script.
LIBRARY = "static/vendor/minisearch/minisearch.js"
SCRIPTS = (
    "static/search.js",
    "static/entry.js",
    "static/diagnose-data.js",
    "static/diagnose-worker.js",
    "static/diagnose.js",
)
STYLES = ("static/site.css", "static/pygments.css", "static/search.css", "static/diagnose.css")
#: Pages left out of the single file: the 404 page only makes sense on a server.
SKIPPED_PAGES = frozenset({"404.html"})


@dataclass(frozen=True, slots=True)
class Bundle:
    """What `bundle` wrote, for the CLI to report."""

    path: Path
    size: int
    sha256: str


def source_epoch() -> int:
    """`SOURCE_DATE_EPOCH` when set (reproducible-builds.org), else a fixed date."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return DEFAULT_EPOCH
    if not raw.isdigit():
        fail("SOURCE_DATE_EPOCH", "E041", f"SOURCE_DATE_EPOCH must be whole seconds, not {raw!r}")
    return max(int(raw), DEFAULT_EPOCH)


def site_files(site: Path) -> Iterator[tuple[str, Path]]:
    """Every file of a built site as (relative posix path, path), sorted; refuses symlinks."""
    found: list[tuple[str, Path]] = []
    for path in site.rglob("*"):
        rel = path.relative_to(site).as_posix()
        if path.is_symlink():
            fail(
                str(path), "E041", f"the site contains a symlink: {rel}", "bundles hold files only"
            )
        if path.is_file() and path.name != MARKER:
            found.append((rel, path))
    yield from sorted(found)


def _info(name: str, when: tuple[int, int, int, int, int, int], mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, when)
    info.create_system = UNIX
    info.external_attr = mode << 16
    if name.endswith("/"):
        info.external_attr |= 0x10  # the MS-DOS directory bit, for unzip tools that check it
    else:
        info.compress_type = zipfile.ZIP_DEFLATED
    return info


def write_zip(site: Path, target: Path, top: str, epoch: int) -> None:
    """The site as a zip with every member under `top/`, reproducibly."""
    when = time.gmtime(epoch)[:6]
    dirs: set[str] = set()
    with zipfile.ZipFile(target, "w", compresslevel=9) as archive:
        archive.writestr(_info(f"{top}/", when, stat.S_IFDIR | DIR_MODE), b"")
        for rel, path in site_files(site):
            parts = PurePosixPath(rel).parts
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth]) + "/"
                if folder not in dirs:
                    dirs.add(folder)
                    archive.writestr(_info(f"{top}/{folder}", when, stat.S_IFDIR | DIR_MODE), b"")
            info = _info(f"{top}/{rel}", when, stat.S_IFREG | FILE_MODE)
            archive.writestr(info, path.read_bytes())


def _publish(data: bytes | Path, target: Path) -> Bundle:
    """Move or write `data` to `target` atomically, with its `.sha256` beside it.

    Two files cannot be replaced at once, so the old checksum goes first: a run killed at any
    moment leaves the old pair, the new zip without a checksum (`sha256sum -c` says the file is
    missing; the next run writes it), or the new pair; never a zip beside another's checksum.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    checksum = target.parent / f"{target.name}.sha256"
    if isinstance(data, Path):
        digest, size = _digest(data)
        checksum.unlink(missing_ok=True)
        os.chmod(data, FILE_MODE)
        os.replace(data, target)
    else:
        digest, size = hashlib.sha256(data).hexdigest(), len(data)
        checksum.unlink(missing_ok=True)
        _write_atomically(target, data)
    _write_atomically(checksum, f"{digest}  {target.name}\n".encode())
    return Bundle(target, size, digest)


def _digest(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _write_atomically(target: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(
        dir=target.parent, prefix=f".{target.name}.", delete=False
    ) as handle:
        handle.write(data)
    os.chmod(handle.name, FILE_MODE)
    os.replace(handle.name, target)


#: Scratch folders of `zip_bundle` in the output folder: `<prefix><pid>-<random>`.
SCRATCH_PREFIX = ".nanopedia-bundle-"


def _sweep(out: Path) -> None:
    """Remove the scratch folders of bundle runs that were killed (their process is gone): a
    kill -9 leaves a whole site behind, which nothing else would ever delete."""
    for folder in out.glob(SCRATCH_PREFIX + "*"):
        pid = folder.name[len(SCRATCH_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # a live run (or a reused pid): leave it
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue


def zip_bundle(
    entries: Path, out: Path, config: Path | None = None, use_cache: bool = True
) -> Bundle:
    """Build the site from `entries` and write `out/nanopedia-<version>.zip` plus its checksum."""
    name = f"nanopedia-{__version__}"
    epoch = source_epoch()
    out.mkdir(parents=True, exist_ok=True)
    _sweep(out)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=out) as scratch:
        site = Path(scratch) / "site"
        build(Request(entries, site, config, use_cache=use_cache, scratch=True))
        archive = Path(scratch) / f"{name}.zip"
        write_zip(site, archive, name, epoch)
        return _publish(archive, out / f"{name}.zip")


def csp_hash(text: str) -> str:
    """The CSP source expression that allows one inline block with exactly this text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def _inline(text: str, element: str, origin: str) -> Markup:
    """Text that is safe as the content of an inline `<script>` or `<style>` element."""
    lowered = text.lower()
    if f"</{element}" in lowered or "<!--" in lowered or "<script" in lowered:
        fail(origin, "E041", f"cannot inline {origin}: it contains markup that ends a <{element}>")
    return Markup(text)


def single_file(
    entries: Path, out: Path, config: Path | None = None, use_cache: bool = True
) -> Bundle:
    """Build every page into `out/nanopedia-<version>.html`, one self-contained file."""
    with tempfile.TemporaryDirectory(prefix="nanopedia-single-") as scratch:
        theme = Path(scratch) / "theme"
        shutil.copytree(THEME, theme)
        shutil.copy2(SINGLE / "base.html", theme / "templates" / "base.html")
        site = Path(scratch) / "site"
        build(Request(entries, site, config, use_cache=use_cache, theme=theme, scratch=True))
        html = _assemble(site, theme, site_config.read(config))
    return _publish(html.encode("utf-8"), out / f"nanopedia-{__version__}.html")


def _assemble(site: Path, theme: Path, cfg: site_config.Config) -> str:
    """The single file from a site built with the single-file base template."""
    files = dict(site_files(site))
    pages = [
        Markup(path.read_text(encoding="utf-8"))
        for rel, path in files.items()
        if rel.endswith(".html") and rel not in SKIPPED_PAGES
    ]
    style = "\n".join(files[rel].read_text(encoding="utf-8") for rel in STYLES)
    index = [INDEX_FILE] + sorted(
        r for r in files if r.startswith(f"{SEARCH_FOLDER}/") and r != INDEX_FILE
    )
    order = [LIBRARY, *index, *SCRIPTS]
    scripts = [_inline(files[rel].read_text(encoding="utf-8"), "script", rel) for rel in order]
    scripts.append(
        _inline((theme / "single" / "single.js").read_text(encoding="utf-8"), "script", "single.js")
    )
    styles = [_inline(style, "style", "styles")]
    context = {
        "site": {"title": cfg.title, "description": cfg.description},
        "styles": styles,
        "scripts": scripts,
        "pages": pages,
        "csp": {
            "script": " ".join(csp_hash(s) for s in scripts),
            "style": " ".join(csp_hash(s) for s in styles),
        },
        "version": __version__,
    }
    env = environment(theme).overlay(loader=jinja2.FileSystemLoader(theme / "single"))
    return env.get_template("bundle.html").render(context)
