"""The compiled catalogue (`diagnosis/catalogue.py`): what a diagnosis reads instead of loading
every entry, equal to what full loading gives, never stale, never trusted when damaged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.content.corpus import gather
from nanopedia.diagnosis import catalogue, contract, rank, report, scan, text_report, versions
from nanopedia.errors import Problem
from nanopedia.incremental.catalogue import FolderStore

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import cases, materialise  # noqa: E402

ENTRIES = ROOT / "entries"
ERROR = "[rank3]: RuntimeError: expected scalar type BFloat16 but found Float\n"


def reference(root: Path) -> tuple[list[catalogue.EntryView], list[Problem]]:
    """What diagnosis used before the catalogue (`scan.usable_entries` of issue 31): the whole
    folder gathered, the files that did not load or hold an unusable pattern left out, each
    with its first error."""
    found, problems = gather(root)
    loaded = {s.doc.path for s in found.sources}
    left_out = {
        p.location.path: p
        for p in reversed(problems)
        if p.severity == "error"
        and (p.location.path not in loaded or p.code in catalogue.UNUSABLE_PATTERN)
    }
    usable = [s.entry for s in found.sources if s.doc.path not in left_out]
    return (
        catalogue.views(sorted(usable, key=lambda e: e.id)),
        [first for path, first in sorted(left_out.items()) if path.endswith(".yaml")],
    )


@pytest.fixture(scope="module")
def full() -> tuple[list[catalogue.EntryView], list[Problem]]:
    return reference(ENTRIES)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> catalogue.Catalogue:
    """The catalogue of entries/ as a diagnosis reads it: compiled, stored, read back."""
    store = FolderStore(tmp_path_factory.mktemp("store"))
    catalogue.load(ENTRIES, store)
    return catalogue.load(ENTRIES, store)


def test_the_catalogue_equals_full_loading_for_every_entry(full, compiled) -> None:
    views, skipped = full
    assert [e.id for e in compiled.entries] == [e.id for e in views]
    for mine, theirs in zip(compiled.entries, views, strict=True):
        assert mine == theirs, mine.id
    assert list(compiled.skipped) == skipped
    assert contract.export_data(compiled.entries) == contract.export_data(
        gather(ENTRIES)[0].entries
    )


def test_diagnose_output_is_the_same_as_from_the_loaded_entries(
    full, compiled, tmp_path: Path
) -> None:
    """Every labelled log (tests/logs, tests/logs/real) in every format, byte for byte."""
    loaded = {e.id: e for e in gather(ENTRIES)[0].entries}
    views = {e.id: e for e in compiled.entries}
    old, new = scan.Matcher(loaded.values()), scan.Matcher(compiled.entries)
    for case in cases():
        paths = [str(p) for p in materialise(case, tmp_path)]
        before = rank.diagnose([scan.scan_file(p, old) for p in paths])
        after = rank.diagnose([scan.scan_file(p, new) for p in paths])
        assert after == before, case.name
        seen = [
            s
            for p in paths
            for s in versions.find(
                Path(p).read_text(encoding="utf-8", errors="replace").splitlines(), p
            )
        ]
        for fmt in (text_report.as_text, report.as_markdown):
            assert fmt(after, views, None, 3, seen) == fmt(before, loaded, None, 3, seen), case.name
        assert json.dumps(
            report.with_answers(after, views, None, None, seen), sort_keys=True
        ) == json.dumps(report.with_answers(before, loaded, None, None, seen), sort_keys=True)


def test_an_artifact_reads_back_as_it_was_written(compiled) -> None:
    code = catalogue.code_key()
    hashes = catalogue.file_hashes(ENTRIES)
    artifact = catalogue.compile_entries(ENTRIES, hashes, code, [])
    again = catalogue.loads(catalogue.dumps(artifact))
    assert again == artifact
    assert catalogue.catalogue(again, ENTRIES) == compiled


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of the encyclopedia, to be changed."""
    root = tmp_path / "entries"
    shutil.copytree(ENTRIES, root)
    return root


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    real = catalogue.compile_file

    def counted(path: Path, value: str) -> object:
        compiled.append(path.name)
        return real(path, value)

    monkeypatch.setattr(catalogue, "compile_file", counted)
    return compiled


