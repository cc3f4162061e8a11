"""`nanopedia/diagnosis/versions.py`: the versions a log shows, read from the dumps people paste,
and set against an entry's affected ranges."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nanopedia.diagnosis import versions
from nanopedia.diagnosis.catalogue import EntryView, RangeView, SystemView
from nanopedia.model import Range

#: A line of each dump people paste, and the (package, version) it shows.
LINES = [
    ("PyTorch version: 2.4.0+cu121", ("torch", "2.4.0+cu121")),
    ("- PyTorch version (GPU?): 2.3.0+cu121 (True)", ("torch", "2.3.0+cu121")),
    ("CUDA used to build PyTorch: 12.1", ("cuda", "12.1")),
    ("Nvidia driver version: 535.104.05", ("nvidia-driver", "535.104.05")),
    (
        "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |",
        ("nvidia-driver", "535.104.05"),
    ),
    (
        "Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)",
        ("python", "3.10.12"),
    ),
    ("[pip3] torch==2.1.2", ("torch", "2.1.2")),
    ("[pip3] Huggingface_Hub==0.24.5", ("huggingface-hub", "0.24.5")),
    ("transformers==4.46.3", ("transformers", "4.46.3")),
    (
        "[conda] torch                     2.2.0           py3.10_cuda12.1_cudnn8.9.2_0    pytorch",
        ("torch", "2.2.0"),
    ),
    ("- `transformers` version: 4.40.0", ("transformers", "4.40.0")),
    ("- Accelerate version: 0.30.1", ("accelerate", "0.30.1")),
    ("- DeepSpeed version: 0.14.2", ("deepspeed", "0.14.2")),
    ("- Huggingface_hub version: 0.24.5", ("huggingface-hub", "0.24.5")),
    ("- Safetensors version: 0.4.3", ("safetensors", "0.4.3")),
    ("Using transformers version: 4.41.2", ("transformers", "4.41.2")),
    (
        "[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: "
        "version=0.14.0, git-hash=unknown, git-branch=unknown",
        ("deepspeed", "0.14.0"),
    ),
    ("deepspeed info ................... 0.12.3, unknown, unknown", ("deepspeed", "0.12.3")),
    ("torch version .................... 2.1.0+cu121", ("torch", "2.1.0+cu121")),
    ("node1:123:456 [0] NCCL INFO NCCL version 2.18.5+cuda12.2", ("nccl", "2.18.5+cuda12.2")),
]


@pytest.mark.parametrize(("line", "shown"), LINES, ids=[s[0] for _, s in LINES])
def test_each_dump_names_its_package_and_version(line: str, shown: tuple[str, str]) -> None:
    found = versions.find(["step 1 loss 2.31", line], "job.log")
    assert [(s.package, s.version, s.line) for s in found] == [(*shown, 2)]


def test_each_pattern_is_passed_over_only_where_its_required_texts_are_missing() -> None:
    """Every pattern has texts all its matches hold (without, it is tried on every line of a
    log's ends), and each dump line above holds those of the pattern that finds it."""
    for (pattern, _), needles in zip(versions._PATTERNS, versions._NEEDLES, strict=True):
        assert needles, pattern.pattern
        found = [line for line, _ in LINES if pattern.search(line)]
        assert found, pattern.pattern
        for line in found:
            assert any(all(n in line.lower() for n in b) for b in needles), (pattern, line)


@pytest.mark.parametrize(
    "line",
    [
        "epoch 2.5 loss==0.31",  # no package name before ==
        "Traceback (most recent call last):",
        "loss: 1.25, lr: 0.0001",
        "torch version is fine",
        "x" * 500 + " torch==2.1.0",  # longer than any banner
    ],
)
def test_lines_that_show_no_version_give_none(line: str) -> None:
    assert versions.find([line], "job.log") == []


def test_the_first_sighting_of_a_package_is_kept() -> None:
    found = versions.find(["PyTorch version: 2.4.0", "[pip3] torch==2.3.0"], "a.log")
    assert [(s.package, s.version, s.line) for s in found] == [("torch", "2.4.0", 1)]


@pytest.mark.parametrize(
    ("version", "introduced", "fixed", "inside"),
    [
        ("2.4.0", "2.1", "2.5", True),
        ("2.5.0", "2.1", "2.5", False),  # fixed is the first release without it
        ("2.1", "2.1.0", None, True),  # introduced is the first release with it
        ("2.0.9", "2.1", None, False),
        ("2.4.0+cu121", "0", "2.4.0", False),  # a local build is its release: 2.4.0 is fixed
        ("2.3.1+cu118", "0", "2.4.0", True),
        ("2.6.0rc1", "2.6.0", None, False),  # a pre-release comes before its release
        ("not-a-version", "0", None, None),
    ],
)
def test_ranges_are_compared_as_pep_440_versions(
    version: str, introduced: str, fixed: str | None, inside: bool | None
) -> None:
    assert versions.in_range(version, introduced, fixed) is inside


def _system(package: str, *spans: tuple[str, str | None]) -> SystemView:
    ranges = [Range(introduced=i, fixed=f) for i, f in spans]
    return SystemView(
        "PyTorch", package, tuple(RangeView(r.introduced, r.fixed, r.words()) for r in ranges)
    )


def _entry(*systems: SystemView) -> EntryView:
    return EntryView("e", "E", (), (), (), systems)


def test_fits_say_in_or_outside_for_each_system_with_a_package_the_log_shows() -> None:
    seen = versions.find(["PyTorch version: 2.4.0", "[pip3] Huggingface_Hub==0.24.5"], "job.log")
    entry = _entry(
        _system("torch", ("2.1", "2.3"), ("2.4.0", None)),
        _system("torch", ("0", "2.4")),
        _system("deepspeed", ("0", None)),
        _system("huggingface_hub", ("0.25", None)),
    )
    got = versions.fits(seen, entry)
    assert [(f.package, f.affected, f.ranges) for f in got] == [
        ("torch", True, "2.1 to before 2.3; from 2.4.0"),
        ("torch", False, "before 2.4"),
        ("huggingface-hub", False, "from 0.25"),
    ]
    assert (got[0].file, got[0].line) == ("job.log", 1)


def test_a_file_is_read_at_both_ends_and_the_tail_keeps_its_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    middle = [f"step {i} loss 1.0" for i in range(300_000)]  # about 5 MB between the dumps
    lines = ["PyTorch version: 2.4.0", *middle, "[pip3] deepspeed==0.14.0", "Killed"]
    log.write_text("\n".join(lines) + "\n")
    assert log.stat().st_size > 3 * versions.EDGE_BYTES
    found = versions.read(str(log), "big.log", len(lines))
    assert [(s.package, s.version, s.line) for s in found] == [
        ("torch", "2.4.0", 1),
        ("deepspeed", "0.14.0", len(lines) - 1),
    ]


def test_a_gzip_log_and_a_small_log_are_read_whole(tmp_path: Path) -> None:
    packed = tmp_path / "job.log.gz"
    packed.write_bytes(gzip.compress(b"a\nNCCL INFO NCCL version 2.21.5+cuda12.4\n"))
    assert [(s.package, s.line) for s in versions.read(str(packed), "job", 2)] == [("nccl", 2)]
    assert versions.read("-", "<stdin>", 10) == []  # read once by the scan: not again


@pytest.fixture
def small_edges(monkeypatch: pytest.MonkeyPatch) -> int:
    """Ends of 64 bytes, so that a test's log is many times larger than what is read."""
    monkeypatch.setattr(versions, "EDGE_BYTES", 64)
    return 64


def _pip_line_across_the_first_edge() -> bytes:
    """A log of 101 bytes whose pip line crosses byte 64, where the head ends."""
    return b"x" * 50 + b"\n[pip3] pytorch-triton==3.0.0\n" + b"y" * 20 + b"\n"


def test_a_line_across_the_heads_end_is_read_whole_from_a_file_and_from_memory(
    tmp_path: Path, small_edges: int
) -> None:
    """A log under twice the edge is one text: the pip line cut by the head's end once read as
    package `h-triton` (#39)."""
    data = _pip_line_across_the_first_edge()
    assert small_edges < data.index(b"==") and len(data) <= 2 * small_edges
    log = tmp_path / "a.log"
    log.write_bytes(data)
    wanted = [versions.Seen("pytorch-triton", "3.0.0", "a.log", 2)]
    assert versions.read(str(log), "a.log", 3) == wanted
    assert versions.from_bytes(data, "a.log") == wanted


def test_both_ends_of_a_large_log_are_read_their_cut_lines_left_out(
    tmp_path: Path, small_edges: int
) -> None:
    head = b"PyTorch version: 2.4.0\n[pip3] numpy==1.0.0\n" + b"#" * 11 + b"\n[pip3] nu"
    middle = b"\n" + b"step\n" * 40
    tail = b"[pip3] numpy==2.0.0\n[pip3] deepspeed==0.14.0\nKilled\n"
    data = head + middle + b"[pip3] nccl==9.9\n" + tail
    assert len(data) > 2 * small_edges and len(head) == small_edges
    lines = data.count(b"\n")
    log = tmp_path / "big.log"
    log.write_bytes(data)
    wanted = [
        ("torch", "2.4.0", 1),
        ("numpy", "1.0.0", 2),  # the head's sighting is kept
        ("deepspeed", "0.14.0", lines - 1),
    ]
    got = versions.read(str(log), "big.log", lines)
    assert [(s.package, s.version, s.line) for s in got] == wanted
    got = versions.from_bytes(data, "big.log")
    assert [(s.package, s.version, s.line) for s in got] == wanted
    unended = data.removesuffix(b"\n")
    got = versions.from_bytes(unended, "big.log")
    assert [s.line for s in got][-1] == lines - 1


def test_the_versions_of_a_jobs_logs_keep_each_packages_first_sighting(tmp_path: Path) -> None:
    class Scan:
        def __init__(self, file: str, lines: int) -> None:
            self.file, self.lines = file, lines

    log = tmp_path / "a.log"
    log.write_bytes(b"PyTorch version: 2.4.0\n")
    logs: list[str | tuple[str, bytes]] = [
        str(tmp_path / "gone.log"),
        str(log),
        ("b.log", b"[pip3] torch==2.5.0\n[pip3] numpy==1.0\n"),
    ]
    scans = [Scan("gone.log", 1), Scan("a.log", 1), Scan("b.log", 2)]
    assert versions.read_all(logs, scans) == [
        versions.Seen("torch", "2.4.0", "a.log", 1),
        versions.Seen("numpy", "1.0", "b.log", 2),
    ]


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("PyTorch version: 2.4.0" + " " * 378, True),  # 400 characters: read
        ("PyTorch version: 2.4.0" + " " * 379, False),  # longer: no banner is that long
        ("x==1.0", True),
        ("x==", False),
    ],
)
def test_only_lines_of_at_most_400_characters_with_a_digit_are_read(line: str, found: bool) -> None:
    assert bool(versions.find([line], "a.log")) is found


