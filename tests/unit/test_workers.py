"""`nanopedia.diagnosis.workers`: a triage job's files read into one record; files that are no
log (binary, one huge line, too large, unreadable, past the deadline) are skipped by name, never
fatal, and no file is read past its limits."""

from __future__ import annotations

import gzip
import io
import json
import logging
import pickle
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from nanopedia.diagnosis import elastic, flight, logs, scan, workers
from nanopedia.diagnosis.catalogue import CauseView, EntryView, FingerprintView, FixView
from nanopedia.diagnosis.error_lines import ErrorLines
from nanopedia.diagnosis.hosts import SummaryHosts
from nanopedia.diagnosis.jobs import HEAD_BYTES, MAX_LINE_BYTES, SKIP_REASONS, Job, Skip

ERROR = "[rank1]: RuntimeError: boom"
ELASTIC = ROOT / "tests" / "logs" / "elastic"


def _fp(ident: str, pattern: str, indicates: str = "decisive") -> FingerprintView:
    return FingerprintView(ident, pattern, pattern, False, indicates, False, 9, "cause")  # type: ignore[arg-type]


def _entry(ident: str, *fps: FingerprintView, action: str = "fix-code") -> EntryView:
    cause = CauseView("cause", "The cause", "workload", action)
    return EntryView(ident, f"Title of {ident}", fps, (cause,), (FixView("Fix it", ()),))


ENTRIES = [
    _entry("boom", _fp("boom", "RuntimeError: boom")),
    _entry("maybe", _fp("warn", "NCCL WARN", "supporting"), action="retry"),
    _entry("quiet", _fp("note", "all fine", "benign")),
]


def _run(files: dict[str, Callable[[], Any]], **options: Any) -> dict[str, Any]:
    worker = workers.Worker(ENTRIES, workers.Options(**options))
    return worker.run_streams("job", "lines", list(files.items()))


def _lines(*lines: str | bytes) -> Callable[[], workers.Lines]:
    return lambda: workers.Lines(list(lines))


def _skips(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["path"], s["reason"]) for s in record["skipped"]]


# --- a job's record --------------------------------------------------------------------------


def test_a_job_with_a_decisive_line_is_matched_with_its_cause_and_action() -> None:
    record = _run({"rank1.log": _lines("step 1", ERROR, "step 2")})
    assert (record["status"], record["verdict"], record["confidence"]) == (
        "matched",
        "boom",
        "certain",
    )
    assert (record["domain"], record["action"]) == ("workload", "fix-code")
    assert (record["job"], record["layout"]) == ("job", "lines")
    assert record["initiating"]["line"] == 2 and record["initiating_rank"] == 1
    assert record["error_lines"] == [] and record["skipped"] == []
    assert record["lines"] == 3 and record["bytes"] == len("step 1\n" + ERROR + "\nstep 2\n")


def test_a_job_with_only_a_supporting_line_is_a_possible_verdict() -> None:
    record = _run({"a.log": _lines("NCCL WARN x")})
    assert (record["status"], record["verdict"], record["confidence"]) == (
        "matched",
        "maybe",
        "possible",
    )
    assert record["action"] == "retry"


def test_a_job_with_only_benign_lines_has_no_verdict_and_no_first_failure() -> None:
    record = _run({"a.log": _lines("all fine")})
    assert (record["status"], record["verdict"], record["confidence"]) == ("clean", None, None)
    assert record["domain"] is record["action"] is None
    assert record["initiating"] is record["initiating_rank"] is record["initiating_reason"] is None
    assert record["initiating_host"] is record["host_rule"] is None


def test_a_job_with_error_lines_no_entry_knows_is_unmatched_and_lists_them() -> None:
    record = _run({"a.log": _lines("step 1", "ValueError: odd 17", "ValueError: odd 18")})
    assert (record["status"], record["verdict"]) == ("unmatched", None)
    assert record["error_lines"] == [
        {
            "text": "ValueError: odd <n>",
            "count": 2,
            "example": "ValueError: odd 17",
            "file": "a.log",
            "line": 2,
        }
    ]


def test_a_job_whose_every_file_was_skipped_is_skipped() -> None:
    record = _run({"core.log": _lines(b"\0\0\0")})
    assert record["status"] == "skipped" and _skips(record) == [("core.log", "binary")]
    assert record["lines"] == 0 and record["bytes"] == 0


