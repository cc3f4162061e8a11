"""What each command says when it refuses, word for word, on the stream a user reads it from:
the place (`path: error[CODE]: message`), the hint on the next line, the exit code, and nothing
on stdout, where scripts read results. One table; plus the sizes `--max-file-bytes` takes and
the layout of `diagnose --format json`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.cli import _byte_size

LOG = str(ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log")
NO_ENTRIES = "nope: error[E050]: no such entries directory\n    hint: pass --entries DIR\n"

#: name: (arguments, exit code, stderr), run in an empty folder.
REFUSALS: dict[str, tuple[list[str], int, str]] = {
    "diagnose without its entries": (["diagnose", "--entries", "nope", LOG], 2, NO_ENTRIES),
    "build without its entries": (["build", "--entries", "nope", "--out", "s"], 2, NO_ENTRIES),
    "show without its entries": (["show", "--entries", "nope", "alpha-failure"], 2, NO_ENTRIES),
    "new outside a repository": (
        ["new", "some-thing", "--title", "Some thing here"],
        2,
        "entries: error[E050]: no entries directory here\n"
        "    hint: run this in the repository root or pass --entries DIR\n",
    ),
    "build with a settings file that is not there": (
        ["build", "--entries", str(FIXTURES / "corpus"), "--config", "none.toml", "--out", "s"],
        2,
        "none.toml: error[E050]: no such config file\n",
    ),
}


@pytest.mark.parametrize("args, code, said", REFUSALS.values(), ids=REFUSALS)
def test_a_refusal_names_the_place_the_problem_and_the_way_out(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    run = cli(*args)
    assert (run.code, run.err, run.out) == (code, said, "")
    assert sorted(tmp_path.iterdir()) == []  # nothing made on the way


def test_new_suggests_the_registered_spelling_of_an_unknown_tag(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "tags.yaml").write_bytes(
        (FIXTURES / "corpus" / "tags.yaml").read_bytes()
    )
    run = cli("new", "some-thing", "--title", "Some thing here", "--tag", "bf61")
    assert run.code == 2 and run.out == ""
    assert "error[E050]: unknown tag 'bf61'" in run.err
    assert "    hint: did you mean 'bf16'?" in run.err
    assert sorted(p.name for p in (tmp_path / "entries").iterdir()) == ["tags.yaml"]
    run = cli("new", "some-thing", "--title", "Some thing here", "--tag", "zzzz")
    assert "error[E050]: unknown tag 'zzzz'" in run.err
    assert "    hint: add it to entries/tags.yaml first" in run.err


def test_a_build_with_nothing_to_do_says_so_on_stderr(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # its cache goes there
    args = ("build", "--entries", str(FIXTURES / "corpus"), "--out", str(tmp_path / "s"))
    first = cli(*args)
    assert first.code == 0 and first.out == ""
    again = cli(*args)
    assert (again.code, again.out) == (0, "")
    assert again.err == f"{tmp_path / 's'}/ is up to date\n"


@pytest.mark.parametrize(
    "text, size",
    [
        ("0", 0),
        ("700", 700),
        ("64k", 64 << 10),
        ("64K", 64 << 10),
        ("512M", 512 << 20),
        ("512m", 512 << 20),
        ("2G", 2 << 30),
        ("1.5g", 3 << 29),
        ("1T", 1 << 40),
        ("2t", 2 << 40),
    ],
)
def test_max_file_bytes_takes_binary_units(text: str, size: int) -> None:
    assert _byte_size(text) == size


@pytest.mark.parametrize(
    "text, message",
    [
        ("lots", "not a size: 'lots' (e.g. 2G, 512M)"),
        ("2X", "not a size: '2X' (e.g. 2G, 512M)"),
        ("G", "not a size: 'G' (e.g. 2G, 512M)"),
        ("-1k", "a size cannot be negative: '-1k'"),
    ],
)
def test_a_size_it_cannot_read_is_said_so(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        _byte_size(text)
    assert str(refused.value) == message


def test_diagnose_json_is_indented_by_two_with_sorted_keys(cli: Any) -> None:
    """Scripts read the JSON, people diff it: the same bytes for the same answer."""
    run = cli("diagnose", "--format", "json", LOG)
    data = json.loads(run.out)
    assert run.out == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert run.out.startswith('{\n  "error_files": [],\n')


def test_bundle_says_what_it_wrote_with_its_size_and_digest(cli: Any, tmp_path: Path) -> None:
    import hashlib

    run = cli(
        "bundle",
        "--entries",
        str(FIXTURES / "corpus"),
        "--out",
        str(tmp_path),
        "--single-file",
        "--no-cache",
    )
    assert run.code == 0 and run.out == ""
    (made,) = tmp_path.glob("*.html")
    data = made.read_bytes()
    assert run.err == (
        f"wrote {made} ({len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()})\n"
    )


def test_a_bundle_of_broken_entries_lists_the_problems_and_writes_nothing(
    cli: Any, tmp_path: Path
) -> None:
    entries = tmp_path / "entries"
    entries.mkdir()
    (entries / "broken.yaml").write_text("id: [unclosed\n")
    run = cli("bundle", "--entries", str(entries), "--out", str(tmp_path / "dist"))
    assert run.code == 1
    assert run.out.startswith(f"{entries / 'broken.yaml'}:")  # the problems, where tools read
    assert run.err.endswith("problem(s) found; nothing was written\n")
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def test_bundle_makes_the_folders_of_its_out_path(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "not" / "yet" / "dist"
    run = cli("bundle", "--entries", str(FIXTURES / "corpus"), "--out", str(out), "--no-cache")
    assert run.code == 0, run.err
    (made,) = out.glob("*.zip")
    assert run.err.startswith(f"wrote {made} (")
