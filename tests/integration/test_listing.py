"""Listing the entry files and the site, here or in a process forked while the CLI imports."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.incremental import inputs as listing


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    entries, site = tmp_path / "entries", tmp_path / "site"
    (site / "entries").mkdir(parents=True)
    entries.mkdir()
    for name in ("b.yaml", "a.yaml", "tags.yaml", "notes.txt"):
        (entries / name).write_text(name)
    (entries / "broken.yaml").symlink_to(tmp_path / "nowhere.yaml")
    for path in ("index.html", "entries/a.html", ".nanopedia-site"):
        (site / path).write_text(path)
    return entries, site


def test_a_listing_names_the_entries_and_every_site_file(tree: tuple[Path, Path]) -> None:
    entries, site = tree
    found = listing.listing(entries, site)
    assert found.names == ["a.yaml", "b.yaml", "broken.yaml"]
    info = (entries / "a.yaml").stat()
    assert found.stamps["a.yaml"] == (info.st_size, info.st_mtime_ns, info.st_ino)
    assert "broken.yaml" not in found.stamps  # unreadable: loading it says why
    assert sorted(found.site) == [".nanopedia-site", "entries/a.html", "index.html"]
    assert listing.listing(entries, site / "missing").site == {}


PREFETCH = """
import os, sys
from pathlib import Path
from nanopedia.incremental import inputs as listing
forks = []
real = os.fork
os.fork = lambda: forks.append(1) or real()
entries, site = Path(sys.argv[1]), Path(sys.argv[2])
found = listing.prefetch(entries, site)()
here = listing.listing(entries, site)
assert forks == [1], forks
assert (found.names, found.stamps, found.site) == (here.names, here.stamps, here.site)
assert found.taken_ns <= here.taken_ns
print("same")
"""


def test_a_prefetched_listing_is_the_same(tree: tuple[Path, Path]) -> None:
    """In a process of its own, as the console script runs it: a test process may have
    threads (Playwright's), beside which nothing is forked."""
    entries, site = tree
    run = subprocess.run(
        [sys.executable, "-c", PREFETCH, str(entries), str(site)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert (run.returncode, run.stdout.strip()) == (0, "same"), run.stderr


def test_a_failed_child_is_listed_here(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, site = tree
    parent = os.getpid()
    real = listing.stamps

    def only_here(root: Path, names: list[str]) -> dict[str, listing.Stamp]:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return real(root, names)

    monkeypatch.setattr(listing, "stamps", only_here)
    assert listing.prefetch(entries, site)().names == ["a.yaml", "b.yaml", "broken.yaml"]


def test_no_fork_while_other_threads_run(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, site = tree
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked beside a running thread"))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert (
            listing.prefetch(entries, site)().site.keys()
            == listing.listing(entries, site).site.keys()
        )
    finally:
        stop.set()
        other.join()
