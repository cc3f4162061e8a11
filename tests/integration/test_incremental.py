"""Rebuilds that reuse the last build: after every kind of change, the site updated in place is
byte for byte the site a cold build makes, and only what the change affects is rendered again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from gitscript import Repo

from nanopedia.content.corpus import entry_files
from nanopedia.errors import NanopediaError
from nanopedia.incremental import background, gitdates, stamps
from nanopedia.incremental import state as build_state
from nanopedia.incremental.cache import open_cache
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import Report, build
from nanopedia.incremental.write import MARKER
from nanopedia.model import Dates
from nanopedia.site import highlight
from nanopedia.theme_dir import THEME

SOURCE = ROOT / "entries"
SMALL = FIXTURES / "corpus"
"""Two entries: for tests of the build's machinery (its cache, state, git dates, the files it is
told changed, clean-up), not of what entries hold."""
ENTRY = "nccl-watchdog-timeout"
"""An entry three others link to."""


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def inodes(root: Path) -> dict[str, int]:
    """Each file of a site with its inode: a file kept from the last build keeps it."""
    return {p.relative_to(root).as_posix(): p.stat().st_ino for p in root.rglob("*") if p.is_file()}


class Corpus:
    """A copy of the repository's entries, rebuilt warm after each change and checked against a
    cold build of the same files."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.entries = tmp / "entries"
        shutil.copytree(SOURCE, self.entries)
        self.site = tmp / "site"
        self.dates: dict[str, Dates] = {}
        self.builds = 0

    def warm(self) -> Report:
        return build(
            Request(
                self.entries,
                self.site,
                None,
                cache_root=self.tmp / "cache",
                jobs=1,
                dates=self.dates,
            )
        )

    def check(self) -> Report:
        """A warm rebuild, which must equal a cold build."""
        report = self.warm()
        self.builds += 1
        cold = self.tmp / f"cold-{self.builds}"
        build(Request(self.entries, cold, None, use_cache=False, jobs=1, dates=self.dates))
        assert tree(self.site) == tree(cold)
        return report

    def edit(self, name: str, change: Callable[[str], str]) -> None:
        path = self.entries / f"{name}.yaml"
        text = path.read_text()
        assert change(text) != text
        path.write_text(change(text))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    c = Corpus(tmp_path_factory.mktemp("incremental"))
    c.warm()
    return c


def test_nothing_changed(corpus: Corpus) -> None:
    assert corpus.warm().up_to_date


def test_an_edit_renders_the_entry_page_and_the_files_that_show_it(corpus: Corpus) -> None:
    before = inodes(corpus.site)
    corpus.edit(ENTRY, lambda t: t.replace("\nconfirm:\n", "\nconfirm:\n  - Edited.\n", 1))
    report = corpus.check()
    after = inodes(corpus.site)
    assert report.reused == report.entries - 1
    # its page and entries.json: no other file shows `confirm`; the rest are kept (links)
    written = {path for path, inode in after.items() if before.get(path) != inode} - {MARKER}
    assert written == {f"entries/{ENTRY}.html", "entries.json"}, written
    assert report.rendered == len(written)


def test_a_new_title_reaches_every_page_that_names_it(corpus: Corpus) -> None:
    corpus.edit(
        ENTRY,
        lambda t: t.replace(
            "title: 'NCCL watchdog timeout:", "title: 'NCCL watchdog timed out:", 1
        ),
    )
    report = corpus.check()
    assert (
        b"NCCL watchdog timed out"
        in (corpus.site / "entries" / "megatron-nan-grad-norm.html").read_bytes()
    )
    assert report.rendered < report.pages / 2


def test_tags_added_and_removed(corpus: Corpus) -> None:
    corpus.edit(ENTRY, lambda t: t.replace("tags:\n", "tags:\n  - bf16\n", 1))
    corpus.check()


