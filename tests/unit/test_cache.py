"""`nanopedia/incremental/cache.py`: values come back as they were put, or not at all; damage
is a miss."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanopedia.incremental.cache import (
    KEEP_VERSIONS,
    Cache,
    Damaged,
    decode,
    encode,
    key,
    open_cache,
    stale,
)


def test_a_key_depends_on_every_part_and_on_where_parts_split() -> None:
    assert key(b"a", b"bc") == key(b"a", b"bc")
    assert len({key(b"a", b"bc"), key(b"ab", b"c"), key(b"abc"), key(b"a", b"bd")}) == 4


def test_a_value_put_comes_back_equal(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    value = {"entry": ("a", 1), "html": b"<p>x</p>"}
    assert cache.put("entries", key(b"x"), value)
    assert cache.get("entries", key(b"x")) == value
    assert cache.get("entries", key(b"y")) is None
    assert cache.get("other-kind", key(b"x")) is None
    leftovers = [p.name for p in tmp_path.rglob(".tmp-*")]
    assert leftovers == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-1],  # cut short
        lambda raw: raw[:8] + bytes([raw[8] ^ 1]) + raw[9:],  # one bit of the pickle
        lambda raw: b"XXXX" + raw[4:],  # not our magic
        lambda raw: b"",
    ],
)
def test_a_damaged_file_is_a_miss_and_is_deleted(tmp_path: Path, damage: object) -> None:
    cache = Cache(tmp_path)
    k = key(b"x")
    cache.put("entries", k, ["value"])
    path = cache.path("entries", k)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert cache.get("entries", k) is None
    assert not path.exists()  # computed and written again next time


def test_a_value_of_the_wrong_type_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put("state", key(b"x"), ["not a dict"])
    assert cache.get("state", key(b"x"), dict) is None
    assert not cache.path("state", key(b"x")).exists()


def test_decode_refuses_what_encode_did_not_write() -> None:
    raw = encode((1, "two"))
    assert decode(raw) == (1, "two")
    for bad in (raw[:-1], raw + b"x", b"NPC1"):
        with pytest.raises(Damaged):
            decode(bad)


def test_a_disk_that_refuses_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache's folder should be")
    cache = Cache(blocker)
    assert cache.put("entries", key(b"x"), 1) is False
    assert cache.get("entries", key(b"x")) is None


def test_open_cache_uses_one_folder_per_code_version(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    assert cache.root.parent == tmp_path and len(cache.root.name) == 16
    assert open_cache(tmp_path).root == cache.root


def test_stale_keeps_the_most_recent_versions_and_touches_nothing_else(tmp_path: Path) -> None:
    versions = [tmp_path / f"{n:016x}" for n in range(KEEP_VERSIONS + 2)]
    for used, folder in enumerate(versions):  # the last one the most recently used
        folder.mkdir()
        os.utime(folder, ns=(10**18 + used, 10**18 + used))
    legacy = tmp_path / "state"
    strangers = [tmp_path / "notes", tmp_path / "0123456789ABCDEF"]  # not a version folder
    for folder in [legacy, *strangers]:
        folder.mkdir()
    assert stale(tmp_path) == sorted([legacy, *versions[:2]])
    assert stale(tmp_path / "missing") == []