@pytest.mark.parametrize(
    ("name", "normal"),
    [("Huggingface_Hub", "huggingface-hub"), ("a.b__c--d", "a-b-c-d"), ("torch", "torch")],
)
def test_package_names_are_compared_as_pypi_does(name: str, normal: str) -> None:
    assert versions.normalise(name) == normal


def test_a_system_whose_ranges_cannot_be_compared_gives_no_fit() -> None:
    seen = versions.find(["PyTorch version: 2.4.0"], "job.log", 7)
    assert seen[0].line == 7
    assert versions.fits(seen, _entry(_system("torch", ("not-a-version", None)))) == []
    assert versions.in_range("2.4.0", "0", "nope") is None
    assert versions.in_range("2.4.0", "nope", None) is None


def test_a_jobs_large_log_numbers_its_tail_by_the_scans_line_count(
    tmp_path: Path, small_edges: int
) -> None:
    class Scan:
        def __init__(self, file: str, lines: int) -> None:
            self.file, self.lines = file, lines

    log = tmp_path / "big.log"
    log.write_bytes(b"step\n" * 40 + b"[pip3] numpy==2.0.0\nend\n")
    assert log.stat().st_size > 2 * small_edges
    assert versions.read_all([str(log)], [Scan("big.log", 42)]) == [
        versions.Seen("numpy", "2.0.0", "big.log", 41)
    ]
    with pytest.raises(ValueError):  # a log without its scan is the caller's mistake
        versions.read_all([str(log), str(log)], [Scan("big.log", 42)])


