"""`nanopedia/incremental/state.py`: what a build leaves for the next one comes back whole, or
not at all; a
save after an edit rewrites only the part of it that changed."""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path

from nanopedia.incremental.cache import Cache
from nanopedia.incremental.state import (
    BUCKET_MIN,
    VERSION,
    Kept,
    Remembered,
    State,
    hold,
    load,
    save,
)

SITE = "site-key"


def kept(name: str, version: int = 0) -> Kept:
    return Kept(
        f"{name}-key-{version}",
        f"node of {name}",  # type: ignore[arg-type]
        f"card of {name} {version}",
        None,
        (name,),
    )


def state(entries: dict[str, Kept], inputs: str = "inputs") -> State:
    return State(
        version=VERSION,
        inputs=inputs,
        stamps={"a.yaml": (1, 2, 3, b"h")},
        entries=entries,
        pages={"index.html": "k"},
        spans={},
        manifest={},
        folder=(1, 2),
        setting="s",
        tags={},
        also={"a": ("b",)},
    )


def elsewhere(cache: Cache, tmp_path: Path) -> Cache:
    """The same cache files under another path: read from disk, as by a new process."""
    copy = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(cache.root, copy)
    return Cache(copy)


def bucket_files(cache: Cache) -> dict[str, int]:
    """Each file that holds kept entries, with its inode (a rewritten file gets a new one)."""
    return {p.name: p.stat().st_ino for p in (cache.root / "kept").rglob("*") if p.is_file()}


def test_a_saved_state_is_read_back_whole(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    saved = state({"a.yaml": kept("a"), "b.yaml": kept("b")})
    remembered: Remembered = {}
    save(cache, SITE, saved, None, remembered=remembered)
    assert load(cache, SITE, remembered) == (saved, True)  # this context saved it: not read back
    found, ours = load(elsewhere(cache, tmp_path), SITE)
    assert not ours and found is not None
    assert dataclasses.replace(found, buckets=[]) == dataclasses.replace(saved, buckets=[])


def test_no_state_another_version_or_a_damaged_part_is_no_state(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    assert load(cache, SITE) == (None, False)
    save(cache, SITE, state({"a.yaml": kept("a")}), None)
    damaged = elsewhere(cache, tmp_path)
    for path in (damaged.root / "kept").rglob("*"):
        if path.is_file():
            path.write_bytes(b"damage")
    assert load(damaged, SITE) == (None, False)  # without its entries: a full build
    old = Cache(tmp_path / "old")
    save(old, SITE, dataclasses.replace(state({}), version=VERSION - 1), None)
    assert load(elsewhere(old, tmp_path), SITE) == (None, False)


def test_saving_after_an_edit_rewrites_only_the_changed_bucket(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    names = [f"e{n:04d}.yaml" for n in range(BUCKET_MIN * 4)]
    before = state({n: kept(n) for n in names})
    save(cache, SITE, before, None)
    first = bucket_files(cache)
    assert len(first) == len(before.buckets) > 1  # a large corpus is kept in several files
    edited = {**before.entries, names[7]: kept(names[7], version=1)}
    after = state(edited, inputs="edited")
    save(cache, SITE, after, before)
    second = bucket_files(cache)
    assert len(second) == len(first)  # the replaced bucket is deleted
    assert len(set(first.items()) - set(second.items())) == 1  # one file written again
    found, _ = load(elsewhere(cache, tmp_path), SITE)
    assert found is not None and found.entries == edited and found.inputs == "edited"


def test_saving_an_unchanged_state_writes_no_bucket(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    entries = {f"e{n}.yaml": kept(f"e{n}") for n in range(10)}
    before = state(entries)
    save(cache, SITE, before, None)
    first = bucket_files(cache)
    again = state(dict(entries))
    save(cache, SITE, again, before)
    assert bucket_files(cache) == first and again.buckets == before.buckets


def test_reading_waits_while_a_save_holds_the_state(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    save(cache, SITE, state({"a.yaml": kept("a")}), None)
    other = elsewhere(cache, tmp_path)  # read from disk, as by another process
    held = hold(other, SITE)
    assert held is not None
    done = threading.Event()
    found: list[State | None] = []
    reader = threading.Thread(target=lambda: (found.append(load(other, SITE)[0]), done.set()))
    try:
        reader.start()
        assert not done.wait(0.2)  # not while the state may be half written
    finally:
        os.close(held)
    assert done.wait(10) and found[0] is not None
    reader.join()