def test_an_entry_added_renamed_and_removed(corpus: Corpus) -> None:
    text = (corpus.entries / f"{ENTRY}.yaml").read_text()
    new = corpus.entries / "copied-entry.yaml"
    new.write_text(
        text.replace(f"id: {ENTRY}", "id: copied-entry", 1).replace(
            "title: 'NCCL", "title: 'Copied NCCL", 1
        )
    )
    corpus.check()
    renamed = corpus.entries / "renamed-entry.yaml"
    new.rename(renamed)
    renamed.write_text(
        renamed.read_text().replace(
            "id: copied-entry", "id: renamed-entry\naliases:\n  - copied-entry", 1
        )
    )
    corpus.check()
    assert b"renamed-entry.html" in (corpus.site / "entries" / "copied-entry.html").read_bytes()
    renamed.unlink()
    corpus.check()
    assert not (corpus.site / "entries" / "copied-entry.html").exists()


def test_new_dates(corpus: Corpus) -> None:
    day = datetime(2025, 5, 1, tzinfo=UTC)
    corpus.dates[ENTRY] = Dates(day, day)
    corpus.check()


def test_a_hand_edited_site_is_repaired(corpus: Corpus) -> None:
    (corpus.site / "entries.json").write_bytes(b"{}")
    shard = corpus.site / "search" / "text-0.js"
    shard.write_bytes(shard.read_bytes()[::-1])
    (corpus.site / "entries" / "gradscaler-misuse.html").write_text("edited by hand")
    (corpus.site / "stray.html").write_text("not ours")
    corpus.edit(ENTRY, lambda t: t.replace("\nconfirm:\n", "\nconfirm:\n  - Again.\n", 1))
    corpus.check()


def test_a_broken_edit_leaves_the_site_alone(corpus: Corpus) -> None:
    before = tree(corpus.site)
    first = re.search(
        r"^related:\n  - ([\w-]+)\n", (corpus.entries / f"{ENTRY}.yaml").read_text(), re.M
    )
    assert first is not None  # a related list a link can be broken in, whatever its length
    corpus.edit(ENTRY, lambda t: t.replace(first.group(0), "related:\n  - no-such-entry\n", 1))
    with pytest.raises(NanopediaError) as caught:
        corpus.warm()
    assert [p.code for p in caught.value.problems] == ["E021"]
    assert tree(corpus.site) == before
    corpus.edit(ENTRY, lambda t: t.replace("related:\n  - no-such-entry\n", first.group(0), 1))
    corpus.check()


def _small(tmp_path: Path) -> tuple[Path, Callable[[], Report]]:
    """The two-entry corpus copied, and a warm build of it."""
    entries = tmp_path / "entries"
    shutil.copytree(SMALL, entries)
    return entries, lambda: build(
        Request(entries, tmp_path / "site", None, cache_root=tmp_path / "cache", jobs=1, dates={})
    )


def test_an_entry_added_first_in_order_loads_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nanopedia.incremental import per_entry

    entries, warm = _small(tmp_path)
    warm()
    text = (entries / "beta-failure.yaml").read_text()
    (entries / "aaa-failure.yaml").write_text(text.replace("id: beta-failure", "id: aaa-failure"))
    loaded = []
    real = per_entry.load_one
    monkeypatch.setattr(
        per_entry, "load_one", lambda context, job: loaded.append(job[0].name) or real(context, job)
    )
    report = warm()
    assert loaded == ["aaa-failure.yaml"]  # the entries after it in order are kept, not loaded
    assert (report.entries, report.reused) == (3, 2)


def test_a_link_to_an_entry_that_does_not_load_is_not_reported_beside_its_error(
    tmp_path: Path,
) -> None:
    entries, warm = _small(tmp_path)
    warm()
    beta = entries / "beta-failure.yaml"
    beta.write_text(beta.read_text().replace("title: Beta failure", "title: [Beta failure"))
    with pytest.raises(NanopediaError) as caught:  # alpha lists beta as related, and links it
        warm()
    assert [(p.location.path, p.code) for p in caught.value.problems] == [
        (f"{entries.as_posix()}/beta-failure.yaml", "E002")
    ]