def test_a_changed_entry_is_compiled_again_and_no_other(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FolderStore(tmp_path / "cache")
    first = catalogue.load(corpus, store)
    compiled = _counting(monkeypatch)
    assert catalogue.load(corpus, store) == first and compiled == []
    path = corpus / "fsdp-uniform-dtype.yaml"
    text = path.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    path.write_text(
        text.replace(title, "title: Renamed for a test of the cache", 1), encoding="utf-8"
    )
    changed = catalogue.load(corpus, store)
    assert compiled == ["fsdp-uniform-dtype.yaml"]
    by_id = {e.id: e for e in changed.entries}
    assert by_id["fsdp-uniform-dtype"].title == "Renamed for a test of the cache"
    assert changed == catalogue.Catalogue(*map(tuple, reference(corpus)))
    path.write_text(text, encoding="utf-8")  # back as it was: the old record is not kept
    assert catalogue.load(corpus, store) == first
    assert compiled == ["fsdp-uniform-dtype.yaml"] * 2


def test_a_record_of_other_code_is_not_reused(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FolderStore(tmp_path / "cache")
    catalogue.load(corpus, store)
    monkeypatch.setattr(catalogue, "code_key", lambda: "another version of the code")
    compiled = _counting(monkeypatch)
    catalogue.load(corpus, store)
    assert len(compiled) == len(catalogue.file_hashes(corpus))


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "wrong shape", "other format"])
def test_a_damaged_cache_is_ignored_and_written_again(
    corpus: Path, tmp_path: Path, damage: str
) -> None:
    store = FolderStore(tmp_path / "cache")
    good = catalogue.load(corpus, store)
    data = store.read(corpus)
    assert data
    bad = {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "garbage": b"\x00\xff{[",
        "wrong shape": b'{"format": 1, "key": "k", "code": "c", "files": {"a.yaml": 3}}',
        "other format": data.replace(b'"format":1', b'"format":999'),
    }[damage]
    store.path(corpus).write_bytes(bad)
    assert catalogue.load(corpus, store) == good
    assert store.read(corpus) == data


def test_a_record_with_a_forged_key_is_not_trusted_for_other_files(
    corpus: Path, tmp_path: Path
) -> None:
    """The key is computed from the files each run; an artifact only says what it was for."""
    store = FolderStore(tmp_path / "cache")
    catalogue.load(corpus, store)
    (corpus / "fsdp-uniform-dtype.yaml").unlink()
    assert "fsdp-uniform-dtype" not in {e.id for e in catalogue.load(corpus, store).entries}


BROKEN_YAML = "id: broken-entry\ntitle: [unclosed\n"


def _break(corpus: Path) -> None:
    (corpus / "broken-entry.yaml").write_text(BROKEN_YAML, encoding="utf-8")
    path = corpus / "fsdp-uniform-dtype.yaml"
    text = path.read_text(encoding="utf-8")
    pattern = next(line for line in text.splitlines() if line.strip().startswith("pattern:"))
    path.write_text(
        text.replace(pattern, pattern.split("pattern:")[0] + "pattern: 'a(?=b)c'", 1),
        encoding="utf-8",
    )


def test_an_invalid_entry_is_left_out_with_its_located_warning(
    corpus: Path, tmp_path: Path, monkeypatch
) -> None:
    _break(corpus)
    views, skipped = reference(corpus)
    assert [p.code for p in skipped] == ["E002", "E030"]
    store = FolderStore(tmp_path / "cache")
    for _ in range(2):  # compiled, then read from the store
        found = catalogue.load(corpus, store)
        assert list(found.entries) == views and list(found.skipped) == skipped
    monkeypatch.chdir(corpus)  # shown relative to where the command runs, as `check` does
    here = catalogue.load(corpus, store)
    assert [p.location.path for p in here.skipped] == [
        "broken-entry.yaml",
        "fsdp-uniform-dtype.yaml",
    ]


def _diagnose(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generator")}
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nanopedia", "diagnose", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cli_warns_the_same_from_the_cache(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(corpus)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.log").write_text(ERROR, encoding="utf-8")
    runs = [_diagnose(tmp_path, "--entries", "entries", "job.log") for _ in range(2)]
    warnings = [
        [line for line in r.stderr.splitlines() if line.startswith("nanopedia: warning")]
        for r in runs
    ]
    assert warnings[0] == warnings[1]
    assert [w.split(": entry left out")[0] for w in warnings[0]] == [
        f"nanopedia: warning: {p.location}" for p in reference(corpus)[1]
    ]
    assert runs[0].stdout == runs[1].stdout and runs[1].returncode == 0


#: What the fast path must not import: the entry model, its validation and the YAML loader.
SLOW = (
    "pydantic",
    "yaml",
    "markdown_it",
    "nanopedia.model",
    "nanopedia.content.load",
    "nanopedia.content.validate",
    "nanopedia.content.corpus",
)


def test_a_diagnosis_from_the_catalogue_imports_no_loader(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(ERROR, encoding="utf-8")
    _diagnose(tmp_path, "job.log")  # compiles into the session's cache, if not yet there
    run = _diagnose(tmp_path, "--format", "json", "job.log")
    assert run.returncode == 0, run.stderr
    imported = {
        line.split("|")[-1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert not [m for m in imported if m.split(".")[0] in SLOW or m in SLOW]
    assert json.loads(run.stdout)["matches"]
