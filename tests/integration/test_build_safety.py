"""Builds that overlap, die or find a damaged cache: the site folder is only ever the complete old
site or the complete new one, nothing is left beside it, and nothing in the cache is trusted.

The faults are made from outside the generator: a small runner (`RUNNER`) starts the console's
`main` under an audit hook that counts every call that changes the disk (a file opened for
writing, a rename, a link, a removal, a foreign call such as `renameat2`) and, at the one it is
told, kills its own process with SIGKILL or pauses until the test lets it go on. The site folder
changes only through renames, so killing before each of them covers every state a build can
leave it in.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.commands import bundle
from nanopedia.errors import NanopediaError
from nanopedia.incremental import background, per_entry, pipeline
from nanopedia.incremental.cache import CACHE_DIR, Cache, open_cache
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.incremental.write import MARKER

RUNNER = r'''
import os, signal, sys, threading, time

kill_at = int(os.environ.get("KILL_AT", "0"))
pause_at = int(os.environ.get("PAUSE_AT", "0"))
log = os.open(os.environ["EVENTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT) \
    if os.environ.get("EVENTS") else None
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
EVENTS = {"os.rename", "os.link", "os.symlink", "os.remove", "os.rmdir", "os.mkdir",
          "os.truncate", "os.chmod", "shutil.rmtree", "ctypes.call_function"}
seen = 0
first = os.getpid()  # not the process that lists the site while this one imports
local = threading.local()  # set while the hook itself writes, in that thread only


def where(args):
    """'site' when a path argument is outside the cache (or there is none), else 'cache'; and
    the path arguments."""
    paths = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, os.PathLike))]
    side = "cache" if paths and all(".nanopedia-cache" in p for p in paths) else "site"
    return side, " ".join(paths).replace("\t", " ").replace("\n", " ")


def hook(event, args):
    global seen
    if getattr(local, "busy", False) or os.getpid() != first:
        return
    if event == "open":
        if not isinstance(args[2], int) or not args[2] & WRITES:
            return
    elif event not in EVENTS:
        return
    local.busy = True
    seen += 1
    if log is not None:
        side, paths = where(args)
        os.write(log, f"{seen}\t{event}\t{side}\t{paths}\n".encode())
    if seen == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    if seen == pause_at:
        open(os.environ["PAUSED"], "w").close()
        while not os.path.exists(os.environ["RELEASE"]):
            time.sleep(0.01)
    local.busy = False


sys.addaudithook(hook)
if os.environ.get("FALLBACK"):  # as on a system without renameat2
    import nanopedia.incremental.write as write
    write._exchange = lambda a, b: False
from nanopedia.incremental import background, per_entry
from nanopedia.cli import main

code = main(sys.argv[1:])
background.finish()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
'''

TAGS = (FIXTURES / "corpus" / "tags.yaml").read_text()
ENTRIES = 16
BESIDE = [CACHE_DIR, "entries", "site"]
"""All that a working folder holds after builds: the cache, the entries and the site."""


def entry(n: int, title: str) -> str:
    """A small valid entry; every entry is related to the first, so its title is on every page."""
    ident = f"failure-{n:02d}"
    related = "related: [failure-00]\n" if n else ""
    return (
        f"id: {ident}\ntitle: {title}\nsummary: The summary of entry {n}.\n"
        f"category: distributed\ntags: [{('nccl', 'bf16', 'fsdp')[n % 3]}]\n"
        f"root_causes:\n  - id: a\n    title: Cause a\n    domain: workload\n"
        f"    action: fix-code\n    explanation: Why a.\n"
        f"symptoms:\n  - text: Symptom of {n}.\n    cause: a\n"
        f"mechanism: No links.\naffected_systems:\n  - name: PyTorch\n"
        f"confirm:\n  - Check it.\nfix:\n  - title: Fix it\n    detail: Do it.\n"
        f"prevention:\n  - Test it.\nreferences:\n  - title: Docs\n"
        f"    url: https://docs.pytorch.org/\n    kind: docs\n{related}"
    )


def write_entries(folder: Path, version: int) -> None:
    """The corpus as of `version`: version 2 retitles the first entry (so every entry page, the
    joined files and the home page change) and edits three others."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tags.yaml").write_text(TAGS)
    for n in range(ENTRIES):
        title = f"Failure {n}" + (" (revised)" if version == 2 and n in (0, 3, 7, 11) else "")
        (folder / f"failure-{n:02d}.yaml").write_text(entry(n, title))


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def trash(world: Path) -> list[str]:
    folder = world / CACHE_DIR / pipeline.TRASH
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