def test_a_build_waiting_for_another_says_so_at_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from nanopedia.incremental.lock import TIMEOUT_VARIABLE, SiteLock

    _, warm = _small(tmp_path)
    monkeypatch.setenv(TIMEOUT_VARIABLE, "0.05")
    with SiteLock(tmp_path / "site", 5, lambda message: None), pytest.raises(NanopediaError):
        warm()  # the other build holds the site past the timeout
    assert capfd.readouterr().err == (
        f"nanopedia: waiting for another build of {(tmp_path / 'site').as_posix()}/ "
        f"(pid {os.getpid()})\n"
    )


def test_a_yml_file_among_the_entries_is_warned_of_at_each_build_up_to_date_or_not(
    tmp_path: Path,
) -> None:
    entries, warm = _small(tmp_path)
    (entries / "gamma-failure.yml").write_text("id: gamma-failure\n")
    for _ in range(2):  # the first build and a warm one alike
        [warning] = warm().warnings
        assert warning.code == "E007" and warning.severity == "warning"
        assert warning.location.path.endswith("entries/gamma-failure.yml")
        assert warning.hint == "rename it to 'gamma-failure.yaml'"
    (entries / "delta.yml").write_text("id: delta\n")  # no input: the site stays up to date
    report = warm()
    assert report.up_to_date
    assert [w.location.path.rsplit("/", 1)[1] for w in report.warnings] == [
        "delta.yml",
        "gamma-failure.yml",
    ]


def _entry(
    ident: str, title: str, tags: list[str], causes: list[str], related: list[str], link: str | None
) -> str:
    """A small valid entry; `link` becomes an in-text `entry:` link in the mechanism."""
    cause_items = "".join(
        f"  - id: {c}\n    title: Cause {c}\n    domain: workload\n"
        f"    action: fix-code\n    explanation: Why {c}.\n"
        for c in causes
    )
    mechanism = f"See [the other one](entry:{link})." if link else "No links."
    return (
        f"id: {ident}\ntitle: {title}\nsummary: The summary of entry {ident}.\n"
        f"category: distributed\ntags: [{', '.join(tags)}]\nroot_causes:\n{cause_items}"
        f"symptoms:\n  - text: Symptom of {ident}.\n    cause: {causes[0]}\n"
        f"mechanism: {mechanism}\naffected_systems:\n  - name: PyTorch\n"
        f"confirm:\n  - Check it.\nfix:\n  - title: Fix it\n    detail: Do it.\n"
        f"prevention:\n  - Test it.\nreferences:\n  - title: Docs\n"
        f"    url: https://docs.pytorch.org/\n    kind: docs\n"
        + (f"related: [{', '.join(related)}]\n" if related else "")
    )


def test_random_changes_rebuild_like_a_cold_build(tmp_path: Path) -> None:
    """Forty random changes to titles, tags, causes, links, entries added and removed; after
    each, the site updated in place is the cold build's. This is what proves that only the
    entries `pages.affected` names needed their suggestions, back links and titles again."""
    import random

    rng = random.Random(20261130)
    entries = tmp_path / "entries"
    entries.mkdir()
    shutil.copy(SMALL / "tags.yaml", entries)
    corpus: dict[str, dict] = {}

    def write() -> None:
        for path in entries.glob("e*.yaml"):
            path.unlink()
        for ident, e in corpus.items():
            related = [r for r in e["related"] if r in corpus and r != ident]
            link = e["link"] if e["link"] in corpus and e["link"] != ident else None
            (entries / f"{ident}.yaml").write_text(
                _entry(ident, e["title"], e["tags"], e["causes"], related, link)
            )

    def new(n: int) -> dict:
        return {
            "title": f"Entry {n}",
            "tags": rng.sample(["bf16", "fsdp", "nccl"], rng.randint(1, 3)),
            "causes": rng.sample(["a", "b", "c", "d"], rng.randint(1, 2)),
            "related": [],
            "link": None,
        }

    corpus["e00"] = {**new(0), "tags": ["bf16", "fsdp", "nccl"]}
    for n in range(1, 8):
        corpus[f"e{n:02d}"] = new(n)
    count = 8
    write()
    site, cache = tmp_path / "site", tmp_path / "cache"
    for step in range(40):
        ident = rng.choice(sorted(corpus))
        e = corpus[ident]
        action = rng.choice(["title", "tags", "causes", "related", "link", "add", "remove"])
        if action == "title":
            e["title"] = f"Entry {ident} retitled {step}"
        elif action == "tags" and ident != "e00":
            e["tags"] = rng.sample(["bf16", "fsdp", "nccl"], rng.randint(1, 3))
        elif action == "causes":
            e["causes"] = rng.sample(["a", "b", "c", "d"], rng.randint(1, 2))
        elif action == "related":
            e["related"] = rng.sample(sorted(corpus), rng.randint(0, 3))
        elif action == "link":
            e["link"] = rng.choice(sorted(corpus))
        elif action == "add":
            corpus[f"e{count:02d}"] = new(count)
            count += 1
        elif action == "remove" and ident != "e00":
            del corpus[ident]
        write()
        build(Request(entries, site, None, cache_root=cache, jobs=1, dates={}))
        build(Request(entries, tmp_path / "cold", None, use_cache=False, jobs=1, dates={}))
        assert tree(site) == tree(tmp_path / "cold"), f"step {step}: {action} {ident}"


