"""`nanopedia/commands/files.py`: request paths decoded strictly, files opened without following
links, a folder answered with its index and never a listing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanopedia.commands.files import BadTarget, content_type, read_inside, segments


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("/", []),
        ("/entries/a.html", ["entries", "a.html"]),
        ("//entries//a.html", ["entries", "a.html"]),
        ("/caf%C3%A9.html", ["café.html"]),
        ("/a%20b", ["a b"]),
    ],
)
def test_a_path_decodes_to_its_segments(path: str, parts: list[str]) -> None:
    assert segments(path) == parts


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("entries/a.html", "must start with /"),
        ("/a%2", "percent-encoding"),
        ("/a%zz", "percent-encoding"),
        ("/%ff.html", "not UTF-8"),
        ("/a%00b", "control character"),
        ("/a%0Ab", "control character"),
        ("/../etc/passwd", "'..'"),
        ("/entries/%2E%2E/x", "'..'"),
        ("/./a", "'.'"),
    ],
)
def test_a_path_that_names_no_file_is_refused_with_400(path: str, why: str) -> None:
    with pytest.raises(BadTarget, match=why) as refused:
        segments(path)
    assert refused.value.status == 400


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "entries").mkdir(parents=True)
    (root / "index.html").write_text("home")
    (root / "entries" / "a.html").write_text("entry a")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "entries" / "link.html").symlink_to(tmp_path / "secret.txt")
    (root / "out").symlink_to(tmp_path)
    os.mkfifo(root / "fifo.html")
    return root


def test_a_file_and_a_folder_index_are_read(site: Path) -> None:
    found = read_inside(site, ["entries", "a.html"])
    assert found is not None and (found.name, found.body, found.folder) == (
        "a.html",
        b"entry a",
        False,
    )
    index = read_inside(site, [])
    assert index is not None and (index.name, index.body, index.folder) == (
        "index.html",
        b"home",
        True,
    )


@pytest.mark.parametrize(
    "parts",
    [
        ["entries", "link.html"],  # a symlink to a file outside
        ["out", "secret.txt"],  # a folder that is a symlink
        ["fifo.html"],  # would block a plain open
        ["entries"],  # a folder without index.html: no listing
        ["entries", "a.html", "x"],  # inside a file
        ["missing.html"],
        ["x" * 300],  # a name too long for the file system
    ],
)
def test_nothing_but_folders_and_one_regular_file_is_served(site: Path, parts: list[str]) -> None:
    assert read_inside(site, parts) is None


def test_a_missing_site_folder_serves_nothing(tmp_path: Path) -> None:
    assert read_inside(tmp_path / "none", ["index.html"]) is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("index.html", "text/html; charset=utf-8"),
        ("search.JS", "text/javascript; charset=utf-8"),
        ("entries.json", "application/json; charset=utf-8"),
        ("feed.xml", "application/xml; charset=utf-8"),
        ("icon.svg", "image/svg+xml; charset=utf-8"),
        ("photo.png", "image/png"),
        ("blob", "application/octet-stream"),
    ],
)
def test_content_types_say_utf_8_for_text(name: str, kind: str) -> None:
    assert content_type(name) == kind
