"""Entry dates from git history: scripted commit dates, renames, merges and the fallbacks."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gitscript import Repo

from nanopedia.incremental import gitdates
from nanopedia.incremental.gitdates import Walk, entry_dates, fallback, start
from nanopedia.model import Dates, iso


def walked(root: Path, since: Walk | None = None) -> Walk | None:
    return start(root, since).walk()


def history(root: Path) -> dict[str, Dates]:
    """File stem to dates, as a build sees them."""
    return dict(walked(root) or {})


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_dates_from_a_scripted_history(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("entries/a.yaml", "id: a\n")
    repo.write("entries/tags.yaml", "x: {}\n")
    repo.commit("add a", "2024-01-01T10:00:00+02:00")
    repo.write("entries/b.yaml", "id: b\n")
    repo.write("README.md", "not an entry\n")
    repo.commit("add b", "2024-02-01T00:00:00Z")
    repo.write("entries/a.yaml", "id: a\ntitle: changed\n")
    repo.commit("edit a", "2024-03-01T00:00:00Z")
    repo.git("mv", "entries/b.yaml", "entries/c.yaml")
    repo.commit("rename b to c", "2024-04-01T00:00:00Z")
    repo.write("entries/d.yaml", "id: d\n")  # written, never committed

    found = history(repo.root / "entries")
    assert found == {
        "a": Dates(day("2024-01-01T08:00:00"), day("2024-03-01T00:00:00")),
        "b": Dates(day("2024-02-01T00:00:00"), day("2024-04-01T00:00:00")),
        "c": Dates(day("2024-04-01T00:00:00"), day("2024-04-01T00:00:00")),
    }
    assert found["a"].as_dict() == {
        "first_published": "2024-01-01T08:00:00Z",
        "last_updated": "2024-03-01T00:00:00Z",
    }
    # The renamed entry keeps its old id as an alias: first published under that id.
    assert entry_dates(found, "c", ["b"]) == Dates(
        day("2024-02-01T00:00:00"), day("2024-04-01T00:00:00")
    )
    assert entry_dates(found, "d") is None
    assert entry_dates(found, "d", default=found["a"]) == found["a"]


def test_merged_branch_is_dated_by_its_merge(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("entries/a.yaml", "id: a\n")
    repo.commit("add a", "2024-01-01T00:00:00Z")
    repo.git("checkout", "-q", "-b", "pr")
    repo.write("entries/b.yaml", "id: b\n")
    repo.commit("add b on a branch", "2024-01-05T00:00:00Z")
    repo.git("checkout", "-q", "main")
    repo.write("entries/a.yaml", "id: a\nx: 1\n")
    repo.commit("edit a", "2024-01-07T00:00:00Z")
    repo.git("merge", "-q", "--no-ff", "-m", "merge pr", "pr", when="2024-01-09T00:00:00Z")
    found = history(repo.root / "entries")
    assert iso(found["b"].first_published) == "2024-01-09T00:00:00Z"
    assert iso(found["a"].last_updated) == "2024-01-07T00:00:00Z"


def test_outside_git_there_is_no_history(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("id: a\n")
    assert history(tmp_path) == {}


def test_shallow_clone_is_not_trusted(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("entries/a.yaml", "id: a\n")
    repo.commit("one", "2024-01-01T00:00:00Z")
    repo.write("entries/a.yaml", "id: a\nx: 1\n")
    repo.commit("two", "2024-01-02T00:00:00Z")
    clone = tmp_path / "clone"
    repo.git("clone", "-q", "--depth", "1", f"file://{repo.root}", str(clone))
    assert history(clone / "entries") == {}


def test_fallback_is_source_date_epoch_or_nothing() -> None:
    assert fallback({}) is None
    assert fallback({"SOURCE_DATE_EPOCH": "not a number"}) is None
    when = fallback({"SOURCE_DATE_EPOCH": "1700000000"})
    assert when is not None
    assert when.as_dict() == {
        "first_published": "2023-11-14T22:13:20Z",
        "last_updated": "2023-11-14T22:13:20Z",
    }


def test_a_walk_since_an_earlier_head_equals_a_full_walk(tmp_path: Path, monkeypatch) -> None:
    repo = Repo(tmp_path / "repo")
    entries = repo.root / "entries"
    repo.write("entries/a.yaml", "id: a\n")
    repo.commit("add a", "2024-01-01T00:00:00Z")
    before = walked(entries)
    assert before is not None
    repo.write("entries/b.yaml", "id: b\n")
    repo.commit("add b", "2024-01-02T00:00:00Z")
    repo.git("checkout", "-q", "-b", "pr")
    repo.write("entries/a.yaml", "id: a\nx: 1\n")
    repo.write("entries/c.yaml", "id: c\n")
    repo.commit("edit a, add c on a branch", "2024-01-03T00:00:00Z")
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "not an entry\n")
    repo.commit("outside the entries", "2024-01-04T00:00:00Z")
    repo.git("merge", "-q", "--no-ff", "-m", "merge pr", "pr", when="2024-01-05T00:00:00Z")
    full = walked(entries)
    assert full is not None
    since = walked(entries, before)
    assert since == full
    assert dict(since) == history(entries)
    assert iso(since["a"].first_published) == "2024-01-01T00:00:00Z"
    assert iso(since["a"].last_updated) == "2024-01-05T00:00:00Z"
    # The same HEAD: the walk given back as it is, without running git log.
    runs: list[tuple[str, ...]] = []
    real, started = gitdates._git, gitdates._start
    monkeypatch.setattr(gitdates, "_git", lambda root, *a: runs.append(a) or real(root, *a))
    monkeypatch.setattr(gitdates, "_start", lambda root, *a: runs.append(a) or started(root, *a))
    assert walked(entries, full) is full
    assert [a[0] for a in runs] == ["rev-parse"]


def test_a_walk_of_a_rewritten_history_starts_again(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    entries = repo.root / "entries"
    repo.write("entries/a.yaml", "id: a\n")
    repo.commit("add a", "2024-01-01T00:00:00Z")
    repo.write("entries/b.yaml", "id: b\n")
    repo.commit("add b", "2024-01-02T00:00:00Z")
    before = walked(entries)
    assert before is not None and "b" in before.first
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.write("entries/c.yaml", "id: c\n")
    repo.commit("add c instead", "2024-01-03T00:00:00Z")
    again = walked(entries, before)
    assert again == walked(entries)
    assert again is not None and "b" not in again.first
    # A walk of a side branch merged in later is not on the chain either.
    repo.git("checkout", "-q", "-b", "side")
    repo.write("entries/d.yaml", "id: d\n")
    repo.commit("add d on a side branch", "2024-01-04T00:00:00Z")
    side = walked(entries)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side", when="2024-01-06T00:00:00Z")
    merged = walked(entries, side)
    assert merged == walked(entries)
    assert merged is not None and iso(merged["d"].first_published) == "2024-01-06T00:00:00Z"