class World:
    """A working folder (entries, cache, site) that can be put back as it was after the first
    build, at the same path: the build state is kept under the site's path."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp / "world"
        self.saved = tmp / "saved"
        self.runner = tmp / "runner.py"
        self.runner.write_text(RUNNER)
        write_entries(self.root / "entries", 1)
        monkeypatch.chdir(self.root)  # relative paths, as the command uses them
        self.build()
        self.old = tree(self.root / "site")
        shutil.copytree(self.root, self.saved, symlinks=True)
        write_entries(self.root / "entries", 2)
        self.build()
        self.new = tree(self.root / "site")
        assert self.new != self.old
        self.reset()

    def build(self) -> pipeline.Report:
        """A build in this process, as the command would run it here."""
        report = build(Request(Path("entries"), Path("site")))
        background.finish()
        return report

    def reset(self) -> None:
        """Back to the site, cache and state of the first build, with the second's entries."""
        for item in self.root.iterdir():  # the folder itself stays: it is this process's cwd
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
        shutil.copytree(self.saved, self.root, symlinks=True, dirs_exist_ok=True)
        write_entries(self.root / "entries", 2)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(self.runner), *args]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """The command under the runner; `env` sets KILL_AT, EVENTS, FALLBACK..."""
        return subprocess.run(
            self.command(*args),
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, **env, "PYTHONDONTWRITEBYTECODE": "1"},
            timeout=120,
        )

    def beside(self) -> list[str]:
        return sorted(os.listdir(self.root))


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.delenv("NANOPEDIA_LOCK_TIMEOUT", raising=False)
    return World(tmp_path, monkeypatch)


def _events(path: Path) -> list[tuple[int, str, str, str]]:
    """(number, audit event, 'site' or 'cache', paths) of each change the runner counted."""
    rows = []
    for line in path.read_text().splitlines():
        n, event, side, paths = line.split("\t")
        rows.append((int(n), event, side, paths))
    return rows


def _spread(items: list[int], count: int) -> list[int]:
    """Up to `count` of `items`, evenly spaced, the first and last included."""
    if len(items) <= count:
        return items
    return sorted({items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)})