def test_every_system_is_set_against_the_versions_even_after_one_the_log_does_not_show() -> None:
    seen = versions.find(["[pip3] torch==2.4.0"], "job.log")
    entry = _entry(_system("deepspeed", ("0", None)), _system("torch", ("2.1", "2.5")))
    assert versions.fits(seen, entry) == [
        versions.Fit("torch", "2.4.0", "PyTorch", True, "2.1 to before 2.5", "job.log", 1)
    ]


def _read_both(data: bytes, folder: Path) -> tuple[list[versions.Seen], list[versions.Seen]]:
    """What the versions of `data` are, held in memory and read from a file."""
    log = folder / "a.log"
    log.write_bytes(data)
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    return versions.from_bytes(data, "a.log"), versions.read(str(log), "a.log", lines)


def test_a_log_is_read_at_both_ends_and_nothing_cut_is_misread(
    tmp_path: Path, small_edges: int
) -> None:
    """Up to twice the edge a log is one text; past it the ends are read, each without the
    line the cut runs through (a version cut short, `numpy==1.2` of `1.23.0`, or a name cut,
    `rch` of `torch`), and a line in between not at all. In memory and from a file alike."""
    line = b"[pip3] pytorch-triton==3.0.0\n"
    whole = b"x" * 50 + b"\n" + line + b"y" * (128 - 51 - len(line) - 1) + b"\n"
    assert len(whole) == 2 * small_edges
    for got in _read_both(whole, tmp_path):
        assert [s.package for s in got] == ["pytorch-triton"]
    unended = b"x" * 50 + b"\n[pip3] torch==2.1.0"
    for got in _read_both(unended, tmp_path):
        assert [(s.package, s.line) for s in got] == [("torch", 2)]
    head = b"PyTorch version: 2.4\n[pip3] accelerate==0.30.1\n[pip3] numpy==1.2"
    assert len(head) == small_edges
    middle = b"3.0\n" + b"[pip3] mid==1.0\n" + b"s\n" * 5 + b"[pip3] to"
    tail = b"rch==9.9\n[pip3] deepspeed==0.14.0\n" + b"z" * 29 + b"\n"
    assert len(tail) == small_edges
    data = head + middle + tail
    assert 2 * small_edges < len(data) < 3 * small_edges
    lines = data.count(b"\n")
    for got in _read_both(data, tmp_path):
        assert got == [
            versions.Seen("torch", "2.4", "a.log", 1),
            versions.Seen("accelerate", "0.30.1", "a.log", 2),
            versions.Seen("deepspeed", "0.14.0", "a.log", lines - 1),
        ]
    at_break = head + middle + b"\n[pip3] deepspeed==0.14.0\n" + b"z" * 37 + b"\n"
    assert at_break[-small_edges:][:1] == b"\n"  # the tail starts at a line break
    for got in _read_both(at_break, tmp_path):
        assert [s.package for s in got] == ["torch", "accelerate", "deepspeed"]
    for got in _read_both(b"ok \xc3\x28\n[pip3] torch==2.0.0\n", tmp_path):
        assert [s.version for s in got] == ["2.0.0"]  # bytes that are no UTF-8 are replaced


def test_a_gzip_log_is_read_for_its_head_only(tmp_path: Path, small_edges: int) -> None:
    head = b"PyTorch version: 2.4\n[pip3] accelerate==0.30.1\n[pip3] numpy==1.2"
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(head + b"3.0\n" + b"s\n" * 50 + b"[pip3] tail==1.0\n"))
    assert [s.package for s in versions.read(str(packed), "a.log", 54)] == ["torch", "accelerate"]


def test_a_system_whose_ranges_cannot_be_compared_does_not_hide_the_next() -> None:
    seen = versions.find(["[pip3] torch==2.4.0", "[pip3] numpy==1.0"], "job.log")
    entry = _entry(_system("torch", ("not-a-version", None)), _system("numpy", ("0.5", None)))
    assert [(f.package, f.affected) for f in versions.fits(seen, entry)] == [("numpy", True)]
