"""Rebuilds that reuse the last build: after every kind of change, the site updated in place is
byte for byte the site a cold build makes, and only what the change affects is rendered again."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import ROOT

from generator.build import Report, build
from generator.errors import NanopediaError
from generator.gitdates import Dates

SOURCE = ROOT / "entries"
ENTRY = "nccl-watchdog-timeout"
"""An entry three others link to."""


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


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
        return build(self.entries, self.site, None, cache_root=self.tmp / "cache", jobs=1,
                     dates=self.dates)

    def check(self) -> Report:
        """A warm rebuild, which must equal a cold build."""
        report = self.warm()
        self.builds += 1
        cold = self.tmp / f"cold-{self.builds}"
        build(self.entries, cold, None, use_cache=False, jobs=1, dates=self.dates)
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
    other = corpus.site / "entries" / "gradscaler-misuse.html"
    before = other.stat().st_ino
    corpus.edit(ENTRY, lambda t: t.replace("\nconfirm:\n", "\nconfirm:\n  - Edited.\n", 1))
    report = corpus.check()
    assert other.stat().st_ino == before  # kept in place, not written again
    assert report.reused == report.entries - 1
    # its page and entries.json: no other file shows `confirm`
    assert report.rendered == 2, report


def test_a_new_title_reaches_every_page_that_names_it(corpus: Corpus) -> None:
    corpus.edit(ENTRY, lambda t: t.replace("title: 'NCCL watchdog timeout:",
                                           "title: 'NCCL watchdog timed out:", 1))
    report = corpus.check()
    assert b"NCCL watchdog timed out" in (corpus.site / "entries" /
                                          "megatron-nan-grad-norm.html").read_bytes()
    assert report.rendered < report.pages / 2


def test_tags_added_and_removed(corpus: Corpus) -> None:
    corpus.edit(ENTRY, lambda t: t.replace("tags:\n", "tags:\n  - bf16\n", 1))
    corpus.check()


def test_an_entry_added_renamed_and_removed(corpus: Corpus) -> None:
    text = (corpus.entries / f"{ENTRY}.yaml").read_text()
    new = corpus.entries / "copied-entry.yaml"
    new.write_text(text.replace(f"id: {ENTRY}", "id: copied-entry", 1)
                   .replace("title: 'NCCL", "title: 'Copied NCCL", 1))
    corpus.check()
    renamed = corpus.entries / "renamed-entry.yaml"
    new.rename(renamed)
    renamed.write_text(renamed.read_text().replace(
        "id: copied-entry", "id: renamed-entry\naliases:\n  - copied-entry", 1))
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
    corpus.edit(ENTRY, lambda t: t.replace("related:\n", "related:\n  - no-such-entry\n", 1))
    with pytest.raises(NanopediaError) as caught:
        corpus.warm()
    assert [p.code for p in caught.value.problems] == ["E021"]
    assert tree(corpus.site) == before
    corpus.edit(ENTRY, lambda t: t.replace("related:\n  - no-such-entry\n", "related:\n", 1))
    corpus.check()
