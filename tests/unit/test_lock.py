"""One build of a site at a time (`incremental/lock.py`): who holds the lock, how long the next
build waits, and that a lock file the previous holder already removed is never trusted."""

from __future__ import annotations

import fcntl
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from nanopedia.errors import NanopediaError
from nanopedia.incremental import lock
from nanopedia.incremental.lock import LOCK_TIMEOUT, SiteLock, lock_timeout

TIMEOUTS = [
    ({}, LOCK_TIMEOUT),
    ({"NANOPEDIA_LOCK_TIMEOUT": ""}, LOCK_TIMEOUT),
    ({"NANOPEDIA_LOCK_TIMEOUT": " "}, LOCK_TIMEOUT),
    ({"NANOPEDIA_LOCK_TIMEOUT": "0"}, 0.0),
    ({"NANOPEDIA_LOCK_TIMEOUT": " 2.5 "}, 2.5),
]


@pytest.mark.parametrize(
    "environ, seconds", TIMEOUTS, ids=["unset", "empty", "blank", "zero", "padded"]
)
def test_the_wait_is_the_variables_seconds_or_the_default(
    environ: dict[str, str], seconds: float
) -> None:
    assert lock_timeout(environ) == seconds


@pytest.mark.parametrize("raw", ["-1", "inf", "nan", "ten", "1e999"])
def test_a_wait_that_is_not_seconds_is_a_located_error(raw: str) -> None:
    with pytest.raises(NanopediaError) as err:
        lock_timeout({"NANOPEDIA_LOCK_TIMEOUT": raw})
    assert f"NANOPEDIA_LOCK_TIMEOUT must be seconds, not {raw!r}" in str(err.value)
    assert "E050" in str(err.value)


def nothing(message: str) -> None:
    raise AssertionError(f"no wait expected: {message}")


def test_the_holder_writes_its_pid_and_removes_the_file_on_release(tmp_path: Path) -> None:
    site = tmp_path / "out" / "site"
    with SiteLock(site, 0, nothing) as held:
        assert held.path == tmp_path / "out" / ".site.lock"
        assert held.path.read_text() == f"{os.getpid()}\n"
        assert not held.waited
    assert not held.path.exists()


def test_a_second_build_says_whom_it_waits_for_once_then_gives_up(tmp_path: Path) -> None:
    said: list[str] = []
    site = tmp_path / "site"
    with SiteLock(site, 0, nothing):
        second = SiteLock(site, 0.05, said.append)
        with pytest.raises(NanopediaError) as err:
            second.__enter__()
    assert said == [f"waiting for another build of {site.as_posix()}/ (pid {os.getpid()})"]
    assert second.waited
    assert f"another build of this site (pid {os.getpid()}) was still running after 0.05 s" in (
        str(err.value)
    )
    assert "NANOPEDIA_LOCK_TIMEOUT sets how many seconds a build waits" in str(err.value)


def test_a_holder_that_has_not_written_its_pid_is_unknown(tmp_path: Path) -> None:
    site = tmp_path / "site"
    path = tmp_path / ".site.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(NanopediaError, match=r"\(pid unknown\) was still running"):
            SiteLock(site, 0, lambda message: None).__enter__()
    finally:
        os.close(fd)


def test_the_lock_is_free_again_after_release(tmp_path: Path) -> None:
    site = tmp_path / "site"
    with SiteLock(site, 0, nothing):
        pass
    with SiteLock(site, 0, nothing) as again:
        assert again.path.exists()


def test_a_lock_file_unlinked_by_the_previous_holder_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous holder releases (removes the file, then unlocks) between the next build's
    open and its flock: that build then holds a lock on a file nobody else can see, and must
    lock the file at the path instead, or a third build would run beside it."""
    site = tmp_path / "site"
    path = tmp_path / ".site.lock"
    real = fcntl.flock
    calls = []

    def released_meanwhile(fd: int, operation: int) -> Any:
        calls.append(fd)
        if len(calls) == 1:
            os.unlink(path)  # the previous holder's release, after our open
        return real(fd, operation)

    monkeypatch.setattr(lock.fcntl, "flock", released_meanwhile)
    with SiteLock(site, 0, nothing) as held:
        assert len(calls) == 2
        assert held._fd is not None
        assert os.fstat(held._fd).st_ino == os.stat(path).st_ino
        monkeypatch.setattr(lock.fcntl, "flock", real)
        with pytest.raises(NanopediaError, match="was still running"):
            SiteLock(site, 0, lambda message: None).__enter__()


def test_an_output_folder_that_cannot_be_made_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NanopediaError, match="cannot create the output folder"):
        SiteLock(tmp_path / "file" / "site", 0, nothing).__enter__()


def test_a_bad_wait_says_how_to_write_one() -> None:
    with pytest.raises(NanopediaError) as err:
        lock_timeout({"NANOPEDIA_LOCK_TIMEOUT": "soon"})
    [found] = err.value.problems
    assert (found.code, found.hint) == ("E050", "for example 600, or 0 not to wait")
    assert found.message == "NANOPEDIA_LOCK_TIMEOUT must be seconds, not 'soon'"


def test_the_output_folder_and_its_parents_are_made(tmp_path: Path) -> None:
    with SiteLock(tmp_path / "a" / "b" / "site", 0, nothing) as held:
        assert held.path.parent.is_dir()


def test_the_lock_file_is_not_executable(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        with SiteLock(tmp_path / "site", 0, nothing) as held:
            assert stat.S_IMODE(held.path.stat().st_mode) == 0o644
    finally:
        os.umask(umask)


def test_a_second_build_gets_the_lock_when_the_first_releases_it_in_time(tmp_path: Path) -> None:
    site = tmp_path / "site"
    said: list[str] = []
    first = SiteLock(site, 0, nothing).__enter__()
    timer = threading.Timer(0.2, first.__exit__, (None, None, None))
    timer.start()
    try:
        with SiteLock(site, 10, said.append) as second:
            assert second.waited and len(said) == 1
    finally:
        timer.join()


def test_a_lock_that_fails_for_another_reason_raises_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: int, operation: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(lock.fcntl, "flock", broken)
    with pytest.raises(OSError, match="Input/output error"):
        SiteLock(tmp_path / "site", 0, nothing).__enter__()


def test_recover_finds_nothing_where_the_folder_is_missing(tmp_path: Path) -> None:
    assert not lock.recover(tmp_path / "missing" / "site")


def test_sweep_takes_leftovers_from_the_trash_as_they_are(tmp_path: Path) -> None:
    trash = tmp_path / "trash"
    left = trash / "4242-abcd1234"
    left.mkdir(parents=True)
    assert lock.sweep(tmp_path / "missing" / "site", trash) == [left]
    assert left.is_dir()


def test_sweep_never_follows_a_link_named_like_a_leftover(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.mkdir()
    (tmp_path / ".site.new-4242-abcd1234").symlink_to(target, target_is_directory=True)
    assert lock.sweep(tmp_path / "site", tmp_path / "trash") == []
    assert target.is_dir()