def test_a_job_of_no_files_is_skipped() -> None:
    assert _run({})["status"] == "skipped"


def test_evidence_is_cut_to_three_lines_of_500_characters_with_its_count() -> None:
    long = ERROR + " " + "x" * 900
    record = _run({"a.log": _lines(*[long] * 5)})
    (row,) = [m for m in record["matches"] if m["id"] == "boom"]
    assert row["evidence_count"] == 5 and len(row["evidence"]) == workers.EVIDENCE_KEPT == 3
    assert all(len(e["text"]) == workers.EVIDENCE_CHARS == 500 for e in row["evidence"])
    assert len(record["initiating"]["text"]) == 500


def test_the_top_option_bounds_the_candidates() -> None:
    lines = _lines(ERROR, "NCCL WARN x")
    assert [m["id"] for m in _run({"a.log": lines})["matches"]] == ["boom", "maybe"]
    assert [m["id"] for m in _run({"a.log": lines}, top=1)["matches"]] == ["boom"]
    assert [m["id"] for m in _run({"a.log": lines}, top=0)["matches"]] == ["boom", "maybe"]


def test_hosts_named_in_the_logs_heads_are_listed_sorted_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workers, "HOSTS_KEPT", 2)
    heads = {
        f"{host}.log": _lines(f"{host}:1234:1234 [0] NCCL INFO Bootstrap : Using eth0")
        for host in ("node-c", "node-a", "node-b")
    }
    record = _run(heads)
    assert record["hosts"] == ["node-a", "node-b"]


def test_the_first_failures_host_is_named_with_its_rule() -> None:
    record = _run({"node-a.log": _lines("node-a:1:1 [1] NCCL INFO Bootstrap : Using eth0", ERROR)})
    assert record["initiating_host"] == "node-a" and record["host_rule"]
    assert record["hosts"] == ["node-a"]


# --- files that are not logs -----------------------------------------------------------------


