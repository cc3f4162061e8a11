"""What a build stats first (`incremental/inputs.py`): the entry files with their stamps, the
site's files with size and time, and the same listing made in a forked process while the console
script imports the rest (`prefetch`), or here when forking is not safe or the child fails."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nanopedia.incremental import inputs


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    entries, out = tmp_path / "entries", tmp_path / "site"
    entries.mkdir()
    (entries / "b-entry.yaml").write_text("id: b-entry\n")
    (entries / "a-entry.yaml").write_text("id: a-entry\ntitle: A\n")
    (entries / "tags.yaml").write_text("{}\n")  # the registry, no entry
    (entries / "notes.txt").write_text("no entry")
    (entries / "linked.yaml").symlink_to(entries / "a-entry.yaml")  # refused when loaded
    os.mkfifo(entries / "pipe.yaml")
    (entries / "folder.yaml").mkdir()
    (out / "entries").mkdir(parents=True)
    (out / "index.html").write_text("<p>home</p>")
    (out / "entries" / "a-entry.html").write_text("<p>a</p>\n")
    return entries, out


def test_the_listing_names_every_entry_file_and_stamps_only_the_regular_ones(
    folders: tuple[Path, Path],
) -> None:
    entries, out = folders
    before = time.time_ns()
    found = inputs.listing(entries, out)
    assert before <= found.taken_ns <= time.time_ns()
    assert found.names == [
        "a-entry.yaml",
        "b-entry.yaml",
        "folder.yaml",
        "linked.yaml",
        "pipe.yaml",
    ]
    stamps = {}
    for name in ("a-entry.yaml", "b-entry.yaml"):
        info = os.stat(entries / name)
        stamps[name] = (info.st_size, info.st_mtime_ns, info.st_ino)
    assert found.stamps == stamps
    site = {}
    for path in ("index.html", "entries/a-entry.html"):
        info = os.stat(out / path)
        site[path] = (info.st_size, info.st_mtime_ns)
    assert found.site == site


def test_missing_folders_give_an_empty_listing(tmp_path: Path) -> None:
    found = inputs.listing(tmp_path / "none", tmp_path / "nothing")
    assert (found.names, found.stamps, found.site) == ([], {}, {})
    assert inputs.stamps(tmp_path / "none", ["a.yaml"]) == {}


def _same(a: inputs.Listing, b: inputs.Listing) -> bool:
    return (a.names, a.stamps, a.site) == (b.names, b.stamps, b.site)


def test_prefetch_in_a_forked_process_gives_the_listing(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, out = folders
    monkeypatch.setattr(inputs.threading, "active_count", lambda: 1)  # as the console script
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(inputs.os, "fork", lambda: forks.append(1) or real_fork())
    before = time.time_ns()
    found = inputs.prefetch(entries, out)()
    assert forks == [1]
    assert _same(found, inputs.listing(entries, out))
    assert before <= found.taken_ns <= time.time_ns()


def test_with_other_threads_running_prefetch_lists_here_without_forking(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, out = folders
    monkeypatch.setattr(inputs.threading, "active_count", lambda: 2)
    monkeypatch.setattr(inputs.os, "fork", lambda: pytest.fail("forked beside threads"))
    assert _same(inputs.prefetch(entries, out)(), inputs.listing(entries, out))


def test_when_the_child_sends_nothing_readable_the_listing_is_made_here(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, out = folders
    monkeypatch.setattr(inputs.threading, "active_count", lambda: 1)
    monkeypatch.setattr(inputs.marshal, "dumps", lambda value: b"\x00not marshal")
    found = inputs.prefetch(entries, out)()
    assert _same(found, inputs.listing(entries, out))
    assert inputs.gc.isenabled()  # the collector is on again


def test_when_forking_fails_the_listing_is_made_here(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, out = folders
    monkeypatch.setattr(inputs.threading, "active_count", lambda: 1)

    def refuse() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(inputs.os, "fork", refuse)
    assert _same(inputs.prefetch(entries, out)(), inputs.listing(entries, out))