def test_each_input_of_each_page_kind_rebuilds_like_a_cold_build(tmp_path: Path) -> None:
    """The changes `tests/unit/test_plan.py` proves reach each page's key, made one after another
    to a warm site (tag title and description, entry title, summary, category, tags, alias, an
    entry added, new dates, the site's settings): after each, the site is the cold build's."""
    entries, site, cache = tmp_path / "entries", tmp_path / "site", tmp_path / "cache"
    shutil.copytree(SMALL, entries)
    day = datetime(2026, 1, 5, tzinfo=UTC)
    dates = {"alpha-failure": Dates(day, day), "beta-failure": Dates(day, day)}

    def edit(name: str, old: str, new: str) -> Callable[[], None]:
        path = entries / name
        return lambda: path.write_text(path.read_text().replace(old, new, 1))

    def redate() -> None:
        dates["beta-failure"] = Dates(day, day.replace(day=20))

    def add() -> None:
        text = (entries / "beta-failure.yaml").read_text()
        (entries / "gamma-failure.yaml").write_text(
            text.replace("id: beta-failure", "id: gamma-failure")
        )

    steps = {
        "tag title": edit("tags.yaml", "title: FSDP", "title: Fully sharded"),
        "tag description": edit("tags.yaml", "Fully sharded data parallel.", "Sharded."),
        "entry title": edit(
            "alpha-failure.yaml", "title: Alpha failure under FSDP", "title: Alpha failure, renamed"
        ),
        "entry summary": edit("alpha-failure.yaml", "The alpha failure", "The alpha fault"),
        "entry category": edit(
            "alpha-failure.yaml", "category: mixed-precision", "category: numerics"
        ),
        "entry tags": edit("alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bf16, nccl]"),
        "alias": edit("alpha-failure.yaml", "aliases: [alpha-old]", "aliases: [alpha-older]"),
        "entry added": add,
        "dates": redate,
        "site settings": lambda: config.write_text(
            '[site]\ntitle = "Other"\nbase_url = "https://y.example/"\n'
        ),
    }
    config = tmp_path / "nanopedia.toml"
    config.write_text('[site]\nbase_url = "https://x.example/"\n')
    build(Request(entries, site, config, cache_root=cache, jobs=1, dates=dates))
    for n, (name, step) in enumerate(steps.items()):
        before = tree(site)
        step()
        build(Request(entries, site, config, cache_root=cache, jobs=1, dates=dates))
        cold = tmp_path / f"cold-{n}"
        build(Request(entries, cold, config, use_cache=False, jobs=1, dates=dates))
        assert tree(site) == tree(cold), name
        assert tree(site) != before, name