def _kill_points(events: list[tuple[int, str, str, str]], commit_only: bool) -> list[int]:
    """Where to kill a build: before and after each rename that puts a site in place or aside
    (some of them, if many), and before and after the step that follows the site's marker, its
    last file (the exchange is a foreign call, which raises no audit event); unless
    `commit_only`, also while the pages are written, and before the state is saved."""
    renames = [
        n
        for n, event, side, paths in events
        if event == "os.rename" and side == "site" and "trash" not in paths
    ]
    marker = [n for n, event, _, paths in events if event == "open" and MARKER in paths]
    states = [n for n, event, _, paths in events if event == "os.rename" and "/state/" in paths]
    assert (renames or marker) and states, events
    points = {n + d for n in _spread(renames, 4) for d in (0, 1)}
    if marker and not commit_only:
        points.update(marker[0] + d for d in (1, 2))
    if not commit_only:
        points.update((min(renames + marker) // 2, states[-1]))
    return sorted(points)


@pytest.mark.parametrize("how", ["exchange", "renames"])
def test_a_kill_at_any_moment_leaves_the_old_site_or_the_new_one(world: World, how: str) -> None:
    """SIGKILL before each change to the disk around the final step of an incremental build:
    the site is the first build's or the second's, byte for byte, and the next build completes
    it and leaves nothing beside it. `renames`: a system without `renameat2`, where the old site
    is renamed aside first; a kill between the two renames leaves no site folder, which the
    next build puts back from the old one before it looks."""
    env = {"FALLBACK": "1"} if how == "renames" else {}
    log = world.root.parent / "events.tsv"
    counted = world.run("build", EVENTS=str(log), **env)
    assert counted.returncode == 0, counted.stderr
    assert tree(world.root / "site") == world.new
    events = _events(log)
    for at in _kill_points(events, commit_only=how == "renames"):
        world.reset()
        killed = world.run("build", KILL_AT=str(at), **env)
        what = f"killed before change {at} of {len(events)} ({events[at - 1][1]})"
        assert killed.returncode == -signal.SIGKILL, (what, killed.stderr)
        site = world.root / "site"
        if site.exists():
            left = tree(site)
            assert left in (world.old, world.new), (
                f"{what}: {sum(left.get(p) == b for p, b in world.new.items())} files of the "
                f"new site, {sum(left.get(p) == b for p, b in world.old.items())} of the old"
            )
        else:
            assert how == "renames", f"{what}: no site folder"
        world.build()
        assert tree(site) == world.new, what
        assert world.beside() == BESIDE, what
        assert trash(world.root) == [], what
    world.reset()
    (world.root / "site").rename(world.root / ".site.old-1-abcdefgh")  # as a kill between renames
    report = world.build()
    assert report.rendered < report.pages  # the old site was put back and updated, not rebuilt
    assert tree(world.root / "site") == world.new and world.beside() == BESIDE


def _lines(stream: object) -> tuple[queue.Queue[str], threading.Thread]:
    """The lines of a stream as they come, read by a thread (join it before closing it)."""
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return found, reader


def _wait_for(path: Path, what: str) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _paused(world: World, name: str) -> tuple[subprocess.Popen[str], Path]:
    """A build under the runner, paused at its first hard link (the new site is being made,
    the lock held), and the file that lets it go on."""
    events = world.root.parent / f"{name}.tsv"
    counted = world.run("build", EVENTS=str(events))
    assert counted.returncode == 0, counted.stderr
    first_link = next(n for n, event, *_ in _events(events) if event == "os.link")
    world.reset()
    paused, release = world.root.parent / f"{name}.paused", world.root.parent / f"{name}.go"
    proc = subprocess.Popen(
        world.command("build"),
        cwd=world.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PAUSE_AT": str(first_link),
            "PAUSED": str(paused),
            "RELEASE": str(release),
        },
    )
    _wait_for(paused, "the first build never reached its first link")
    return proc, release


def test_a_second_build_of_a_site_waits_for_the_first_and_says_for_whom(world: World) -> None:
    first, release = _paused(world, "first")
    with subprocess.Popen(
        [sys.executable, "-m", "nanopedia", "build"],
        cwd=world.root,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as second:
        said, reader = _lines(second.stderr)
        try:
            line = said.get(timeout=60)
            assert line == f"nanopedia: waiting for another build of site/ (pid {first.pid})\n"
            time.sleep(0.3)
            assert second.poll() is None  # still waiting
        finally:
            release.touch()
            assert first.wait(60) == 0
            assert second.wait(60) == 0
            reader.join(10)
    assert list(said.queue) == ["site/ is up to date\n"]  # the first one's site, complete
    assert tree(world.root / "site") == world.new
    assert world.beside() == BESIDE


def test_a_build_that_waits_too_long_fails_and_a_killed_one_is_cleaned_up(world: World) -> None:
    first, _ = _paused(world, "first")
    try:
        second = subprocess.run(
            [sys.executable, "-m", "nanopedia", "build"],
            cwd=world.root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NANOPEDIA_LOCK_TIMEOUT": "0.5"},
        )
    finally:
        first.kill()  # with its new site half made beside the old one
        first.wait(60)
    assert second.returncode == 1
    assert second.stdout.startswith(
        f"site: error[E041]: another build of this site (pid {first.pid}) was still "
        "running after 0.5 s\n"
    ), second.stdout
    assert second.stderr.endswith("site/ was not changed\n"), second.stderr
    assert tree(world.root / "site") == world.old
    assert any(name.startswith(".site.new-") for name in world.beside())
    world.build()  # the lock died with its holder: no waiting, and its leftovers are removed
    assert tree(world.root / "site") == world.new
    assert world.beside() == BESIDE and trash(world.root) == []


def test_up_to_date_is_never_said_of_a_site_another_process_replaced(world: World) -> None:
    """`serve` does not stat the site between its own builds; a site put in place by another
    process whose state was never saved (killed after its commit), or by hand, is not the one
    the state recorded, so it is checked and repaired."""
    site = world.root / "site"
    world.build()  # saved by this process: the next one trusts the site as it left it
    assert build(Request(Path("entries"), Path("site"), changed=[])).up_to_date  # as serve asks
    background.finish()
    replaced = world.root / "replaced"
    shutil.copytree(site, replaced)
    (replaced / "entries.json").write_bytes(b'{"entries": [')
    shutil.rmtree(site)
    replaced.rename(site)
    report = build(Request(Path("entries"), Path("site"), changed=[]))
    background.finish()
    assert not report.up_to_date
    assert tree(site) == world.new


def test_normal_builds_leave_nothing_beside_the_site(world: World) -> None:
    """Right after each command returns (its last jobs run in a process of its own), the old
    site is out of the working folder, and so is the lock."""
    shutil.rmtree(world.root / "site")
    command = [sys.executable, "-m", "nanopedia", "build"]
    for version in (1, 2):
        write_entries(world.root / "entries", version)
        done = subprocess.run(command, cwd=world.root, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "built " in done.stderr, done.stderr
        assert world.beside() == BESIDE
    assert tree(world.root / "site") == world.new


_write_entry_page = per_entry.write_entry_page


def failing_page(
    context: object, writer: object, config: object, theme: Path, task: per_entry.PageTask
) -> str:
    """`write_entry_page`, failing for one entry (after the others had a moment to write)."""
    if task.path.endswith("failure-05.yaml"):
        time.sleep(0.2)
        raise NanopediaError([])
    return _write_entry_page(context, writer, config, theme, task)  # type: ignore[arg-type]


def test_a_worker_error_stops_the_workers_before_removing_the_new_site(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers still writing pages into the new site's folder while it is removed leave it
    behind (they create the folders they write to); they are stopped first."""
    real_rmtree = shutil.rmtree
    alive_at_removal: list[int] = []

    def removing(path: object, *args: object, **kwargs: object) -> None:
        if ".site.new-" in str(path):
            alive_at_removal.append(len(multiprocessing.active_children()))
        real_rmtree(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(per_entry, "write_entry_page", failing_page)
    monkeypatch.setattr(shutil, "rmtree", removing)
    shutil.rmtree(world.root / "site")
    with pytest.raises(NanopediaError):
        build(Request(Path("entries"), Path("site"), jobs=2, parallel_min=0))
    background.finish()
    assert alive_at_removal == [0]
    assert world.beside() == [CACHE_DIR, "entries"]
    monkeypatch.setattr(per_entry, "write_entry_page", _write_entry_page)
    world.build()
    assert tree(world.root / "site") == world.new


def _damage(root: Path) -> Iterator[Path]:
    """Every value file of a cache, overwritten with bytes that are not what was written: random
    ones (some of which the unpickler meets with a ValueError), a prefix of the file, nothing."""
    rng = random.Random(5)
    for n, path in enumerate(
        sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".lock")
    ):
        data = path.read_bytes()
        path.write_bytes(
            [bytes(rng.randrange(256) for _ in range(64)), data[: len(data) // 2], b""][n % 3]
        )
        yield path


def test_a_damaged_cache_is_rebuilt_never_trusted(world: World) -> None:
    site, cache = world.root / "site", world.root / CACHE_DIR
    world.build()
    kinds = {p.relative_to(open_cache(cache).root).parts[0] for p in _damage(cache)}
    assert {"entries", "kept", "state", "templates"} <= kinds
    write_entries(world.root / "entries", 1)
    world.build()
    assert tree(site) == world.old
    assert world.build().up_to_date  # the state was written anew
    # Values of the wrong type under the right names: a miss each, not a traceback.
    values = Cache(open_cache(cache).root)
    for path in sorted(p for p in values.root.rglob("*") if p.is_file() and p.suffix != ".lock"):
        kind = path.relative_to(values.root).parts[0]
        if kind != "templates":
            values.put(kind, path.name, {"entries": 5, "kept": [1], "state": "x"}.get(kind, 3))
    write_entries(world.root / "entries", 2)
    world.build()
    assert tree(site) == world.new
    assert world.build().up_to_date


def test_random_bytes_are_a_miss(tmp_path: Path) -> None:
    values = Cache(tmp_path)
    assert values.put("entries", "ab12", ("value", 1))
    assert values.get("entries", "ab12") == ("value", 1)
    assert values.get("entries", "ab12", dict) is None  # not of the type asked for: deleted
    assert not values.path("entries", "ab12").exists()
    rng = random.Random(5)
    for _ in range(200):
        values.path("entries", "ab12").write_bytes(bytes(rng.randrange(256) for _ in range(64)))
        assert values.get("entries", "ab12") is None
    values.path("entries", "ab12").write_bytes(pickle.dumps(("value", 1)))  # no checksum
    assert values.get("entries", "ab12") is None


def test_bundles_leave_no_state_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle builds into a temporary folder: its entries are cached as any build's, but no
    state is kept for a folder that is gone, nor compiled templates of a theme copied for one
    bundle."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    bundle.zip_bundle(FIXTURES / "corpus", tmp_path / "dist")
    background.finish()
    values = open_cache(tmp_path / CACHE_DIR).root
    assert not any(p.is_file() for p in (values / "state").rglob("*"))
    assert not (values / "kept").exists()
    compiled = sorted(p.name for p in (values / "templates").iterdir())
    assert compiled
    bundle.single_file(FIXTURES / "corpus", tmp_path / "dist")
    background.finish()
    assert sorted(p.name for p in (values / "templates").iterdir()) == compiled
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == sorted(
        [
            f"nanopedia-{bundle.__version__}.zip",
            f"nanopedia-{bundle.__version__}.zip.sha256",
            f"nanopedia-{bundle.__version__}.html",
            f"nanopedia-{bundle.__version__}.html.sha256",
        ]
    )
    assert sorted(os.listdir(tmp_path)) == [CACHE_DIR, "dist"]


def test_the_lock_timeout_must_be_seconds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NANOPEDIA_LOCK_TIMEOUT", "soon")
    with pytest.raises(NanopediaError) as caught:
        build(Request(FIXTURES / "corpus", tmp_path / "site", use_cache=False))
    assert str(caught.value) == (
        "NANOPEDIA_LOCK_TIMEOUT: error[E050]: NANOPEDIA_LOCK_TIMEOUT "
        "must be seconds, not 'soon'\n    hint: for example 600, or 0 "
        "not to wait"
    )
    assert not (tmp_path / "site").exists()
