"""Review records: `check` reads `reviews/<id>.md` beside the entries folder and holds each
entry's `reviewed` date to its record's `- Date:` line, at the entry's line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RECORD = "# Review: alpha-failure\n\n- Date: 2026-12-05 (second engineer)\n- Releases checked: x\n"


def _reviewed(corpus: Path, date: str) -> int:
    """Add `reviewed: date` to the alpha entry; the 1-based line it is on."""
    path = corpus / "alpha-failure.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f'reviewed: "{date}"\n', encoding="utf-8")
    return text.count("\n") + 1


def test_a_date_that_matches_its_record_is_clean(tmp_corpus: Path, cli, monkeypatch) -> None:
    (tmp_corpus.parent / "reviews").mkdir()
    (tmp_corpus.parent / "reviews" / "alpha-failure.md").write_text(RECORD, encoding="utf-8")
    _reviewed(tmp_corpus, "2026-12-05")
    monkeypatch.chdir(tmp_corpus.parent)
    assert cli("check", "entries").code == 0


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (None, "'reviewed' names a review but reviews/alpha-failure.md does not exist"),
        (
            RECORD.replace("2026-12-05", "2026-12-01"),
            "'reviewed: 2026-12-05' differs from the date of reviews/alpha-failure.md (2026-12-01)",
        ),
        (
            "# Review: alpha-failure\n\nno date here\n",
            "'reviewed: 2026-12-05' differs from the date of reviews/alpha-failure.md "
            "(no '- Date: YYYY-MM-DD' line)",
        ),
    ],
)
def test_a_date_without_its_record_is_refused_at_the_entry(
    tmp_corpus: Path, cli, monkeypatch, record: str | None, message: str
) -> None:
    (tmp_corpus.parent / "reviews").mkdir()
    if record is not None:
        (tmp_corpus.parent / "reviews" / "alpha-failure.md").write_text(record, encoding="utf-8")
    line = _reviewed(tmp_corpus, "2026-12-05")
    monkeypatch.chdir(tmp_corpus.parent)
    run = cli("check", "entries")
    assert run.code == 1
    assert f"entries/alpha-failure.yaml:{line}:11: error[E029]: {message}" in run.out


def test_a_record_its_entry_does_not_show_is_a_warning(tmp_corpus: Path, cli, monkeypatch) -> None:
    (tmp_corpus.parent / "reviews").mkdir()
    (tmp_corpus.parent / "reviews" / "alpha-failure.md").write_text(RECORD, encoding="utf-8")
    monkeypatch.chdir(tmp_corpus.parent)
    run = cli("check", "entries")
    assert run.code == 0
    assert (
        "reviews/alpha-failure.md:1:1: warning[E029]: review record of 'alpha-failure' is not shown"
    ) in run.out + run.err


def test_entries_copied_without_their_records_keep_their_dates(
    tmp_corpus: Path, cli, monkeypatch
) -> None:
    _reviewed(tmp_corpus, "2026-12-05")  # no reviews/ folder at all: a team's copy
    monkeypatch.chdir(tmp_corpus.parent)
    assert cli("check", "entries").code == 0


def test_every_entry_and_record_is_held_to_the_other_with_its_hint(
    tmp_corpus: Path, cli, monkeypatch
) -> None:
    """The first entry has no date and the second names a missing record; a record without an
    entry's date and without a date of its own gets the placeholder in its hint."""
    (tmp_corpus.parent / "reviews").mkdir()
    (tmp_corpus.parent / "reviews" / "alpha-failure.md").write_text(
        "# Review: alpha-failure\n\nno date\n", encoding="utf-8"
    )
    beta = tmp_corpus / "beta-failure.yaml"
    text = beta.read_text(encoding="utf-8")
    beta.write_text(text + 'reviewed: "2026-12-05"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_corpus.parent)
    run = cli("check", "entries", "--format", "json")
    found = [
        (p["path"], p["line"], p["column"], p["severity"], p["message"], p["hint"])
        for p in json.loads(run.out)
        if p["code"] == "E029"
    ]
    assert found == [
        (
            "entries/beta-failure.yaml",
            text.count("\n") + 1,
            11,
            "error",
            "'reviewed' names a review but reviews/beta-failure.md does not exist",
            "the second engineer writes the record (CONTRIBUTING, reviews)",
        ),
        (
            "reviews/alpha-failure.md",
            1,
            1,
            "warning",
            "review record of 'alpha-failure' is not shown: its entry has no 'reviewed' date "
            "(or does not exist)",
            "add 'reviewed: YYYY-MM-DD' to the entry",
        ),
    ]
    assert run.code == 1


def test_a_date_that_differs_names_the_line_to_copy(tmp_corpus: Path, cli, monkeypatch) -> None:
    (tmp_corpus.parent / "reviews").mkdir()
    (tmp_corpus.parent / "reviews" / "alpha-failure.md").write_text(
        RECORD.replace("2026-12-05", "2026-12-01"), encoding="utf-8"
    )
    _reviewed(tmp_corpus, "2026-12-05")
    monkeypatch.chdir(tmp_corpus.parent)
    run = cli("check", "entries", "--format", "json")
    (found,) = [p for p in json.loads(run.out) if p["code"] == "E029"]
    assert found["hint"] == "give the date of the record's '- Date:' line"


def test_records_are_read_past_folders_links_and_other_files(tmp_path: Path) -> None:
    from nanopedia.content.corpus import load_reviews

    (tmp_path / "entries").mkdir()
    assert load_reviews(tmp_path / "entries") is None  # no records folder: dates as given
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    (reviews / "a.md").mkdir()  # sorted first: not a record, and the rest are still read
    (reviews / "b.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "elsewhere.md").write_text("- Date: 2026-01-01\n")
    (reviews / "c.md").write_text("# Review\n\n- Date: 2026-02-03 (second read)\n")
    (reviews / "d.md").write_text("# Review\n\nno date line\n")
    (reviews / "e.txt").write_text("- Date: 2026-04-05\n")
    assert load_reviews(tmp_path / "entries") == {"c": "2026-02-03", "d": None}