def test_a_file_with_nul_bytes_in_its_head_is_binary() -> None:
    late_nul = "x\n" * (HEAD_BYTES // 2) + "\0" + "\n" + ERROR  # past the head: a log
    record = _run({"core.log": _lines(b"ELF\0\1\2\n"), "ok.log": _lines(late_nul)})
    assert _skips(record) == [("core.log", "binary")]
    assert record["skipped"][0]["detail"] == SKIP_REASONS["binary"]
    assert record["skipped"][0]["job"] == "job"
    assert record["verdict"] == "boom"


def test_a_file_without_a_line_break_in_its_first_mib_is_one_line_not_a_log() -> None:
    record = _run(
        {
            "one.log": lambda: io.BytesIO(b"y" * (MAX_LINE_BYTES + 10)),
            "cr.log": lambda: io.BytesIO(b"y" * (MAX_LINE_BYTES - 1) + b"\r" + b"y" * 10),
            "short.log": lambda: io.BytesIO(b"RuntimeError: boom"),  # ended: one short line
        }
    )
    assert record["skipped"] == [
        {
            "path": "one.log",
            "reason": "single-line",
            "detail": SKIP_REASONS["single-line"],
            "job": "job",
        }
    ]
    assert record["verdict"] == "boom"


@pytest.mark.parametrize(
    "data, head, ended",
    [
        (b"", b"", True),
        (b"a\nb", b"a\nb", True),
        (b"x\n" + b"z" * (2 * HEAD_BYTES), b"x\n" + b"z" * (HEAD_BYTES - 2), False),
        (b"x" * (3 * HEAD_BYTES) + b"\n", b"x" * (3 * HEAD_BYTES) + b"\n", False),
        (b"x" * (3 * HEAD_BYTES), b"x" * (3 * HEAD_BYTES), True),
        (b"x" * (MAX_LINE_BYTES + HEAD_BYTES), b"x" * MAX_LINE_BYTES, False),
        (
            b"x" * HEAD_BYTES + b"\r" + b"x" * (2 * HEAD_BYTES),
            b"x" * HEAD_BYTES + b"\r" + b"x" * (HEAD_BYTES - 1),
            False,
        ),
    ],
    ids=["empty", "short", "a break", "a break past the head", "ended", "no break", "a CR"],
)
def test_the_head_is_read_on_while_no_line_break_shows(
    data: bytes, head: bytes, ended: bool
) -> None:
    class Reads(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            assert size == HEAD_BYTES
            return super().read(size)

    assert workers._read_head(Reads(data)) == (head, ended)  # type: ignore[arg-type]


def test_a_plain_file_past_the_size_limit_is_not_opened_for_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"step 1\n" * 100)
    with pytest.raises(workers.TooLarge, match="700 bytes, more than 699 \\(--max-file-bytes\\)"):
        workers._open(str(big), 699)
    with workers._open(str(big), 700) as stream:
        assert stream.read(4) == b"step"
    with workers._open(str(big), 0) as stream:  # no limit
        assert stream.read(4) == b"step"


def test_a_gzip_file_past_the_size_limit_is_measured_as_it_unpacks(tmp_path: Path) -> None:
    packed = tmp_path / "big.log.gz"
    packed.write_bytes(gzip.compress(b"step 1\n" * 100) + b"\0" * 1000)  # larger than 1000
    with workers._open(str(packed), 1000) as stream:
        assert stream.read(7) == b"step 1\n"
    plain = tmp_path / "big.log"
    plain.write_bytes(b"step 1\n" * 100)
    record = workers.Worker(ENTRIES, workers.Options(max_file_bytes=500)).run(
        Job("job", "file", (str(packed), str(plain)))
    )
    assert record["layout"] == "file"
    assert [(s["reason"], s["detail"], s["job"]) for s in record["skipped"]] == [
        ("too-large", "more than 500 bytes (--max-file-bytes)", "job"),
        ("too-large", "700 bytes, more than 500 (--max-file-bytes)", "job"),  # not opened
    ]


def test_a_tapped_stream_stops_past_its_limit_and_feeds_every_byte() -> None:
    tap, summary = ErrorLines(), SummaryHosts()
    tap.start("a.log")
    tapped = workers._Tapped(b"Error: a\n", io.BytesIO(b"Error: b\n"), 18, tap, summary)
    assert tapped.read(100) == b"Error: a\n" and tapped.read(100) == b"Error: b\n"
    assert tapped.total == 18 and tapped.read(100) == b""
    assert sorted(tap.counts) == ["Error: a", "Error: b"]
    over = workers._Tapped(b"12345", io.BytesIO(b"6"), 5, tap, summary)
    over.read()
    with pytest.raises(workers.TooLarge, match="more than 5 bytes"):
        over.read()
    free = workers._Tapped(b"", io.BytesIO(b"x" * 100), 0, tap, summary)
    assert free.read(-1) == b"x" * 100


def test_a_file_that_cannot_be_read_is_skipped_with_why() -> None:
    def missing() -> Any:
        raise FileNotFoundError(2, "No such file or directory")

    def empty_error() -> Any:
        raise OSError()

    def fifo() -> Any:
        raise logs.NotRegular(22, logs.NOT_REGULAR, "x")

    def bomb() -> Any:
        raise logs.LogTooLarge("it unpacks to more than 10 bytes")

    def slow() -> Any:
        raise scan.DiagnoseTimeout(None, "slow.log")

    def cut() -> Any:
        raise EOFError("cut short")

    record = _run(
        {
            "missing.log": missing,
            "empty.log": empty_error,
            "fifo.log": fifo,
            "bomb.log": bomb,
            "slow.log": slow,
            "cut.log": cut,
            "ok.log": _lines(ERROR),
        }
    )
    assert [(s["path"], s["reason"], s["detail"]) for s in record["skipped"]] == [
        ("missing.log", "unreadable", "No such file or directory"),
        ("empty.log", "unreadable", "OSError"),
        ("fifo.log", "not-regular", SKIP_REASONS["not-regular"]),
        ("bomb.log", "too-large", "it unpacks to more than 10 bytes"),
        ("slow.log", "deadline", SKIP_REASONS["deadline"]),
        ("cut.log", "unreadable", "cut short"),
    ]
    assert {s["job"] for s in record["skipped"]} == {"job"}
    assert record["verdict"] == "boom"


def test_files_past_the_jobs_deadline_are_skipped_unread() -> None:
    opened: list[str] = []

    def opener(name: str) -> Callable[[], workers.Lines]:
        def open_it() -> workers.Lines:
            opened.append(name)
            time.sleep(0.3)
            return workers.Lines([ERROR])

        return open_it

    record = _run({"a.log": opener("a"), "b.log": opener("b"), "c.log": opener("c")}, deadline=0.1)
    assert opened == ["a"]  # a's scan passed the deadline too; b and c were not opened
    assert record["skipped"] == [
        {"path": p, "reason": "deadline", "detail": SKIP_REASONS["deadline"], "job": "job"}
        for p in ("a.log", "b.log", "c.log")
    ]


def test_a_scan_past_the_deadline_skips_that_file() -> None:
    record = _run({"a.log": _lines(ERROR)}, deadline=-1.0)
    assert _skips(record) == [("a.log", "deadline")]


# --- error files and Flight Recorder dumps ---------------------------------------------------


def _file(path: Path) -> Callable[[], io.BytesIO]:
    return lambda: io.BytesIO(path.read_bytes())


def test_an_error_file_is_that_ranks_failure_and_its_traceback_counts_as_error_lines() -> None:
    error = ELASTIC / "one-error" / "attempt_0" / "1" / "error.json"
    record = _run({"attempt_0/1/error.json": _file(error)})
    assert record["status"] == "unmatched"  # a rank failed, in words no entry knows
    (row,) = record["error_lines"]
    assert row["file"] == "attempt_0/1/error.json" and "mat1 and mat2" in row["text"]


def test_a_json_file_that_is_no_dump_is_passed_over() -> None:
    record = _run({"metrics_rank0.json": lambda: io.BytesIO(b'{"loss": 1.5}')})
    assert record["status"] == "skipped" and record["skipped"] == []


@pytest.mark.parametrize(
    "name, data, reason, detail",
    [
        ("0/error.json", b"{not json", "unreadable", "not valid JSON"),
        ("0/error.json", b"x" * (elastic.MAX_BYTES + 1), "too-large", "far more than a real one"),
        ("rank0.json", b"x" * (flight.MAX_BYTES + 1), "too-large", "far more than a real one"),
        ("rank0.json", pickle.dumps({"version": "2.10", "entries": []}), "unreadable", "(TORCH_"),
    ],
    ids=["damaged", "huge error file", "huge dump", "a pickled dump"],
)
def test_a_damaged_or_huge_error_file_or_dump_is_skipped_with_its_readers_message(
    name: str, data: bytes, reason: str, detail: str
) -> None:
    record = _run({name: lambda: io.BytesIO(data)})
    ((path, why, said, job),) = [
        (s["path"], s["reason"], s["detail"], s["job"]) for s in record["skipped"]
    ]
    assert (path, why, job) == (name, reason, "job") and detail in said, said
    if why == "unreadable":  # the reader's message, and its hint when it has one
        with pytest.raises(elastic.ReaderError) as err:
            (elastic.parse if name.endswith("error.json") else flight.parse)(data, name)
        hint = f" ({err.value.hint})" if err.value.hint else ""
        assert said == err.value.message + hint


def test_an_error_file_that_cannot_be_opened_is_skipped() -> None:
    def gone() -> Any:
        raise FileNotFoundError(2, "No such file or directory")

    def bomb() -> Any:
        raise logs.LogTooLarge("it unpacks to more than 10 bytes")

    def cut() -> Any:
        raise EOFError("cut short")

    def bare() -> Any:
        raise OSError()

    record = _run(
        {"0/error.json": gone, "1/error.json": bomb, "2/error.json": cut, "3/error.json": bare}
    )
    assert [(s["path"], s["reason"], s["detail"], s["job"]) for s in record["skipped"]] == [
        ("0/error.json", "unreadable", "No such file or directory", "job"),
        ("1/error.json", "too-large", "it unpacks to more than 10 bytes", "job"),
        ("2/error.json", "unreadable", "cut short", "job"),
        ("3/error.json", "unreadable", "OSError", "job"),
    ]


# --- lines as a stream -----------------------------------------------------------------------


def test_lines_read_as_one_stream_with_newlines_added_where_missing() -> None:
    for size in (1, 3, 5, 100, -1):
        stream = workers.Lines(["a", b"b\n", "c\n", "é"])
        parts = []
        while data := stream.read(size):
            parts.append(data)
            assert size < 0 or len(data) <= size
        assert b"".join(parts) == "a\nb\nc\né\n".encode(), size
    assert workers.Lines("one").read() == b"one\n"
    assert workers.Lines(b"two").read() == b"two\n"
    assert workers.Lines(["\udcff"]).read() == b"\xff\n"  # bytes a str carried as surrogates
    with workers.Lines([]) as empty:
        assert empty.read() == b""


# --- many jobs -------------------------------------------------------------------------------


def test_jobs_given_as_lines_are_diagnosed_in_order() -> None:
    records = list(
        workers.stream(
            {"j1": ["ok", ERROR], "j2": {"rank0.log": ["ok"], "rank1.log": [ERROR]}}, ENTRIES
        )
    )
    assert [(r["job"], r["status"], r["layout"]) for r in records] == [
        ("j1", "matched", "lines"),
        ("j2", "matched", "lines"),
    ]
    assert records[1]["initiating"]["file"] == "rank1.log"


@pytest.mark.parametrize("jobs", [1, 2])
def test_jobs_of_files_come_back_in_order_with_the_skips_between(tmp_path: Path, jobs: int) -> None:
    """More jobs than the pool keeps in flight (four per process)."""
    for i in range(12):
        (tmp_path / f"job{i:02d}.log").write_text(ERROR + "\n" if i % 2 else "fine\n")
    (tmp_path / "empty").mkdir()
    paths = [tmp_path / f"job{i:02d}.log" for i in range(3)] + [tmp_path / "empty"]
    paths += [tmp_path / f"job{i:02d}.log" for i in range(3, 12)]
    records = list(workers.stream(paths, ENTRIES, jobs=jobs))
    want = [(f"job{i:02d}.log", "matched" if i % 2 else "clean") for i in range(12)]
    assert _names(records) == [*want[:3], ("empty", "empty-folder"), *want[3:]]
    assert records == list(workers.stream(paths, ENTRIES, jobs=jobs))


def test_one_path_given_as_a_string_is_one_path(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text(ERROR + "\n")
    (record,) = workers.stream(str(path), ENTRIES, jobs=1)
    assert record["job"] == str(path) and record["verdict"] == "boom"  # type: ignore[index]


def test_ray_is_asked_for_by_name_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # an import of it fails
    with pytest.raises(
        workers.TriageError, match=r"--ray needs Ray: pip install 'nanopedia\[ray\]'"
    ):
        workers.stream([], ENTRIES, ray="")


def test_records_are_plain_json() -> None:
    record = _run({"a.log": _lines(ERROR)})
    assert json.loads(json.dumps(record)) == record


# --- Ray Data, through a stand-in that runs the map in this process -----------------------------


class _Dataset:
    def __init__(self, ray: FakeRay, rows: list[dict[str, Any]]) -> None:
        self.ray, self.rows = ray, rows

    def map_batches(self, actor: Any, **kw: Any) -> _Dataset:
        self.ray.calls.append(("map_batches", {**kw, "rows": len(self.rows)}))
        self.actor, self.kw = actor, kw
        return self

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """The batches' rows, last batch first: Ray Data need not keep the order."""
        import numpy

        worker = self.actor(*self.kw["fn_constructor_args"])
        size = self.kw["batch_size"]
        out = []
        for at in range(0, len(self.rows), size):
            rows = self.rows[at : at + size]
            batch = {
                "index": numpy.array([r["index"] for r in rows]),
                "job": numpy.array([r["job"] for r in rows], dtype=object),
            }
            done = worker(batch)
            out.append(
                [
                    {"index": i, "result": r}
                    for i, r in zip(done["index"], done["result"], strict=True)
                ]
            )
        for rows in out if self.ray.in_order else reversed(out):
            for row in rows:
                self.ray.given += 1
                yield row


class FakeRay(types.ModuleType):
    """What `workers._ray` calls of Ray and Ray Data, recorded."""

    def __init__(self, cpus: int = 6, fail: Exception | None = None, started: bool = False) -> None:
        super().__init__("ray")
        self.calls: list[tuple[str, Any]] = []
        self.cpus, self.fail, self.started = cpus, fail, started
        self.in_order, self.given = False, 0
        self.refs: dict[int, Any] = {}
        self.context = types.SimpleNamespace(
            enable_progress_bars=True, execution_options=types.SimpleNamespace(preserve_order=False)
        )
        data = types.ModuleType("ray.data")
        data.DataContext = types.SimpleNamespace(get_current=lambda: self.context)  # type: ignore[attr-defined]
        data.ActorPoolStrategy = lambda size: ("actors", size)  # type: ignore[attr-defined]
        data.from_items = lambda rows: _Dataset(self, rows)  # type: ignore[attr-defined]
        self.data = data

    def is_initialized(self) -> bool:
        return self.started

    def init(self, **kw: Any) -> None:
        self.calls.append(("init", kw))
        if self.fail:
            raise self.fail
        self.started = True

    def shutdown(self) -> None:
        self.calls.append(("shutdown", None))
        self.started = False

    def put(self, value: Any) -> int:
        self.refs[id(value)] = value
        return id(value)

    def get(self, ref: int) -> Any:
        return self.refs[ref]

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(self.cpus)} if self.cpus is not None else {}


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> FakeRay:
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.data", ray.data)
    for name in ("ray.data", "ray.data._internal.progress"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    return ray


def _fleet(tmp_path: Path, jobs: int = 5) -> list[Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(jobs):
        path = tmp_path / f"job{i}.log"
        path.write_text(ERROR + "\n" if i % 2 else "fine\n")
        paths.append(path)
    (tmp_path / "empty").mkdir()  # a skip among the jobs
    return [*paths[:2], tmp_path / "empty", *paths[2:]]


def _names(records: list[Any]) -> list[tuple[str, str]]:
    return [
        (Path(r.path).name, r.reason) if isinstance(r, Skip) else (Path(r["job"]).name, r["status"])
        for r in records
    ]


def test_ray_gives_the_local_records_in_job_order(fake_ray: FakeRay, tmp_path: Path) -> None:
    paths = _fleet(tmp_path)
    local = list(workers.stream(paths, ENTRIES, jobs=1))
    on_ray = list(workers.stream(paths, ENTRIES, jobs=2, ray=""))
    assert json.dumps(on_ray, default=repr, sort_keys=True) == json.dumps(
        local, default=repr, sort_keys=True
    )
    assert _names(on_ray)[2] == ("empty", "empty-folder")
    init, mapped, shutdown = fake_ray.calls
    assert init == (
        "init",
        {
            "num_cpus": 2,
            "include_dashboard": False,
            "logging_level": logging.WARNING,
            "log_to_driver": False,  # a dead worker's notices would land in --format json
        },
    )
    kw = mapped[1]
    assert kw["batch_size"] == workers.RAY_BATCH == 16 and kw["batch_format"] == "numpy"
    assert kw["compute"] == ("actors", 2) and kw["rows"] == 5
    assert kw["fn_constructor_args"][1] == workers.Options()
    assert shutdown == ("shutdown", None) and not fake_ray.started
    assert fake_ray.context.enable_progress_bars is False
    assert fake_ray.context.execution_options.preserve_order is True
    assert logging.getLogger("ray.data").level == logging.WARNING
    assert logging.getLogger("ray.data._internal.progress").level == logging.ERROR


def test_ray_windows_keep_the_job_order_and_skips_between(
    fake_ray: FakeRay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "RAY_WINDOW", 2)
    monkeypatch.setattr(workers, "RAY_BATCH", 1)
    paths = _fleet(tmp_path, 6)
    records = list(workers.stream(paths, ENTRIES, jobs=3, ray=""))
    assert _names(records) == _names(list(workers.stream(paths, ENTRIES, jobs=1)))
    maps = [c[1] for c in fake_ray.calls if c[0] == "map_batches"]
    assert [m["rows"] for m in maps] == [2, 1, 2, 1]  # the window with the skip has one job
    assert [m["compute"][1] for m in maps] == [2, 1, 2, 1]  # never more actors than jobs


def test_a_window_of_skips_alone_maps_nothing(fake_ray: FakeRay, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    records = list(workers.stream([tmp_path / "a", tmp_path / "b"], ENTRIES, jobs=2, ray=""))
    assert [(Path(r.path).name, r.reason) for r in records] == [  # type: ignore[union-attr]
        ("a", "empty-folder"),
        ("b", "empty-folder"),
    ]
    assert [c[0] for c in fake_ray.calls] == ["init", "shutdown"]


def test_ray_joins_a_cluster_by_address_with_an_actor_per_cpu(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    paths = _fleet(tmp_path, 8)
    list(workers.stream(paths, ENTRIES, jobs=2, ray="ray://head:10001"))
    (_, init), (_, mapped), _ = fake_ray.calls
    assert init == {
        "address": "ray://head:10001",
        "logging_level": logging.WARNING,
        "log_to_driver": False,
    }
    assert mapped["compute"] == ("actors", 6)


def test_a_cluster_without_cpus_gets_one_actor(fake_ray: FakeRay, tmp_path: Path) -> None:
    for cpus in (0, None):  # none free, or none reported
        fake_ray.cpus, fake_ray.calls = cpus, []
        list(workers.stream(_fleet(tmp_path / str(cpus)), ENTRIES, jobs=2, ray="ray://h:1"))
        assert [c[1]["compute"] for c in fake_ray.calls if c[0] == "map_batches"] == [("actors", 1)]


def test_a_ray_instance_already_running_is_used_and_left_running(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    fake_ray.started = True
    records = list(workers.stream(_fleet(tmp_path), ENTRIES, jobs=2, ray=""))
    assert len(records) == 6 and [c[0] for c in fake_ray.calls] == ["map_batches"]
    assert fake_ray.started


@pytest.mark.parametrize(
    "error", [ConnectionError("refused"), ValueError("bad"), RuntimeError("x")]
)
@pytest.mark.parametrize("address, shown", [("", "a local instance"), ("ray://h:1", "ray://h:1")])
def test_a_cluster_that_cannot_be_joined_is_named(
    fake_ray: FakeRay, tmp_path: Path, error: Exception, address: str, shown: str
) -> None:
    fake_ray.fail = error
    records = workers.stream(_fleet(tmp_path), ENTRIES, ray=address)
    with pytest.raises(
        workers.TriageError, match=f"^cannot join the Ray cluster at {shown}: {error}$"
    ):
        next(records)


# --- more of a record --------------------------------------------------------------------------


def _error_json(traceback: str, timestamp: str = "1714557600") -> bytes:
    return json.dumps(
        {
            "message": {
                "message": traceback.splitlines()[-1],
                "extraInfo": {"py_callstack": traceback, "timestamp": timestamp},
            }
        }
    ).encode()


def _dump_json(rank: int, op: str) -> bytes:
    entry = {
        "process_group": ["0", "default_pg"],
        "collective_seq_id": 1,
        "is_p2p": False,
        "profiling_name": f"nccl:{op}",
        "input_sizes": [[4]],
        "output_sizes": [[4]],
        "state": "completed",
    }
    doc = {"version": "2.10", "pg_config": {"0": {"desc": "default_pg", "ranks": "[0, 1, 2]"}}}
    return json.dumps({**doc, "entries": [entry]}).encode()


def test_an_error_files_traceback_is_that_ranks_evidence() -> None:
    data = _error_json('Traceback:\n  File "x", line 1\nRuntimeError: boom')
    record = _run({"log.txt": _lines("fine"), "attempt_0/2/error.json": lambda: io.BytesIO(data)})
    assert (record["status"], record["verdict"]) == ("matched", "boom")
    assert record["initiating"]["file"] == "attempt_0/2/error.json"
    assert record["initiating_rank"] == 2


def test_a_job_of_dumps_alone_is_read_not_skipped() -> None:
    same = {
        f"rank{r}.json": (lambda r=r: io.BytesIO(_dump_json(r, "all_reduce"))) for r in range(3)
    }
    record = _run(same)
    assert record["status"] == "clean" and record["skipped"] == []
    odd = {**same, "rank2.json": lambda: io.BytesIO(_dump_json(2, "broadcast"))}
    record = _run(odd)  # a rank called another collective: it failed, in no entry's words
    assert record["status"] == "unmatched" and record["verdict"] is None


def test_bytes_and_lines_add_up_over_the_jobs_files() -> None:
    record = _run({"a.log": _lines("one", "two"), "b.log": _lines(ERROR)})
    assert record["lines"] == 3 and record["bytes"] == len("one\ntwo\n" + ERROR + "\n")
    assert [f["file"] for f in record["files"]] == ["a.log", "b.log"]


def test_a_pool_worker_ignores_ctrl_c_and_runs_jobs_with_its_entries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What each process of the pool does, run here: Ctrl-C is the parent's to handle."""
    import signal

    handled: list[tuple[int, object]] = []
    monkeypatch.setattr(signal, "signal", lambda sig, how: handled.append((sig, how)))
    monkeypatch.setattr(workers, "_WORKER", None)
    workers._init_worker(ENTRIES, workers.Options(top=1))
    assert handled == [(signal.SIGINT, signal.SIG_IGN)]
    path = tmp_path / "job.log"
    path.write_text(ERROR + "\nNCCL WARN x\n")
    record = workers._run_job(Job("job", "file", (str(path),)))
    assert record["verdict"] == "boom" and len(record["matches"]) == 1


def test_a_dump_larger_than_an_error_file_may_be_is_read() -> None:
    big = _dump_json(0, "all_reduce")[:-1] + b" " * (elastic.MAX_BYTES + 10) + b"}"
    record = _run({"rank0.json": lambda: io.BytesIO(big)})
    assert record["skipped"] == [] and record["status"] == "clean"


def test_an_error_files_traceback_with_a_lone_surrogate_counts_as_error_lines() -> None:
    data = _error_json("Traceback:\n  x\nValueError: odd \ud800 17")
    record = _run({"0/error.json": lambda: io.BytesIO(data)})
    assert [(r["text"], r["line"]) for r in record["error_lines"]] == [("ValueError: odd ? <n>", 3)]


def test_lines_are_pulled_only_as_far_as_a_read_needs() -> None:
    pulled: list[str] = []

    def lines() -> Iterator[str]:
        for line in ("abcd", "efgh", "ijkl"):
            pulled.append(line)
            yield line

    stream = workers.Lines(lines())
    assert stream.read(0) == b"" and pulled == []
    assert stream.read(5) == b"abcd\n" and pulled == ["abcd"]
    assert stream.read(6) == b"efgh\ni" and pulled == ["abcd", "efgh", "ijkl"]
    assert stream.read() == b"jkl\n"


def test_ray_records_stream_out_as_ray_returns_them(fake_ray: FakeRay, tmp_path: Path) -> None:
    fake_ray.in_order = True
    (tmp_path / "empty").mkdir()
    paths = [tmp_path / "empty", *_fleet(tmp_path / "jobs", 40)[:-1]]
    records = workers.stream(paths, ENTRIES, jobs=2, ray="")
    first, second = next(records), next(records)
    assert isinstance(first, Skip) and not isinstance(second, Skip)
    assert fake_ray.given == 1  # one row back from Ray gave both: not the whole window first


def test_a_pool_job_before_the_initializer_is_a_bug_said_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workers, "_WORKER", None)
    with pytest.raises(AssertionError, match="^the pool initializer runs first$"):
        workers._run_job(Job("job", "file", ()))


def test_an_error_file_read_as_the_deadline_passes_is_skipped_not_fatal() -> None:
    data = _error_json('Traceback:\n  File "x", line 1\nRuntimeError: boom')

    def slow() -> io.BytesIO:
        time.sleep(0.3)
        return io.BytesIO(data)

    record = _run({"0/error.json": slow}, deadline=0.1)
    assert [(s["path"], s["reason"], s["detail"], s["job"]) for s in record["skipped"]] == [
        ("0/error.json", "deadline", SKIP_REASONS["deadline"], "job")
    ]
    assert record["verdict"] is None


def test_a_job_without_a_verdict_names_no_first_failure_nor_host() -> None:
    record = _run(
        {
            "node-a.log": _lines(
                "node-a:1:1 [3] NCCL INFO Bootstrap : Using eth0",
                "Root Cause (first observed failure):",
                "  rank      : 3 (local_rank: 0)",
                "ValueError: odd",
            )
        }
    )
    assert record["status"] == "unmatched" and record["root_cause_rank"] == 3
    assert record["initiating_rank"] is record["initiating_host"] is record["host_rule"] is None


def test_a_logs_file_name_gives_the_rank_of_the_host_in_its_head() -> None:
    record = _run(
        {
            "rank0.log": _lines("node-a:1:1 [0] NCCL INFO Bootstrap : Using eth0"),
            "rank1.log": _lines(
                "node-b:1:1 [0] NCCL INFO Bootstrap : Using eth0", "RuntimeError: boom"
            ),
        }
    )
    assert (record["initiating_rank"], record["initiating_host"]) == (1, "node-b")
