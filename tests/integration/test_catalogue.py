"""The compiled catalogue (`diagnosis/catalogue.py`): what a diagnosis reads instead of loading
every entry, equal to what full loading gives, never stale, never trusted when damaged."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, gathered_entries

from nanopedia.content.catalog import Catalog
from nanopedia.content.corpus import gather
from nanopedia.diagnosis import (
    catalogue,
    contract,
    prefilter,
    rank,
    report,
    scan,
    text_report,
    versions,
)
from nanopedia.errors import Problem
from nanopedia.incremental.catalogue import FolderStore

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import cases, materialise  # noqa: E402

ENTRIES = ROOT / "entries"
ERROR = "[rank3]: RuntimeError: expected scalar type BFloat16 but found Float\n"


def reference(
    gathered: tuple[Catalog, list[Problem]],
) -> tuple[list[catalogue.EntryView], list[Problem]]:
    """What diagnosis used before the catalogue (`scan.usable_entries` of issue 31): the whole
    folder gathered, the files that did not load or hold an unusable pattern left out, each
    with its first error."""
    found, problems = gathered
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
    return reference(gathered_entries())


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
        gathered_entries()[0].entries
    )


def test_diagnose_output_is_the_same_as_from_the_loaded_entries(
    full, compiled, tmp_path: Path
) -> None:
    """Every labelled log (tests/logs, tests/logs/real) in every format, byte for byte."""
    loaded = {e.id: e for e in gathered_entries()[0].entries}
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


def test_a_diagnosis_of_the_entries_the_prefilter_picks_is_that_of_them_all(
    tmp_path: Path,
) -> None:
    """Every labelled log, read as `diagnose` reads a small log (held, prefiltered, scanned from
    memory), gives the diagnosis and reports that the whole catalogue gives, from fewer
    entries."""
    artifact = catalogue.compiled(ENTRIES)
    every = catalogue.catalogue(artifact, ENTRIES).entries
    views = {e.id: e for e in every}
    whole = scan.Matcher(every)
    picked = held_cases = 0
    for case in cases():
        paths = [str(p) for p in materialise(case, tmp_path)]
        held = [prefilter.hold(p) for p in paths]
        if None in held:
            continue
        held_cases += 1
        names = artifact.prefilter.candidates(prefilter.normalised(h) for h in held if h)
        some = catalogue.catalogue(artifact, ENTRIES, names).entries
        picked += len(some)
        few = scan.Matcher(some)
        before = rank.diagnose([scan.scan_file(p, whole) for p in paths])
        after = rank.diagnose(
            [
                scan.scan(io.BytesIO(h or b""), p, few, None, None, prefilter.HELD_BYTES)
                for p, h in zip(paths, held, strict=True)
            ]
        )
        assert _by_probe(after, few) == _by_probe(before, whole), case.name
        for fmt in (text_report.as_text, report.as_markdown):
            assert fmt(after, views, None, 3, ()) == fmt(before, views, None, 3, ()), case.name
    assert held_cases > 50
    assert picked < held_cases * len(every) / 4  # it does leave entries out


def _by_probe(diagnosis: rank.Diagnosis, matcher: scan.Matcher) -> rank.Diagnosis:
    """`diagnosis` with its lines counted by (entry, fingerprint), not by the matcher's index."""
    return replace(
        diagnosis,
        files=tuple(
            replace(
                f,
                counts={
                    (matcher.probes[i].entry_id, matcher.probes[i].fingerprint.id): n
                    for i, n in f.counts.items()
                },
            )
            for f in diagnosis.files
        ),
    )


def test_an_entry_with_a_pattern_without_literals_is_picked_for_every_log() -> None:
    index = prefilter.build(
        [("oom.yaml", "CUDA out of memory"), ("any.yaml", r"\d+ (?:x|y)"), ("ab.yaml", "ab|cde")]
    )
    assert prefilter.literals("ab|cde") is None  # `ab` is too short to be required text
    assert index.candidates([b"nothing to see\n"]) == {"any.yaml", "ab.yaml"}
    assert index.candidates([b"RuntimeError: CUDA Out Of Memory\n"]) == {
        "any.yaml",
        "ab.yaml",
        "oom.yaml",
    }


def test_only_the_literals_of_one_alternative_must_all_occur() -> None:
    index = prefilter.build([("e.yaml", "NCCL error: unhandled|watchdog .* timed out")])
    assert index.candidates([b"[rank0] watchdog caught: collective timed out\n"]) == {"e.yaml"}
    assert index.candidates([b"NCCL error: (unhandled system error)\n"]) == {"e.yaml"}
    assert index.candidates([b"NCCL error and a watchdog\n"]) == set()


