"""`nanopedia/config.py`: `nanopedia.toml`'s `[site]` table read into settings, every mistake a
located E050 with the others of the same file, and defaults where there is no file."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanopedia.config import Config, parse, read
from nanopedia.errors import NanopediaError


def refusals(text: str) -> list[str]:
    with pytest.raises(NanopediaError) as err:
        parse(text, "nanopedia.toml")
    return [str(p) for p in err.value.problems]


def test_no_file_named_and_none_there_is_every_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert read(None) == Config()
    assert Config() == Config(
        title="Nanopedia",
        description="The open encyclopedia of ML training failures: symptoms, causes and fixes.",
        base_url="",
        repo_url="",
        feeds=True,
    )


def test_the_file_of_the_working_folder_is_read_when_none_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nanopedia.toml").write_text('[site]\ntitle = "Team wiki"\n', encoding="utf-8")
    assert read(None) == Config(title="Team wiki")


def test_every_setting_is_read() -> None:
    text = (
        '[site]\ntitle = "T"\ndescription = "D"\nbase_url = "https://x.example/wiki/"\n'
        'repo_url = "https://git.example/r/blob/main/entries"\n'
    )
    assert parse(text, "nanopedia.toml") == Config(
        "T", "D", "https://x.example/wiki/", "https://git.example/r/blob/main/entries"
    )


@pytest.mark.parametrize(
    ("base", "kept"),
    [
        ("https://x.example/wiki", "https://x.example/wiki/"),
        ("https://x.example/wiki/", "https://x.example/wiki/"),
        ("", ""),
    ],
)
def test_the_base_url_ends_with_one_slash(base: str, kept: str) -> None:
    assert parse(f'[site]\nbase_url = "{base}"\n', "n.toml").base_url == kept


def test_an_empty_file_or_table_is_every_default() -> None:
    assert parse("", "n.toml") == Config()
    assert parse("[site]\n", "n.toml") == Config()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[site]\ntitle = "T"\n[theme]\ncolour = "red"\n',
            ["nanopedia.toml: error[E050]: the configuration has one table, [site]"],
        ),
        (
            'site = "x"\n',
            ["nanopedia.toml: error[E050]: the configuration has one table, [site]"],
        ),
        (
            '[site]\ntitel = "T"\n',
            [
                "nanopedia.toml: error[E050]: unknown setting 'titel' in [site]\n    hint: "
                "known settings: base_url, description, repo_url, title"
            ],
        ),
        (
            "[site]\nfeeds = false\n",
            [
                "nanopedia.toml: error[E050]: unknown setting 'feeds' in [site]\n    hint: "
                "known settings: base_url, description, repo_url, title"
            ],
        ),
        (
            "[site]\ntitle = 3\n",
            ["nanopedia.toml: error[E050]: setting 'title' must be a string"],
        ),
        (
            '[site]\nbase_url = "http://x.example/"\n',
            ["nanopedia.toml: error[E050]: 'base_url' must start with https://"],
        ),
        (
            '[site]\nrepo_url = "git@git.example:r"\n',
            ["nanopedia.toml: error[E050]: 'repo_url' must start with https://"],
        ),
        (
            '[site]\ntitel = "T"\ndescription = 1\nbase_url = "ftp://x"\nrepo_url = "x"\n',
            [
                "nanopedia.toml: error[E050]: 'base_url' must start with https://",
                "nanopedia.toml: error[E050]: 'repo_url' must start with https://",
                "nanopedia.toml: error[E050]: setting 'description' must be a string",
                "nanopedia.toml: error[E050]: unknown setting 'titel' in [site]\n    hint: "
                "known settings: base_url, description, repo_url, title",
            ],
        ),
    ],
    ids=[
        "another table",
        "site not a table",
        "unknown setting",
        "feeds is not a setting",
        "not a string",
        "http base",
        "ssh repo",
        "every mistake at once",
    ],
)
def test_each_mistake_is_a_located_error(text: str, said: list[str]) -> None:
    assert refusals(text) == said


def test_invalid_toml_is_a_located_error_with_tomllibs_reason() -> None:
    (said,) = refusals("[site\ntitle = 1\n")
    assert said.startswith("nanopedia.toml: error[E050]: invalid TOML: ")
    assert "line 1" in said


def test_an_unreadable_file_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "nanopedia.toml"
    bad.write_bytes(b'[site]\ntitle = "caf\xe9"\n')
    with pytest.raises(NanopediaError) as err:
        read(bad)
    (found,) = err.value.problems
    assert str(found).startswith(f"{bad.as_posix()}: error[E050]: cannot read the configuration:")
    with pytest.raises(NanopediaError) as err:
        read(tmp_path / "missing.toml")
    assert "cannot read the configuration" in str(err.value)
