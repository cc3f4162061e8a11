"""How `triage` finds a fleet's jobs (`diagnosis/jobs.py`): which log files are diagnosed together,
the order they come in, and what is left out and why. Small trees in a temporary folder; the
fleet-sized runs are in tests/integration/test_triage.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanopedia.diagnosis import jobs
from nanopedia.diagnosis.jobs import Job, Skip, TriageError, find_jobs, glob_regex


def _write(root: Path, *rels: str) -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("step 1\n", encoding="utf-8")


def _found(items: object, root: Path) -> list[tuple[str, ...]]:
    def r(p: str) -> str:
        return Path(p).relative_to(root).as_posix() if os.path.isabs(p) else p

    return [
        (r(i.name), i.layout, *map(r, i.files))
        if isinstance(i, Job)
        else ("skip", r(i.path), i.reason, r(i.job) if i.job else "")
        for i in items  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        (["rank10", "rank2", "rank1"], ["rank1", "rank2", "rank10"]),
        (["attempt_10", "attempt_9"], ["attempt_9", "attempt_10"]),
        (["b", "a10", "a9"], ["a9", "a10", "b"]),
        (["x1y10", "x1y9", "x01y9"], ["x1y9", "x01y9", "x1y10"]),
    ],
)
def test_names_sort_with_their_numbers_compared_as_numbers(
    names: list[str], ordered: list[str]
) -> None:
    assert sorted(names, key=jobs.natural) == ordered
    assert jobs.natural("rank12.log") == ("rank", 12, ".log")


@pytest.mark.parametrize(
    ("name", "log"),
    [
        ("a.log", True),
        ("a.out", True),
        ("a.err", True),
        ("a.txt", True),
        ("a.log.gz", True),
        ("a.txt.gz", True),
        ("a.gz", False),
        ("a.md", False),
        ("a.json", False),
        (".hidden.log", False),
        ("log", False),
        ("a.logx", False),
    ],
)
def test_log_files_are_named_log_out_err_or_txt_optionally_gzipped(name: str, log: bool) -> None:
    assert jobs.is_log_name(name) is log


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("runs/*", "runs/job-1", True),
        ("runs/*", "runs/a/job-1", False),
        ("runs/*", "runs/", True),
        ("**/job-?", "a/b/job-7", True),
        ("**/job-?", "job-7", True),
        ("**/job-?", "job-77", False),
        ("**", "a/b/c", True),
        ("a**", "a/b", True),
        ("job-?", "job-/", False),
        ("job-[!0-4]", "job-7", True),
        ("job-[!0-4]", "job-3", False),
        ("job-[12]", "job-2", True),
        ("job-[12]", "job-3", False),
        ("job-[]x]", "job-]", True),
        ("job-[]x]", "job-x", True),
        ("job-[\\]", "job-\\", True),
        ("./runs/x/", "runs/x", True),
        ("  runs/x  ", "runs/x", True),
        ("a.b", "aXb", False),
        ("a+b", "a+b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/c", False),
        ("ab**", "abc/d", True),
        ("a**b", "a/xc", False),
        ("a**b", "a/xb", True),
        ("jobX", "jobX", True),
        ("job-?x", "job-1x", True),
        ("job-?x", "job-1y", False),
        ("[a].[b]", "axb", False),
        ("[a].[b]", "a.b", True),
        ("job-[\\]", "job-X", False),
        ("[ab]c", "ac", True),
    ],
)
def test_a_job_pattern_is_a_glob_per_path_segment(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("", "--job-pattern is empty"),
        (" ./ ", "--job-pattern is empty"),
        ("job-[12", "--job-pattern 'job-[12': '[' at 5 is never closed"),
        ("x[]", "--job-pattern 'x[]': '[' at 2 is never closed"),
    ],
)
def test_a_bad_job_pattern_is_refused_saying_where(pattern: str, says: str) -> None:
    with pytest.raises(TriageError) as err:
        glob_regex(pattern)
    assert str(err.value) == says


def test_the_reasons_a_file_is_left_out_name_the_limits() -> None:
    assert jobs.SKIP_REASONS["binary"] == "NUL bytes in its first 256 KiB: not a text log"
    assert jobs.SKIP_REASONS["single-line"] == (
        f"no line break in its first {jobs.MAX_LINE_BYTES >> 20} MiB: not a log"
    )
    assert Skip("a.log", "binary", "d", "job").as_json() == {
        "path": "a.log",
        "reason": "binary",
        "detail": "d",
        "job": "job",
    }


def test_each_layout_is_a_job_in_natural_order_with_what_is_left_out(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "ranks/rank10.log",
        "ranks/rank2.log",
        "ranks/launcher.log",
        "ranks/rank3.json",
        "ranks/notes.md",
        "ranks/nested/worker-0.err",
        "run/attempt_10/0/stderr.log",
        "run/attempt_9/1/stdout.log",
        "run/attempt_9/0/error.json",
        "run/attempt_9/0/notes.md",
        "slurm-12.out",
        "slurm-9.out",
        "solo/job.txt",
        "docs/readme.md",
        "std/0/stdout.log",
        "std/1/stderr.log",
        "half/0/stdout.log",
        "half/1/other.log",
    )
    (tmp_path / "empty").mkdir()
    (tmp_path / "run" / "attempt_11").mkdir()
    os.symlink(tmp_path / "slurm-9.out", tmp_path / "link.log")
    os.symlink(tmp_path / "gone", tmp_path / "broken.log")
    os.symlink(tmp_path / "gone", tmp_path / "broken.md")
    os.mkfifo(tmp_path / "pipe.log")
    os.symlink(tmp_path / "gone", tmp_path / "run" / "attempt_9" / "1" / "gone.log")
    assert _found(find_jobs([tmp_path]), tmp_path) == [
        ("skip", "broken.log", "unreadable", ""),
        ("skip", "link.log", "not-regular", ""),
        ("skip", "pipe.log", "not-regular", ""),
        ("slurm-9.out", "file", "slurm-9.out"),
        ("slurm-12.out", "file", "slurm-12.out"),
        ("skip", "empty", "empty-folder", ""),
        ("half/0/stdout.log", "file", "half/0/stdout.log"),
        ("half/1/other.log", "file", "half/1/other.log"),
        ("ranks", "ranks", "ranks/launcher.log", "ranks/rank2.log", "ranks/rank3.json",
         "ranks/rank10.log"),
        ("ranks/nested", "ranks", "ranks/nested/worker-0.err"),
        ("skip", "run/attempt_9/1/gone.log", "unreadable", "run"),
        ("run", "torchrun", "run/attempt_9/0/error.json", "run/attempt_9/1/stdout.log",
         "run/attempt_10/0/stderr.log"),
        ("solo/job.txt", "file", "solo/job.txt"),
        ("std", "torchrun", "std/0/stdout.log", "std/1/stderr.log"),
    ]  # fmt: skip
    skips = [i for i in find_jobs([tmp_path]) if isinstance(i, Skip)]
    assert [s.detail for s in skips[:3]] == [
        "a broken symbolic link",
        "a symbolic link (not followed: it may point outside the folder)",
        jobs.SKIP_REASONS["not-regular"],
    ]
    assert skips[3].detail == jobs.SKIP_REASONS["empty-folder"]


def test_a_run_folder_with_no_logs_and_a_folder_with_nothing_are_named_once(tmp_path: Path) -> None:
    (tmp_path / "run" / "attempt_0").mkdir(parents=True)
    _write(tmp_path, "run/attempt_0/notes.md", "docs/a.md")
    assert _found(find_jobs([tmp_path / "run"]), tmp_path) == [("skip", "run", "no-logs", "")]
    (skip,) = find_jobs([tmp_path / "docs"])
    assert (skip.path, skip.reason, skip.detail) == (  # type: ignore[union-attr]
        str(tmp_path / "docs"),
        "no-logs",
        "no log files below it (*.log, *.out, *.err, *.txt, optionally .gz; --job-pattern "
        "names other files)",
    )
    (tmp_path / "bare").mkdir()
    assert _found(find_jobs([tmp_path / "bare"]), tmp_path) == [
        ("skip", "bare", "empty-folder", "")
    ]


def test_paths_are_taken_in_the_order_given_and_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "runs/slurm-1.out", "ranks/rank0.log", "notes.md")
    os.mkfifo(tmp_path / "pipe.log")
    monkeypatch.chdir(tmp_path)
    assert _found(find_jobs(["pipe.log", "./runs/", "notes.md", "."]), tmp_path) == [
        ("skip", "pipe.log", "not-regular", ""),
        ("runs/slurm-1.out", "file", "runs/slurm-1.out"),
        ("notes.md", "file", "notes.md"),  # a file given by name is a job whatever its name
        ("skip", "pipe.log", "not-regular", ""),
        ("ranks", "ranks", "ranks/rank0.log"),
        ("runs/slurm-1.out", "file", "runs/slurm-1.out"),
    ]


def test_missing_paths_are_all_named_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(TriageError) as err:
        find_jobs([tmp_path / "a", tmp_path, tmp_path / "b"])
    assert str(err.value) == f"no such file or directory: {tmp_path / 'a'}, {tmp_path / 'b'}"


def test_a_job_pattern_names_folders_and_files_and_says_when_nothing_matches(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        "team-a/job-1/x.log",
        "team-a/job-1/sub/y.out",
        "team-a/other/z.log",
        "team-b/job-2/node1.log",
        "team-b/job-2/node0.log",
        "team-b/job-3/notes.md",
        "top.md",
    )
    os.symlink(tmp_path / "gone", tmp_path / "team-a" / "job-1" / "gone.log")
    os.symlink(tmp_path / "gone", tmp_path / "team-a" / "dead.log")
    assert _found(find_jobs([tmp_path], "team-*/job-*"), tmp_path) == [
        ("skip", "team-a/dead.log", "unreadable", ""),
        ("skip", "team-a/job-1/gone.log", "unreadable", "team-a/job-1"),
        ("team-a/job-1", "pattern", "team-a/job-1/sub/y.out", "team-a/job-1/x.log"),
        ("team-b/job-2", "pattern", "team-b/job-2/node0.log", "team-b/job-2/node1.log"),
        ("skip", "team-b/job-3", "no-logs", ""),
    ]
    assert _found(find_jobs([tmp_path], "**/*.md"), tmp_path) == [
        ("top.md", "pattern", "top.md"),  # a level's files come before its folders
        ("skip", "team-a/dead.log", "unreadable", ""),
        ("skip", "team-a/job-1/gone.log", "unreadable", ""),
        ("team-b/job-3/notes.md", "pattern", "team-b/job-3/notes.md"),
    ]
    assert [i for i in find_jobs([tmp_path], "*.md") if isinstance(i, Job)] == [
        Job(str(tmp_path / "top.md"), "pattern", (str(tmp_path / "top.md"),))
    ]
    details = {
        (i.path, i.detail)
        for i in find_jobs([tmp_path], "team-*/job-*")
        if isinstance(i, Skip) and i.job or (isinstance(i, Skip) and i.reason == "no-logs")
    }
    assert details == {
        (str(tmp_path / "team-a" / "job-1" / "gone.log"), "a broken symbolic link"),
        (str(tmp_path / "team-b" / "job-3"), jobs.SKIP_REASONS["no-logs"]),
    }
    nothing = list(find_jobs([tmp_path / "team-b"], "nope-*"))
    assert [(s.path, s.reason, s.detail) for s in nothing] == [  # type: ignore[union-attr]
        (str(tmp_path / "team-b"), "no-logs", "nothing below it matches --job-pattern 'nope-*'")
    ]


def test_every_log_below_a_folder_in_natural_order_and_every_file_on_request(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "r/10/a.log", "r/9/a.log", "r/9/b.json", "r/rank2.json", "r/x.bin")
    files, skips = jobs.logs_below(str(tmp_path / "r"))
    assert [Path(f).relative_to(tmp_path / "r").as_posix() for f in files] == [
        "9/a.log",
        "10/a.log",
        "rank2.json",
    ]
    assert skips == []
    every, _ = jobs.logs_below(str(tmp_path / "r"), every_file=True)
    assert [Path(f).relative_to(tmp_path / "r").as_posix() for f in every] == [
        "9/a.log",
        "9/b.json",
        "10/a.log",
        "rank2.json",
        "x.bin",
    ]


def test_a_folder_that_cannot_be_listed_is_named_unreadable(tmp_path: Path) -> None:
    listing = jobs._list(str(tmp_path / "nowhere"))
    assert (listing.empty, [(s.path, s.reason, s.detail) for s in listing.skips]) == (
        False,
        [(str(tmp_path / "nowhere"), "unreadable", "No such file or directory")],
    )
    assert jobs._join(os.curdir, "a.log") == "a.log"
    assert jobs._join("runs", "a.log") == os.path.join("runs", "a.log")


def test_a_job_pattern_walks_the_current_folder_as_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "runs/job-1/a.log", "top.log")
    monkeypatch.chdir(tmp_path)
    assert _found(find_jobs(["."], "runs/*"), tmp_path) == [
        ("runs/job-1", "pattern", "runs/job-1/a.log")
    ]
    assert _found(find_jobs(["."], "*.log"), tmp_path) == [("top.log", "pattern", "top.log")]


def test_links_to_folders_are_not_walked_and_a_given_pipe_says_why(tmp_path: Path) -> None:
    _write(tmp_path, "real/a.log", "top/b.log")
    os.symlink(tmp_path / "real", tmp_path / "top" / "linked")
    assert _found(find_jobs([tmp_path / "top"]), tmp_path) == [("top/b.log", "file", "top/b.log")]
    os.mkfifo(tmp_path / "pipe.log")
    (skip,) = find_jobs([tmp_path / "pipe.log"])
    assert (skip.reason, skip.detail) == (  # type: ignore[union-attr]
        "not-regular",
        "not a regular file (a pipe, socket or device)",
    )


def test_a_run_folders_skips_and_no_logs_say_why(tmp_path: Path) -> None:
    _write(tmp_path, "run/attempt_0/0/stderr.log")
    os.symlink(tmp_path / "gone", tmp_path / "run" / "attempt_0" / "0" / "x.log")
    (skip, job) = find_jobs([tmp_path / "run"])
    assert isinstance(skip, Skip) and isinstance(job, Job)
    assert (skip.reason, skip.detail, skip.job) == (
        "unreadable",
        "a broken symbolic link",
        str(tmp_path / "run"),
    )
    (tmp_path / "empty-run" / "attempt_0").mkdir(parents=True)
    (tmp_path / "empty-run" / "attempt_0" / "notes.md").write_text("x")
    (nothing,) = find_jobs([tmp_path / "empty-run"])
    assert (nothing.reason, nothing.detail) == ("no-logs", jobs.SKIP_REASONS["no-logs"])  # type: ignore[union-attr]


def test_an_entry_that_cannot_be_looked_at_is_skipped_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Entry:
        name = "locked.log"

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            raise PermissionError(13, "Permission denied")

    class Odd(Entry):
        name = "odd.log"

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            raise OSError("no reason given")

    class Listing:
        def __enter__(self) -> list[Entry]:
            return [Entry(), Odd()]

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(jobs.os, "scandir", lambda folder: Listing())
    listing = jobs._list("runs")
    assert listing.skips == [
        Skip(os.path.join("runs", "locked.log"), "unreadable", "Permission denied"),
        Skip(os.path.join("runs", "odd.log"), "unreadable", "no reason given"),
    ]
    assert listing.empty is False and listing.logs == []

    def refuse(folder: str) -> None:
        raise OSError("the share went away")

    monkeypatch.setattr(jobs.os, "scandir", refuse)
    assert jobs._list("runs").skips == [Skip("runs", "unreadable", "the share went away")]