def test_the_state_rewrites_only_the_bucket_of_an_edited_entry(tmp_path: Path) -> None:
    entries, cache = tmp_path / "entries", tmp_path / "cache"
    shutil.copytree(SOURCE, entries)
    build(Request(entries, tmp_path / "site", None, cache_root=cache, jobs=1, dates={}))

    def buckets() -> dict[str, int]:
        background.finish()  # the state is saved in the background
        kept = open_cache(cache).root / "kept"
        return {p.name: p.stat().st_ino for p in kept.rglob("*") if p.is_file()}

    before = buckets()
    path = entries / f"{ENTRY}.yaml"
    path.write_text(path.read_text().replace("\nconfirm:\n", "\nconfirm:\n  - Edited.\n", 1))
    build(Request(entries, tmp_path / "site", None, cache_root=cache, jobs=1, dates={}))
    after = buckets()
    assert len(after) == len(before)  # the replaced bucket is deleted
    assert len(set(after) - set(before)) == 1
    report = build(Request(entries, tmp_path / "site", None, cache_root=cache, jobs=1, dates={}))
    assert report.up_to_date


def head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def test_commits_rebuild_like_a_cold_build_walking_only_new_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dates from git: a build after a commit reads only the commits since the last walk, and
    the site equals a cold build's; a build without a new commit runs no `git log`."""
    repo = Repo(tmp_path / "repo")
    shutil.copytree(SMALL, repo.root / "entries")
    repo.commit("the entries", "2024-01-01T00:00:00Z")
    entries, site, cache = repo.root / "entries", tmp_path / "site", tmp_path / "cache"
    logs: list[tuple[str, ...]] = []
    real = gitdates._start

    def spy(root: Path, *args: str) -> gitdates.Started | None:
        logs.append(args)
        return real(root, *args)

    monkeypatch.setattr(gitdates, "_start", spy)

    def warm() -> Report:
        report = build(Request(entries, site, None, cache_root=cache, jobs=1))
        background.finish()  # the walk is saved with the state, in the background
        build(Request(entries, tmp_path / "cold", None, use_cache=False, jobs=1))
        assert tree(site) == tree(tmp_path / "cold")
        shutil.rmtree(tmp_path / "cold")
        return report

    warm()
    logs.clear()
    path = entries / "alpha-failure.yaml"
    path.write_text(path.read_text().replace("\nconfirm:\n", "\nconfirm:\n  - Edited.\n", 1))
    warm()  # edited, not committed: the same HEAD, no walk but the cold build's
    assert [a[-3] for a in logs] == [head(repo)]
    before = head(repo)
    repo.commit("edit one entry", "2024-03-01T00:00:00Z")
    logs.clear()
    warm()
    assert [a[-3] for a in logs] == [f"{before}..{head(repo)}", head(repo)]
    page = (site / "entries" / "alpha-failure.html").read_text()
    assert "2024-03-01" in page


def test_a_failed_build_stops_its_git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo")
    shutil.copytree(SMALL, repo.root / "entries")
    repo.commit("the entries", "2024-01-01T00:00:00Z")
    path = repo.root / "entries" / "alpha-failure.yaml"
    path.write_text(path.read_text().replace("category:", "category: [", 1))
    started: list[gitdates.Started] = []
    real = gitdates._start
    monkeypatch.setattr(
        gitdates, "_start", lambda root, *args: started.append(real(root, *args)) or started[-1]
    )
    with pytest.raises(NanopediaError):
        build(
            Request(
                repo.root / "entries",
                tmp_path / "site",
                None,
                cache_root=tmp_path / "cache",
                jobs=1,
            )
        )
    assert len(started) == 1
    process, output = started[0]
    assert process.returncode is not None and output.closed


