"""`nanopedia.diagnosis.catalogue`: the compiled views a diagnosis reads equal the loaded
entries; a record is reused only when its file and the code that compiled it are unchanged; a
damaged or foreign artifact is never trusted; a file left out says why, where it is."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.content.corpus import load_entry
from nanopedia.content.portable import literal_length
from nanopedia.diagnosis import catalogue
from nanopedia.diagnosis.catalogue import (
    CauseView,
    EntryView,
    FingerprintView,
    FixView,
    RangeView,
    SystemView,
)
from nanopedia.errors import Problem

CORPUS = FIXTURES / "corpus"
BROKEN_YAML = "id: broken-entry\ntitle: [unclosed\n"


@pytest.fixture(scope="module")
def alpha() -> EntryView:
    source, problems = load_entry(CORPUS / "alpha-failure.yaml")
    assert source is not None and not problems
    return catalogue.view(source.entry)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "entries"
    root.mkdir()
    shutil.copy(CORPUS / "alpha-failure.yaml", root)
    shutil.copy(CORPUS / "tags.yaml", root)
    return root


class Memory:
    """A store in memory that counts its writes and keeps the folders it was asked for."""

    def __init__(self, data: bytes | None = None) -> None:
        self.data, self.writes, self.roots = data, 0, set()

    def read(self, root: Path) -> bytes | None:
        self.roots.add(root)
        return self.data

    def write(self, root: Path, data: bytes) -> None:
        self.roots.add(root)
        self.data, self.writes = data, self.writes + 1


# --- views -----------------------------------------------------------------------------------


def test_an_entrys_view_holds_what_a_diagnosis_needs(alpha: EntryView) -> None:
    assert (alpha.id, alpha.title) == ("alpha-failure", "Alpha failure under FSDP")
    (fp,) = alpha.fingerprints
    assert fp == FingerprintView(
        id="scalar-type",
        pattern="expected scalar type (?:BFloat16|Half) but found Float",
        program="expected scalar type (?:BFloat16|Half) but found Float",
        ignore_case=False,
        indicates="decisive",
        collateral=False,
        specificity=literal_length("expected scalar type (?:BFloat16|Half) but found Float"),
        cause="cast",
    )
    assert alpha.causes == (
        CauseView("cast", "Model code casts to self.dtype", "workload", "fix-code"),
    )
    assert alpha.fixes == (FixView("Cast from the activation dtype", ("cast",)),)
    assert alpha.systems == (
        SystemView("PyTorch FSDP1", "torch", (RangeView("1.12", None, "from 1.12"),)),
    )
    assert catalogue.view(alpha) is alpha
    assert catalogue.views([alpha, alpha]) == [alpha, alpha]


def test_systems_without_a_package_or_ranges_are_left_out_of_the_view() -> None:
    source, _ = load_entry(CORPUS / "alpha-failure.yaml")
    assert source is not None
    entry = source.entry
    systems = [
        entry.affected_systems[0],
        entry.affected_systems[0].model_copy(update={"package": None}),
        entry.affected_systems[0].model_copy(update={"affected": []}),
    ]
    shown = catalogue.view(entry.model_copy(update={"affected_systems": systems}))
    assert [s.name for s in shown.systems] == ["PyTorch FSDP1"]


def test_a_range_with_a_fixed_release_keeps_it_in_the_view() -> None:
    source, _ = load_entry(CORPUS / "alpha-failure.yaml")
    assert source is not None
    entry = source.entry
    system = entry.affected_systems[0]
    fixed = system.affected[0].model_copy(update={"fixed": "2.1"})
    shown = catalogue.view(
        entry.model_copy(
            update={"affected_systems": [system.model_copy(update={"affected": [fixed]})]}
        )
    )
    assert shown.systems[0].affected == (RangeView("1.12", "2.1", fixed.words()),)
    assert "2.1" in fixed.words()


def test_a_record_reads_back_as_the_view(alpha: EntryView) -> None:
    assert catalogue.from_record(json.loads(json.dumps(catalogue.record(alpha)))) == alpha
    other = EntryView(
        "x",
        "X",
        (FingerprintView("f", "p", "(?i)p", True, "benign", True, 1, None),),
        (CauseView("c", "C", "environment", "retry"),),
        (FixView("F", ()),),
        (SystemView("S", "pkg", (RangeView("0", "2.1", "before 2.1"), RangeView("3", None, "3"))),),
    )
    assert catalogue.from_record(json.loads(json.dumps(catalogue.record(other)))) == other


# --- keys ------------------------------------------------------------------------------------


def test_the_code_key_changes_with_any_file_of_the_code(tmp_path: Path) -> None:
    package = tmp_path / "nanopedia"
    code = (
        "content/a.py",
        "content/sub/b.py",
        "model.py",
        "errors.py",
        "diagnosis/catalogue.py",
        "diagnosis/prefilter.py",
        "diagnosis/views.py",
    )
    for name in code:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(f"# {name}\n")
    (package / "content" / "notes.txt").write_text("not code")
    (package / "diagnosis" / "scan.py").write_text("# not a part of the key")
    key = catalogue.code_key(package)
    assert key == catalogue.code_key(package) and len(key) == 64
    (package / "content" / "notes.txt").write_text("changed")
    (package / "diagnosis" / "scan.py").write_text("# changed")
    assert catalogue.code_key(package) == key
    for name in code[1:]:
        before = (package / name).read_text()
        (package / name).write_text(before + "x = 1\n")
        assert catalogue.code_key(package) != key, name
        (package / name).write_text(before)
    (package / "content" / "sub" / "b.py").rename(package / "content" / "sub" / "c.py")
    assert catalogue.code_key(package) != key  # a file's name counts too
    assert catalogue.code_key() != key


def test_the_code_key_names_the_artifacts_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "model.py").write_text("")
    monkeypatch.setattr(catalogue, "_CODE", ("model.py",))
    key = catalogue.code_key(tmp_path)
    digest = hashlib.sha256(f"format {catalogue.FORMAT}".encode())
    digest.update(b"model.py\0" + hashlib.sha256(b"").digest())
    assert key == digest.hexdigest()
    monkeypatch.setattr(catalogue, "FORMAT", catalogue.FORMAT + 1)
    assert catalogue.code_key(tmp_path) != key


def test_file_hashes_cover_every_entry_file_but_the_tag_registry(corpus: Path) -> None:
    (corpus / "notes.md").write_text("not an entry")
    (corpus / "unreadable.yaml").mkdir()  # cannot be read: compiled, and refused
    hashes = catalogue.file_hashes(corpus)
    data = (corpus / "alpha-failure.yaml").read_bytes()
    assert hashes == {
        "alpha-failure.yaml": hashlib.sha256(data).hexdigest(),
        "unreadable.yaml": "",
    }


def test_the_folder_key_depends_on_every_name_and_hash_in_any_order() -> None:
    key = catalogue.corpus_key("code", {"a.yaml": "1", "b.yaml": "2"})
    assert key == catalogue.corpus_key("code", {"b.yaml": "2", "a.yaml": "1"})
    assert (
        len(
            {
                key,
                catalogue.corpus_key("other", {"a.yaml": "1", "b.yaml": "2"}),
                catalogue.corpus_key("code", {"a.yaml": "1", "b.yaml": "3"}),
                catalogue.corpus_key("code", {"a.yaml": "1", "c.yaml": "2"}),
                catalogue.corpus_key("code", {"a.yaml": "1"}),
                catalogue.corpus_key("code", {"a.yaml": "1b", "b.yaml": "2"[1:]}),
            }
        )
        == 6
    )


# --- artifacts -------------------------------------------------------------------------------


def test_an_artifact_is_an_index_line_then_its_records_and_reads_back(
    corpus: Path, alpha: EntryView
) -> None:
    (corpus / "broken-entry.yaml").write_text(BROKEN_YAML, encoding="utf-8")
    artifact = catalogue.compile_entries(corpus, catalogue.file_hashes(corpus), "code")
    data = catalogue.dumps(artifact)
    assert catalogue.loads(data) == artifact and catalogue.dumps(artifact) == data
    head, records = data.split(b"\n", 1)
    doc = json.loads(head)
    assert doc["format"] == catalogue.FORMAT and list(doc) == sorted(doc)
    assert list(doc["files"]) == ["alpha-failure.yaml", "broken-entry.yaml"]
    assert records == artifact.records and artifact.record("alpha-failure.yaml") == alpha
    assert artifact.record("broken-entry.yaml") is None


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"{",
        b"\xff\x00",
        b"[]",
        b"3",
        b'{"format": 2, "key": "k", "code": "c", "files": {}}',
        b'{"key": "k", "code": "c", "files": {}}',
        b'{"format": 1, "code": "c", "files": {}}',
        b'{"format": 1, "key": "k", "files": {}}',
        b'{"format": 1, "key": "k", "code": "c"}',
        b'{"format": 1, "key": "k", "code": "c", "files": []}',
        b'{"format": 1, "key": "k", "code": "c", "files": {"a.yaml": 3}}',
        b'{"format": 1, "key": "k", "code": "c", "files": {"a.yaml": ["h", null]}}',
        b'{"format": 1, "key": "k", "code": "c", "files": {"a.yaml": [1, null, null]}}',
        b'{"format": 1, "key": "k", "code": "c", "files": {"a.yaml": ["h", [], []]}}',
    ],
)
def test_a_damaged_or_foreign_artifact_is_never_trusted(data: bytes | None) -> None:
    assert catalogue.loads(data) is None


# --- compiling and loading -------------------------------------------------------------------


def test_a_folder_compiles_to_its_usable_entries_and_the_problems_of_the_others(
    corpus: Path, alpha: EntryView, monkeypatch: pytest.MonkeyPatch
) -> None:
    (corpus / "broken-entry.yaml").write_text(BROKEN_YAML, encoding="utf-8")
    text = (corpus / "alpha-failure.yaml").read_text(encoding="utf-8")
    slow = text.replace("'expected scalar type (?:BFloat16|Half) but found Float'", "'a(?=b)c'")
    (corpus / "zeta-failure.yaml").write_text(slow.replace("alpha-failure", "zeta-failure"))
    monkeypatch.chdir(corpus)
    found = catalogue.load(corpus)
    assert found.entries == (alpha,)
    assert [(p.location.path, p.code, p.severity) for p in found.skipped] == [
        ("broken-entry.yaml", "E002", "error"),
        ("zeta-failure.yaml", "E030", "error"),
    ]
    reference = []
    for name in ("broken-entry.yaml", "zeta-failure.yaml"):
        _, problems = load_entry(corpus / name)
        errors = [p for p in problems if p.severity == "error" and p.code in ("E002", "E030")]
        reference.append(sorted(errors, key=Problem.sort_key)[0])
    assert found.skipped == tuple(reference)  # the first problem, as `check` locates it
    monkeypatch.chdir(corpus.parent)
    assert [p.location.path for p in catalogue.load(corpus).skipped] == [
        "entries/broken-entry.yaml",
        "entries/zeta-failure.yaml",
    ]
    entries, problems = catalogue.usable(corpus)
    assert entries == [alpha] and [p.code for p in problems] == ["E002", "E030"]


def test_an_entry_with_only_warnings_or_a_broken_link_is_usable(
    corpus: Path, alpha: EntryView
) -> None:
    text = (corpus / "alpha-failure.yaml").read_text(encoding="utf-8")
    (corpus / "alpha-failure.yaml").write_text(
        text.replace("related: [beta-failure]", "related: [nowhere-failure]")
    )
    found = catalogue.load(corpus)
    assert [e.id for e in found.entries] == ["alpha-failure"] and found.skipped == ()


def test_entries_are_sorted_by_id_whatever_their_file_names(corpus: Path) -> None:
    text = (corpus / "alpha-failure.yaml").read_text(encoding="utf-8")
    (corpus / "a-file.yaml").write_text(text.replace("id: alpha-failure", "id: zulu-failure"))
    ids = [e.id for e in catalogue.load(corpus).entries]
    assert ids == ["alpha-failure", "zulu-failure"]


def test_a_store_is_written_once_then_read_without_compiling(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, count_compiles: Callable[[], list[str]]
) -> None:
    store = Memory()
    first = catalogue.load(corpus, store)
    assert store.writes == 1 and catalogue.loads(store.data) is not None
    assert store.roots == {corpus}  # the store keeps one artifact per folder
    compiled = count_compiles()
    assert catalogue.load(corpus, store) == first
    assert compiled == []  # (written again with the files' stats, which were too recent)


def test_a_changed_file_is_compiled_again_and_no_other(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, count_compiles: Callable[[], list[str]]
) -> None:
    text = (corpus / "alpha-failure.yaml").read_text(encoding="utf-8")
    (corpus / "b-failure.yaml").write_text(text.replace("id: alpha-failure", "id: b-failure"))
    store = Memory()
    catalogue.load(corpus, store)
    compiled = count_compiles()
    (corpus / "b-failure.yaml").write_text(
        text.replace("id: alpha-failure", "id: b-failure").replace(
            "title: Alpha failure under FSDP", "title: Renamed"
        )
    )
    changed = catalogue.load(corpus, store)
    assert compiled == ["b-failure.yaml"] and store.writes == 2
    assert {e.id: e.title for e in changed.entries}["b-failure"] == "Renamed"


def test_records_of_other_code_or_no_hash_are_compiled_again(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, count_compiles: Callable[[], list[str]]
) -> None:
    hashes = catalogue.file_hashes(corpus)
    old = catalogue.compile_entries(corpus, hashes, "old code")
    compiled = count_compiles()
    assert catalogue.compile_entries(corpus, hashes, "old code", [None, old]) == old
    assert compiled == []
    again = catalogue.compile_entries(corpus, hashes, "new code", [old])
    assert compiled == ["alpha-failure.yaml"] and again.code == "new code"
    assert again.key == catalogue.corpus_key("new code", hashes)
    unhashed = {"alpha-failure.yaml": ""}
    forged = replace(old, files={"alpha-failure.yaml": ("", None, None)})
    catalogue.compile_entries(corpus, unhashed, "old code", [forged])
    assert compiled == ["alpha-failure.yaml"] * 2  # an unreadable file is never reused


def test_a_damaged_store_is_compiled_over(corpus: Path) -> None:
    store = Memory(b"\x00garbage")
    found = catalogue.load(corpus, store)
    assert [e.id for e in found.entries] == ["alpha-failure"]
    assert catalogue.loads(store.data) is not None


def test_the_shipped_artifact_is_used_when_it_was_made_from_these_files(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count_compiles: Callable[[], list[str]],
) -> None:
    hashes = catalogue.file_hashes(corpus)
    made = catalogue.compile_entries(corpus, hashes, catalogue.code_key())
    shipped = tmp_path / "catalogue.json"
    shipped.write_bytes(catalogue.dumps(made))
    compiled = count_compiles()
    store = Memory()
    assert catalogue.load(corpus, store, shipped) == catalogue.catalogue(made, corpus)
    assert compiled == [] and store.writes == 0  # nothing to compile, nothing to keep
    (corpus / "alpha-failure.yaml").write_text(
        (corpus / "alpha-failure.yaml").read_text() + "\n# changed\n"
    )
    catalogue.load(corpus, store, shipped)
    assert compiled == ["alpha-failure.yaml"] and store.writes == 1


def test_the_shipped_records_are_reused_for_the_files_that_did_not_change(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count_compiles: Callable[[], list[str]],
) -> None:
    made = catalogue.compile_entries(corpus, catalogue.file_hashes(corpus), catalogue.code_key())
    shipped = tmp_path / "catalogue.json"
    shipped.write_bytes(catalogue.dumps(made))
    text = (corpus / "alpha-failure.yaml").read_text(encoding="utf-8")
    (corpus / "b-failure.yaml").write_text(text.replace("id: alpha-failure", "id: b-failure"))
    compiled = count_compiles()
    found = catalogue.load(corpus, None, shipped)
    assert compiled == ["b-failure.yaml"]
    assert [e.id for e in found.entries] == ["alpha-failure", "b-failure"]


def test_a_missing_shipped_artifact_is_no_error(corpus: Path, tmp_path: Path) -> None:
    found = catalogue.load(corpus, None, tmp_path / "missing.json")
    assert [e.id for e in found.entries] == ["alpha-failure"]
    os.mkdir(tmp_path / "a-folder.json")
    assert catalogue.load(corpus, None, tmp_path / "a-folder.json") == found


def test_the_first_problem_of_a_file_with_several_is_the_first_in_the_file(corpus: Path) -> None:
    (corpus / "thin-entry.yaml").write_text("id: thin-entry\ntitle: Thin\n", encoding="utf-8")
    _, problems = load_entry(corpus / "thin-entry.yaml")
    errors = sorted((p for p in problems if p.severity == "error"), key=Problem.sort_key)
    assert len(errors) > 1
    (skipped,) = catalogue.load(corpus).skipped
    assert (skipped.code, skipped.message) == (errors[0].code, errors[0].message)


def test_a_folder_unchanged_since_its_store_was_written_is_not_read_again(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stats vouch for a file only when it is older than the artifact by the coarsest clock
    (2 s): then no entry file is read, as git trusts its index."""
    time.sleep(2.1)
    store = Memory()
    first = catalogue.load(corpus, store)
    read: list[str] = []
    real = catalogue._hash
    monkeypatch.setattr(catalogue, "_hash", lambda path: (read.append(path.name), real(path))[1])
    assert catalogue.load(corpus, store) == first and read == []
    (corpus / "alpha-failure.yaml").write_text(
        (corpus / "alpha-failure.yaml").read_text(encoding="utf-8") + "\n# changed\n"
    )
    catalogue.load(corpus, store)
    assert read == ["alpha-failure.yaml"]  # changed since: hashed again
