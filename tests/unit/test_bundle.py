"""The offline zip (`commands/bundle.py`) from a small site folder made here: byte-for-byte
reproducible, readable by everyone who unpacks it, and published whole with its checksum."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from nanopedia.commands import bundle
from nanopedia.errors import NanopediaError
from nanopedia.incremental.write import MARKER


def make_site(root: Path, mtime: float = 1_700_000_000) -> Path:
    files = {
        "index.html": b"<h1>home</h1>",
        "entries/b.html": b"b",
        "entries/a.html": b"a",
        "static/deep/x.js": b"x",
        MARKER: b"marker",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (mtime, mtime))
    return root


def test_the_zip_is_byte_for_byte_the_same_whatever_the_files_times(tmp_path: Path) -> None:
    one = make_site(tmp_path / "one", mtime=1_600_000_000)
    two = make_site(tmp_path / "two", mtime=1_800_000_000)
    (two / "index.html").chmod(0o600)
    bundle.write_zip(one, tmp_path / "one.zip", "top", 1_700_000_000)
    bundle.write_zip(two, tmp_path / "two.zip", "top", 1_700_000_000)
    assert (tmp_path / "one.zip").read_bytes() == (tmp_path / "two.zip").read_bytes()
    bundle.write_zip(one, tmp_path / "later.zip", "top", 1_700_000_100)
    assert (tmp_path / "later.zip").read_bytes() != (tmp_path / "one.zip").read_bytes()


def test_members_are_sorted_under_one_top_folder_with_their_folders(tmp_path: Path) -> None:
    bundle.write_zip(make_site(tmp_path / "s"), tmp_path / "b.zip", "top", bundle.DEFAULT_EPOCH)
    with zipfile.ZipFile(tmp_path / "b.zip") as archive:
        assert archive.namelist() == [
            "top/",
            "top/entries/",
            "top/entries/a.html",
            "top/entries/b.html",
            "top/index.html",
            "top/static/",
            "top/static/deep/",
            "top/static/deep/x.js",
        ]
        assert archive.read("top/entries/a.html") == b"a"


def test_every_member_is_readable_by_all_and_dated_from_the_epoch(tmp_path: Path) -> None:
    bundle.write_zip(make_site(tmp_path / "s"), tmp_path / "b.zip", "top", 1_700_000_000)
    with zipfile.ZipFile(tmp_path / "b.zip") as archive:
        for info in archive.infolist():
            mode = info.external_attr >> 16
            assert info.create_system == bundle.UNIX, info.filename
            assert info.date_time == time.gmtime(1_700_000_000)[:6]
            if info.filename.endswith("/"):
                assert mode == stat.S_IFDIR | 0o755 and info.external_attr & 0x10
            else:
                assert mode == stat.S_IFREG | 0o644 and not info.external_attr & 0x10
                assert info.compress_type == zipfile.ZIP_DEFLATED


def test_a_symlink_in_the_site_is_refused(tmp_path: Path) -> None:
    site = make_site(tmp_path / "s")
    (site / "link.html").symlink_to(site / "index.html")
    with pytest.raises(NanopediaError, match="the site contains a symlink: link.html"):
        list(bundle.site_files(site))


EPOCHS = [
    (None, bundle.DEFAULT_EPOCH),
    ("", bundle.DEFAULT_EPOCH),
    ("  ", bundle.DEFAULT_EPOCH),
    ("0", bundle.DEFAULT_EPOCH),  # a zip cannot record a time before 1980
    ("1700000000", 1_700_000_000),
    (" 1700000000 ", 1_700_000_000),
]


@pytest.mark.parametrize(
    "raw, epoch", EPOCHS, ids=["unset", "empty", "blank", "zero", "seconds", "padded"]
)
def test_source_date_epoch_sets_every_time(
    raw: str | None, epoch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if raw is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", raw)
    assert bundle.source_epoch() == epoch


@pytest.mark.parametrize("raw", ["soon", "-5", "1.5"])
def test_a_source_date_epoch_that_is_not_seconds_is_an_error(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", raw)
    with pytest.raises(NanopediaError, match=f"must be whole seconds, not {raw!r}"):
        bundle.source_epoch()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_published_zip_and_its_checksum_are_readable_by_all(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch.zip"
    scratch.write_bytes(b"zip bytes")
    scratch.chmod(0o600)  # as tempfile makes them
    out = bundle._publish(scratch, tmp_path / "out" / "nanopedia.zip")
    checksum = tmp_path / "out" / "nanopedia.zip.sha256"
    assert mode(out.path) == 0o644 and mode(checksum) == 0o644
    digest = hashlib.sha256(b"zip bytes").hexdigest()
    assert (out.sha256, out.size) == (digest, 9)
    assert checksum.read_text() == f"{digest}  nanopedia.zip\n"
    assert not scratch.exists()


def test_a_published_single_file_is_readable_by_all(tmp_path: Path) -> None:
    out = bundle._publish(b"<html>", tmp_path / "nanopedia.html")
    assert mode(out.path) == 0o644 and out.path.read_bytes() == b"<html>"
    assert mode(tmp_path / "nanopedia.html.sha256") == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_checksum_checks_with_sha256sum(tmp_path: Path) -> None:
    bundle._publish(b"data", tmp_path / "n.zip")
    bundle._publish(b"new data", tmp_path / "n.zip")
    run = subprocess.run(
        ["sha256sum", "-c", "n.zip.sha256"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_scratch_folders_of_dead_runs_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folders = {
        "dead": tmp_path / f"{bundle.SCRATCH_PREFIX}{dead}-abc",
        "live": tmp_path / f"{bundle.SCRATCH_PREFIX}{os.getpid()}-abc",
        "odd": tmp_path / f"{bundle.SCRATCH_PREFIX}x1-abc",
    }
    for folder in folders.values():
        (folder / "site").mkdir(parents=True)
    link = tmp_path / f"{bundle.SCRATCH_PREFIX}{dead}-link"
    link.symlink_to(folders["odd"])
    bundle._sweep(tmp_path)
    assert not folders["dead"].exists()
    assert folders["live"].is_dir() and folders["odd"].is_dir() and link.is_symlink()