def test_rebuilds_told_what_changed_match_a_cold_build(tmp_path: Path) -> None:
    """`serve` passes the files its watcher saw change; the rest is not looked at again."""
    entries, site = tmp_path / "entries", tmp_path / "site"
    shutil.copytree(SMALL, entries)

    def warm(*changed: Path) -> Report:
        return build(
            Request(
                entries,
                site,
                None,
                cache_root=tmp_path / "cache",
                jobs=1,
                dates={},
                changed=set(changed),
            )
        )

    build(Request(entries, site, None, cache_root=tmp_path / "cache", jobs=1, dates={}))
    edited = entries / "alpha-failure.yaml"
    edited.write_text(edited.read_text().replace("\ntitle: Alpha", "\ntitle: Edited Alpha", 1))
    copy = entries / "copied-entry.yaml"
    copy.write_text(
        edited.read_text()
        .replace("id: alpha-failure", "id: copied-entry", 1)
        .replace("alpha-old", "copied-old", 1)  # its alias, which must be unique too
    )
    assert warm(edited, copy).reused == len(entry_files(SMALL)) - 1  # all but the edited one
    build(Request(entries, tmp_path / "cold", None, use_cache=False, jobs=1, dates={}))
    assert tree(site) == tree(tmp_path / "cold")
    copy.unlink()
    warm(copy)
    build(Request(entries, tmp_path / "cold2", None, use_cache=False, jobs=1, dates={}))
    assert tree(site) == tree(tmp_path / "cold2")


def test_an_edit_that_leaves_the_code_alone_runs_no_highlighter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code examples of the entry's last version are reused; new code is highlighted."""
    entries, site = tmp_path / "entries", tmp_path / "site"
    shutil.copytree(SMALL, entries)
    build(Request(entries, site, None, cache_root=tmp_path / "cache", jobs=1, dates={}))
    calls: list[str] = []
    real = highlight.Highlighter.code
    monkeypatch.setattr(
        highlight.Highlighter,
        "code",
        lambda self, src, lang: calls.append(src) or real(self, src, lang),
    )
    path = entries / "alpha-failure.yaml"
    path.write_text(path.read_text().replace("\nconfirm:\n", "\nconfirm:\n  - Edited.\n", 1))
    build(Request(entries, site, None, cache_root=tmp_path / "cache", jobs=1, dates={}))
    assert calls == []
    path.write_text(
        path.read_text().replace(
            "mask = mask.to(hidden.dtype)", "mask = mask.to(hidden.dtype)  # edited", 1
        )
    )
    build(Request(entries, site, None, cache_root=tmp_path / "cache", jobs=1, dates={}))
    assert [c for c in calls if "# edited" in c] and len(calls) == 1
    build(Request(entries, tmp_path / "cold", None, use_cache=False, jobs=1, dates={}))
    assert tree(site) == tree(tmp_path / "cold")


def test_compiled_templates_are_kept_and_follow_the_theme(tmp_corpus: Path, tmp_path: Path) -> None:
    theme = tmp_path / "theme"
    shutil.copytree(THEME, theme)
    cache = tmp_path / "cache"
    site = tmp_path / "site"
    build(Request(tmp_corpus, site, None, cache_root=cache, jobs=1, dates={}, theme=theme))
    assert list((open_cache(cache).root / "templates").iterdir())
    page = theme / "templates" / "404.html"
    page.write_text(page.read_text().replace("</h1>", "</h1><p>Changed theme.</p>", 1))
    build(Request(tmp_corpus, site, None, cache_root=cache, jobs=1, dates={}, theme=theme))
    assert b"Changed theme." in (site / "404.html").read_bytes()


def test_the_command_returns_before_its_state_is_saved_and_the_next_waits(tmp_path: Path) -> None:
    """The console script leaves the state to a detached process; a build started right after
    waits for it, so it finds the site up to date."""
    shutil.copytree(SMALL, tmp_path / "entries")
    command = [sys.executable, "-m", "nanopedia", "build"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "built " in first.stderr, first.stderr
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "is up to date" in second.stderr, second.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".nanopedia-cache", "entries", "site"]


def test_reading_the_state_waits_while_another_process_writes_it(tmp_path: Path) -> None:
    entries, cache = tmp_path / "entries", open_cache(tmp_path / "cache")
    shutil.copytree(SMALL, entries)
    build(
        Request(entries, tmp_path / "site", None, cache_root=tmp_path / "cache", jobs=1, dates={})
    )
    background.finish()
    k = stamps.site_key(tmp_path / "site")
    done = threading.Event()
    held = build_state.hold(cache, k)  # as a build saving the state holds it
    assert held is not None
    try:
        threading.Thread(target=lambda: (build_state.load(cache, k), done.set())).start()
        assert not done.wait(0.3)
    finally:
        os.close(held)
    assert done.wait(10)