def test_a_file_as_recent_as_its_artifact_is_not_vouched_for_by_its_stats() -> None:
    """A write within a timestamp's granularity of the hash leaves the stats as they were (git's
    racily clean entries): such a file is hashed again, an older one is not."""
    stamp = 100 * catalogue.RACY_NS
    stat = [10, stamp - catalogue.RACY_NS // 2, stamp - 5 * catalogue.RACY_NS, 7]
    old = [10, stamp - 3 * catalogue.RACY_NS, stamp - 3 * catalogue.RACY_NS, 8]
    artifact = replace(
        catalogue.compile_entries(ENTRIES, {}, "code"),
        stats={"recent.yaml": stat, "old.yaml": old, "changed.yaml": old},
        stamp=stamp,
    )
    found = {"recent.yaml": stat, "old.yaml": old, "changed.yaml": [11, *old[1:]]}
    assert catalogue.verified(artifact, found) == {"old.yaml"}
    rewritten = {"old.yaml": [10, old[1], stamp, 8]}  # the mtime put back, the ctime new
    assert catalogue.verified(artifact, rewritten) == set()


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = catalogue._hash

    def counted(path: Path) -> str:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(catalogue, "_hash", counted)
    return read


def test_an_unchanged_folder_is_known_from_its_stats_without_reading_a_file(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FolderStore(tmp_path / "cache")
    first = catalogue.load(corpus, store)  # every file just copied: all recent, all read
    monkeypatch.setattr(catalogue, "RACY_NS", -60 * 10**9)  # as if copied a minute before
    read = _hashed(monkeypatch)
    assert catalogue.load(corpus, store) == first and read == []
    path = corpus / "fsdp-uniform-dtype.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert catalogue.load(corpus, store) == first and read == ["fsdp-uniform-dtype.yaml"]


def test_an_edit_that_keeps_the_size_and_mtime_of_a_file_is_seen(
    corpus: Path, tmp_path: Path
) -> None:
    store = FolderStore(tmp_path / "cache")
    catalogue.load(corpus, store)
    path = corpus / "fsdp-uniform-dtype.yaml"
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    same = "title: " + "X" * (len(title.encode()) - len("title: "))
    path.write_text(text.replace(title, same, 1), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    by_id = {e.id: e for e in catalogue.load(corpus, store).entries}
    assert by_id["fsdp-uniform-dtype"].title == same.removeprefix("title: ")


SAMPLE = sorted({*sorted(ENTRIES.glob("*.yaml"))[::8], ENTRIES / "fsdp-uniform-dtype.yaml"})
"""Every eighth entry and the one the tests edit, with the tag registry among them: the cache's
rules do not depend on how many entries there are, and compiling all of them took most of each
test's time."""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of some of the encyclopedia's entries, to be changed."""
    root = tmp_path / "entries"
    root.mkdir()
    for path in SAMPLE:
        shutil.copy(path, root)
    return root


def test_a_changed_entry_is_compiled_again_and_no_other(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count_compiles: Callable[[], list[str]],
) -> None:
    store = FolderStore(tmp_path / "cache")
    first = catalogue.load(corpus, store)
    compiled = count_compiles()
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
    assert changed == catalogue.Catalogue(*map(tuple, reference(gather(corpus))))
    path.write_text(text, encoding="utf-8")  # back as it was: the old record is not kept
    assert catalogue.load(corpus, store) == first
    assert compiled == ["fsdp-uniform-dtype.yaml"] * 2


def test_a_record_of_other_code_is_not_reused(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count_compiles: Callable[[], list[str]],
) -> None:
    store = FolderStore(tmp_path / "cache")
    catalogue.load(corpus, store)
    monkeypatch.setattr(catalogue, "code_key", lambda: "another version of the code")
    compiled = count_compiles()
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
        "wrong shape": b'{"format":2,"key":"k","code":"c","files":{"a.yaml":3},"records":0}\n',
        "other format": data.replace(b'"format":2', b'"format":999', 1),
    }[damage]
    assert bad != data
    store.path(corpus).write_bytes(bad)
    assert catalogue.load(corpus, store) == good
    again = catalogue.loads(store.read(corpus))
    assert again is not None and again == replace(catalogue.loads(data), stamp=again.stamp)


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
    views, skipped = reference(gather(corpus))
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
        f"nanopedia: warning: {p.location}" for p in reference(gather(corpus))[1]
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
