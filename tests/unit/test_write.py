"""`nanopedia/incremental/write.py` and `lock.py`: the new site is put in place whole or not at
all, nothing is written outside it, and nothing is left beside it."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from nanopedia.errors import NanopediaError
from nanopedia.incremental.lock import SiteLock, recover, sweep
from nanopedia.incremental.write import MARKER, SiteWriter


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def make_site(out: Path, files: dict[str, bytes]) -> None:
    with SiteWriter(out) as writer:
        for path, data in files.items():
            writer.write(path, data)
        writer.commit()


OLD = {"index.html": b"old index", "entries/a.html": b"old a", "entries/b.html": b"old b"}


def test_a_first_commit_makes_the_site_with_its_marker_and_nothing_beside_it(
    tmp_path: Path,
) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    assert tree(out) == {**OLD, MARKER: b""}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_the_old_site_stays_whole_until_the_commit_swaps_in_the_new_one(tmp_path: Path) -> None:
    out, trash = tmp_path / "site", tmp_path / "trash"
    make_site(out, OLD)
    kept_inode = (out / "entries" / "a.html").stat().st_ino
    with SiteWriter(out) as writer:
        assert writer.keep("entries/a.html")
        writer.write("index.html", b"new index")
        writer.write("entries/c.html", [b"new ", b"c"])  # in parts
        assert tree(out) == {**OLD, MARKER: b""}  # nothing visible before the commit
        writer.commit(trash)
    assert tree(out) == {
        "index.html": b"new index",
        "entries/a.html": b"old a",
        "entries/c.html": b"new c",
        MARKER: b"",
    }
    assert (out / "entries" / "a.html").stat().st_ino == kept_inode  # a link, not a copy
    assert writer.garbage is not None and writer.garbage.parent == trash
    assert tree(writer.garbage) == {**OLD, MARKER: b""}  # the old site, whole, in the trash
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "trash"]


def test_a_build_that_fails_before_its_commit_changes_nothing_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    with pytest.raises(RuntimeError), SiteWriter(out) as writer:
        writer.write("index.html", b"half a new site")
        raise RuntimeError("the build failed")
    assert tree(out) == {**OLD, MARKER: b""}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_failed_final_rename_leaves_no_site_and_nothing_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"

    def refuse(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(NanopediaError) as caught, SiteWriter(out) as writer:
        writer.write("index.html", b"new")
        monkeypatch.setattr(os, "rename", refuse)
        writer.commit()
    monkeypatch.undo()
    [found] = caught.value.problems
    assert (found.code, found.location.path) == ("E041", out.as_posix())
    assert "cannot replace the site" in found.message
    assert list(tmp_path.iterdir()) == []


def exchange(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: int, rename_fails: bool
) -> dict[str, object]:
    """A site replaced where libc's `renameat2` fails with `answer` (as a system without it, or a
    file system that cannot exchange, would), and, with `rename_fails`, where the rename of the
    new folder into place fails too."""
    import ctypes

    out = tmp_path / "site"
    make_site(out, {"index.html": b"old"})

    class Libc:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.renameat2 = lambda *args: -1

    monkeypatch.setattr(ctypes, "CDLL", Libc)
    monkeypatch.setattr(ctypes, "get_errno", lambda: answer)
    real = os.rename

    def rename(src: str, dst: str) -> None:
        if rename_fails and Path(src).name.startswith(".site.new-"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    error = None
    try:
        with SiteWriter(out) as writer:
            writer.write("index.html", b"new")
            writer.commit()
    except NanopediaError as err:
        error = [str(p) for p in err.problems]
    monkeypatch.setattr(os, "rename", real)
    return {
        "error": error,
        "index": (out / "index.html").read_text(),
        "beside": sorted(p.name for p in out.parent.iterdir()),
    }


def test_a_failed_exchange_keeps_the_old_site_and_leaves_nothing_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert exchange(tmp_path, monkeypatch, errno.EIO, rename_fails=False) == {
        "error": [f"{tmp_path / 'site'}: error[E041]: cannot replace the site: Input/output error"],
        "index": "old",
        "beside": ["site"],
    }


@pytest.mark.parametrize("answer", [errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP])
def test_without_an_exchange_a_failed_second_rename_puts_the_old_site_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: int
) -> None:
    assert exchange(tmp_path, monkeypatch, answer, rename_fails=True) == {
        "error": [f"{tmp_path / 'site'}: error[E041]: cannot replace the site: Input/output error"],
        "index": "old",
        "beside": ["site"],
    }


@pytest.mark.parametrize("answer", [errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP])
def test_without_an_exchange_two_renames_put_the_new_site_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: int
) -> None:
    result = exchange(tmp_path, monkeypatch, answer, rename_fails=False)
    assert (result["error"], result["index"]) == (None, "new")


def test_off_linux_the_site_is_replaced_in_two_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    monkeypatch.setattr(sys, "platform", "darwin")
    make_site(out, {"index.html": b"new"})
    assert tree(out) == {"index.html": b"new", MARKER: b""}
    (aside,) = [p for p in tmp_path.iterdir() if p.name != "site"]  # the old site, whole, for
    assert aside.name.startswith(".site.old-") and tree(aside) == {**OLD, MARKER: b""}  # trash


@pytest.mark.parametrize(
    "path",
    [
        "../x.html",
        "entries/../../x.html",
        "/tmp/x.html",
        "./x.html",
        "a//x.html",
        "a/./x.html",
        "",
        "x\0.html",
        "entries/",
    ],
)
def test_a_path_outside_the_site_is_refused(tmp_path: Path, path: str) -> None:
    out = tmp_path / "site"
    with SiteWriter(out) as writer, pytest.raises(NanopediaError) as caught:
        writer.write(path, b"escape")
    [found] = caught.value.problems
    assert found.code == "E041" and "refusing to write outside the site" in found.message
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere, the new folder removed


def test_a_symlink_in_the_site_is_never_written_through(tmp_path: Path) -> None:
    out, outside = tmp_path / "site", tmp_path / "outside"
    outside.mkdir()
    make_site(out, OLD)
    (out / "entries" / "link").symlink_to(outside)
    with SiteWriter(out) as writer:
        assert not writer.keep("entries/link")  # not a regular file: the caller makes it
        writer.write("entries/link/evil.html", b"escape")
        writer.commit()
    assert list(outside.iterdir()) == []
    assert (out / "entries" / "link" / "evil.html").read_bytes() == b"escape"


def test_two_pages_for_one_file_are_refused(tmp_path: Path) -> None:
    with SiteWriter(tmp_path / "site") as writer:
        writer.write("index.html", b"one")
        with pytest.raises(NanopediaError, match="two pages want the same file: index.html"):
            writer.write("index.html", b"two")


def test_keeping_a_file_the_old_site_lacks_says_so(tmp_path: Path) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    with SiteWriter(out) as writer:
        assert not writer.keep("entries/gone.html")
        writer.write("entries/gone.html", b"made instead")  # the caller makes it
        assert writer.files == {"entries/gone.html"}


def test_a_file_that_cannot_be_written_is_named_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "site"

    def parts():  # noqa: ANN202 - a large page, written in parts, that runs out of space
        yield b"first part"
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with SiteWriter(out) as writer, pytest.raises(NanopediaError) as caught:
        writer.write("search/big.js", parts())
    assert [str(p) for p in caught.value.problems] == [
        f"{out.as_posix()}: error[E041]: cannot write search/big.js: No space left on device"
    ]
    assert list(tmp_path.iterdir()) == []  # the new folder removed


def test_a_folder_that_cannot_be_made_is_named_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        writer.write("entries", b"a file where a folder must go")
        with pytest.raises(NanopediaError) as caught:
            writer.write("entries/a.html", b"page")
    assert [str(p) for p in caught.value.problems] == [
        f"{out.as_posix()}: error[E041]: cannot write entries/a.html: File exists"
    ]


def test_where_links_are_refused_a_kept_file_is_copied_with_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    before = os.stat(out / "entries" / "a.html")

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))  # another file system

    monkeypatch.setattr(os, "link", refuse)
    with SiteWriter(out) as writer:
        assert writer.keep("entries/a.html")
        writer.commit()
    after = os.stat(out / "entries" / "a.html")
    assert (out / "entries" / "a.html").read_bytes() == b"old a"
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    assert after.st_ino != before.st_ino  # a copy, not a link


def test_a_kept_file_that_cannot_be_copied_either_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    out = tmp_path / "site"
    make_site(out, OLD)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "link", refuse)
    monkeypatch.setattr(shutil, "copy2", full)
    with SiteWriter(out) as writer, pytest.raises(NanopediaError) as caught:
        writer.keep("entries/a.html")
    assert [str(p) for p in caught.value.problems] == [
        f"{out.as_posix()}: error[E041]: cannot write entries/a.html: No space left on device"
    ]
    assert tree(out) == {**OLD, MARKER: b""}  # the old site as it was


def test_a_folder_that_is_not_a_site_is_never_replaced(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(NanopediaError, match="not a Nanopedia site"):
        SiteWriter(precious)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(NanopediaError, match="not a folder"):
        SiteWriter(a_file)
    assert (precious / "notes.txt").read_text() == "keep me" and a_file.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "precious"]


def test_recover_puts_back_an_old_site_left_between_two_renames(tmp_path: Path) -> None:
    out = tmp_path / "site"
    make_site(out, OLD)
    aside = tmp_path / ".site.old-4242-abcd1234"
    os.rename(out, aside)  # a build died after moving the old site aside
    assert recover(out)
    assert tree(out) == {**OLD, MARKER: b""}
    assert not recover(out)  # the site is there: nothing to do
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_recover_ignores_a_folder_that_is_not_a_site(tmp_path: Path) -> None:
    stranger = tmp_path / ".site.old-4242-abcd1234"
    stranger.mkdir()  # no marker
    assert not recover(tmp_path / "site")
    assert stranger.is_dir() and not (tmp_path / "site").exists()


def test_sweep_takes_what_other_builds_left_and_nothing_else(tmp_path: Path) -> None:
    out, trash = tmp_path / "site", tmp_path / "trash"
    make_site(out, OLD)
    left = [tmp_path / ".site.new-4242-abcd1234", tmp_path / ".site.old-4243-efgh5678"]
    mine = tmp_path / f".site.new-{os.getpid()}-ijkl9012"
    others = [tmp_path / ".other.new-4242-abcd1234", tmp_path / "notes"]
    for folder in [*left, mine, *others]:
        folder.mkdir()
    found = sweep(out, trash)
    assert len(found) == len(left) and all(p.parent == trash for p in found)
    assert not any(p.exists() for p in left)
    assert mine.is_dir() and all(p.is_dir() for p in others) and tree(out) == {**OLD, MARKER: b""}


def test_a_second_lock_on_a_site_waits_says_for_whom_then_gives_up(tmp_path: Path) -> None:
    out = tmp_path / "site"
    heard: list[str] = []
    with SiteLock(out, 5, heard.append):
        with pytest.raises(NanopediaError) as caught, SiteLock(out, 0.05, heard.append):
            pass
    assert heard == [f"waiting for another build of {out.as_posix()}/ (pid {os.getpid()})"]
    [found] = caught.value.problems
    assert found.code == "E041" and f"(pid {os.getpid()})" in found.message
    assert list(tmp_path.iterdir()) == []  # the lock file goes with the lock
    with SiteLock(out, 0, heard.append) as again:  # free again
        assert not again.waited