def test_a_rebuild_does_not_wait_for_replaced_files_to_be_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, site = tmp_path / "entries", tmp_path / "site"
    shutil.copytree(SMALL, entries)
    build(Request(entries, site, None, cache_root=tmp_path / "cache", jobs=1, dates={}))
    background.finish()
    release, deleting = threading.Event(), []
    real = shutil.rmtree

    def slow(path: Path, **kwargs: object) -> None:
        deleting.append(path)
        release.wait(10)
        real(path, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", slow)
    path = entries / "alpha-failure.yaml"
    for n in range(2):  # the second build runs while the first one's leftovers are held
        path.write_text(path.read_text().replace("\nconfirm:\n", f"\nconfirm:\n  - {n}.\n", 1))
        build(
            Request(
                entries,
                site,
                None,
                cache_root=tmp_path / "cache",
                jobs=1,
                dates={},
                clean_up_later=True,
            )
        )  # serve's rebuilds
    assert deleting and deleting[0].exists()  # still held: the second build did not wait
    release.set()
    background.finish()
    assert not deleting[0].exists()
    build(Request(entries, tmp_path / "cold", None, use_cache=False, jobs=1, dates={}))
    assert tree(site) == tree(tmp_path / "cold")


def test_values_of_old_versions_are_deleted(tmp_path: Path) -> None:
    """The cache keeps the three most recently used versions of the code, and nothing of the
    layout before version folders; what is not ours is left alone."""
    cache = tmp_path / "cache"
    for n, name in enumerate(
        [
            "0000000000000001",
            "0000000000000002",
            "0000000000000003",
            "0000000000000004",
            "entries",
            "kept",
            "notes",
        ]
    ):
        (cache / name / "x").mkdir(parents=True)
        os.utime(cache / name, ns=(n * 10**9, n * 10**9))
    entries = SMALL
    build(Request(entries, tmp_path / "site", None, cache_root=cache, jobs=1, dates={}))
    background.finish()
    current = open_cache(cache).root.name
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        ["0000000000000003", "0000000000000004", current, "notes"]
    )
    assert build(
        Request(entries, tmp_path / "site", None, cache_root=cache, jobs=1, dates={})
    ).up_to_date


def test_a_build_returns_with_no_folder_of_its_cache_being_deleted(
    tmp_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old site goes to the cache's trash and is deleted in the background; `build` waits
    for that before it returns, so a walk of the cache (`rglob`) never meets a folder that
    vanishes under it. `serve` (`clean_up_later`) returns first; its deletion still ends."""
    release = threading.Event()
    real = shutil.rmtree

    def slow(path: object, *args: object, **kwargs: object) -> None:
        if "trash" in str(path):
            release.wait(timeout=30)
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    site, cache = tmp_path / "site", tmp_path / "cache"
    build(Request(tmp_corpus, site, cache_root=cache))
    monkeypatch.setattr(shutil, "rmtree", slow)
    beta = tmp_corpus / "beta-failure.yaml"
    beta.write_text(beta.read_text().replace("Beta failure in NCCL", "Beta failure in Gloo"))
    build(Request(tmp_corpus, site, cache_root=cache, clean_up_later=True))
    assert list((cache / "trash").iterdir()), "serve's build returned before the deletion"
    release.set()
    background.tidy()
    assert list((cache / "trash").iterdir()) == []

    release.clear()
    threading.Timer(0.3, release.set).start()
    beta.write_text(beta.read_text().replace("in Gloo", "in MPI"))
    build(Request(tmp_corpus, site, cache_root=cache))
    assert list((cache / "trash").iterdir()) == []  # waited for, not racing the caller
    assert list(cache.rglob("search-terms"))
