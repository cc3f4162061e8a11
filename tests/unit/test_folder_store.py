"""The user's catalogue cache (`incremental/catalogue.py`): where it lives, one file per entries
folder wherever that folder is reached from, and files replaced whole or not at all."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from nanopedia.incremental import catalogue
from nanopedia.incremental.catalogue import FolderStore


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NANOPEDIA_CACHE": "/c/np", "XDG_CACHE_HOME": "/x"}, "/c/np"),
        ({"NANOPEDIA_CACHE": "", "XDG_CACHE_HOME": "/x"}, "/x/nanopedia"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/nanopedia"),
        ({"XDG_CACHE_HOME": ""}, "/home/u/.cache/nanopedia"),
        ({}, "/home/u/.cache/nanopedia"),
    ],
)
def test_the_cache_folder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name in ("NANOPEDIA_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", "/home/u")
    assert catalogue.default_folder() == Path(expected)
    assert catalogue.user_store() == FolderStore(Path(expected))


def test_one_file_per_entries_folder_however_it_is_reached(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "cache")
    (tmp_path / "entries").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "entries")
    digest = hashlib.sha256(os.fsencode(os.path.realpath(tmp_path / "entries"))).hexdigest()
    assert store.path(tmp_path / "entries") == tmp_path / "cache" / f"catalogue-{digest[:24]}.json"
    assert store.path(tmp_path / "link") == store.path(tmp_path / "entries")
    assert store.path(tmp_path / "other") != store.path(tmp_path / "entries")


def test_a_catalogue_reads_back_as_written_and_replaces_the_last(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "not" / "yet")  # made when first written
    root = tmp_path / "entries"
    assert store.read(root) is None
    store.write(root, b"first")
    store.write(root, b"second")
    assert store.read(root) == b"second"
    assert [p.name for p in store.folder.iterdir()] == [store.path(root).name]  # no scratch


def test_a_file_is_read_up_to_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalogue, "MAX_BYTES", 4)
    store = FolderStore(tmp_path)
    store.put("x.json", b"0123456789")
    assert store.get("x.json") == b"0123"


def test_a_folder_that_cannot_be_written_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    store = FolderStore(tmp_path / "file" / "cache")
    store.put("x.json", b"data")  # no error: the catalogue is then compiled each time
    assert store.get("x.json") is None


def test_a_write_that_cannot_replace_the_file_leaves_no_scratch(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    (tmp_path / "x.json").mkdir()  # a folder where the file would go: the rename fails
    store.put("x.json", b"data")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert store.get("x.json") is None
