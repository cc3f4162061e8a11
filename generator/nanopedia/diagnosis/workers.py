"""Running triage jobs: each job's files read and diagnosed into a record, over a pool or Ray.

Each file is opened with `logs.open_log` and its first `HEAD_BYTES` checked: NUL bytes there
make it binary, no line break in the first `MAX_LINE_BYTES` makes it one huge line (not a log);
both are skipped, named, as are unreadable files and files past `max_file_bytes` (unpacked). No
skip is fatal, and no file is read past those limits, so memory and time stay bounded.

Jobs are diagnosed in a process pool (`jobs`, a `Matcher` built once per process) or, with
`ray`, as a Ray Data `map_batches` over the job list (Ray is imported only then). Both return
records in job order, identical whatever the scheduling.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import IO, TYPE_CHECKING, Any, cast

from nanopedia.diagnosis import elastic, flight, logs, rank, readers, scan
from nanopedia.diagnosis.catalogue import EntryView, views
from nanopedia.diagnosis.error_lines import ErrorLines
from nanopedia.diagnosis.hosts import HeadHosts, SummaryHosts, first_host, head_hosts
from nanopedia.diagnosis.jobs import (
    HEAD_BYTES,
    MAX_LINE_BYTES,
    SKIP_REASONS,
    Job,
    Skip,
    TriageError,
    find_jobs,
)
from nanopedia.diagnosis.lines import file_rank

if TYPE_CHECKING:
    from nanopedia.model import Entry

#: Default limit of a file's (unpacked) size; larger files are skipped, named.
MAX_FILE_BYTES = 2 << 30
#: Default seconds one job may take before its remaining files are skipped.
JOB_DEADLINE = 300.0
#: Candidates kept per job, and evidence lines kept per candidate.
TOP = 3
EVIDENCE_KEPT = 3
#: Characters of an evidence line kept in a job's record (`diagnose --format json` keeps 2,000):
#: 10,000 jobs must not make a JSON of gigabytes.
EVIDENCE_CHARS = 500


#: Hosts kept in a job's record.
HOSTS_KEPT = 32


#: Jobs handed to one Ray Data dataset, and per batch.
RAY_WINDOW = 20_000
RAY_BATCH = 16


@dataclass(frozen=True, slots=True)
class Options:
    """What every worker needs to know besides the entries."""

    top: int = TOP
    base_url: str | None = None
    max_file_bytes: int = MAX_FILE_BYTES
    """0: no limit."""
    deadline: float = JOB_DEADLINE


class TooLarge(OSError):
    """A file unpacks past the size limit."""


class _Tapped(logs.Stream):
    """The head already read, then the rest of the stream; every byte goes to the error-line
    counter and to the reader of torchrun's summaries, and reading stops past `limit` bytes."""

    def __init__(
        self, head: bytes, stream: IO[bytes], limit: int, tap: ErrorLines, summary: SummaryHosts
    ) -> None:
        self.head, self.stream, self.limit, self.tap, self.total = head, stream, limit, tap, 0
        self.summary = summary

    def read(self, size: int = -1) -> bytes:
        if self.head:
            data, self.head = self.head, b""
        else:
            data = self.stream.read(size)
        self.total += len(data)
        if self.limit and self.total > self.limit:
            raise TooLarge(f"more than {self.limit:,} bytes (--max-file-bytes)")
        self.tap.feed(data)
        self.summary.feed(data)
        return data


class Lines(logs.Stream):
    """Lines (str or bytes, with or without their newline) as a binary stream, read lazily."""

    def __init__(self, lines: Iterable[str | bytes] | str | bytes) -> None:
        if isinstance(lines, (str, bytes)):
            lines = [lines]
        self.lines = iter(lines)
        self.pending = b""

    def read(self, size: int = -1) -> bytes:
        parts, n = [self.pending], len(self.pending)
        while size < 0 or n < size:
            line = next(self.lines, None)
            if line is None:
                break
            data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
            parts.append(data if data.endswith(b"\n") else data + b"\n")
            n += len(parts[-1])
        data = b"".join(parts)
        cut = len(data) if size < 0 else size
        self.pending = data[cut:]
        return data[:cut]

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *_: object) -> None:
        pass


Opener = Callable[[], IO[bytes]]


def _open(path: str, limit: int) -> IO[bytes]:
    """`logs.open_log`, refusing at once a plain file larger than `limit` (a gzip file is
    measured as it unpacks)."""
    if limit and os.path.getsize(path) > limit:
        with logs.open_regular(path) as raw:
            if raw.read(2) != b"\x1f\x8b":
                raise TooLarge(
                    f"{os.path.getsize(path):,} bytes, more than {limit:,} (--max-file-bytes)"
                )
    return logs.open_log(path)[0]


def _read_head(stream: IO[bytes]) -> tuple[bytes, bool]:
    """The first `HEAD_BYTES` (more, up to `MAX_LINE_BYTES`, while no line break shows), and
    whether the stream ended there."""
    parts: list[bytes] = []
    n = 0
    while n < HEAD_BYTES or (
        n < MAX_LINE_BYTES and not any(b"\n" in p or b"\r" in p for p in parts)
    ):
        data = stream.read(HEAD_BYTES)
        if not data:
            return b"".join(parts), True
        parts.append(data)
        n += len(data)
    return b"".join(parts), False


class Worker:
    """What one process needs to triage jobs: the matcher, built once, and the entries by id."""

    def __init__(self, entries: Sequence[EntryView | Entry], options: Options) -> None:
        used = views(entries)
        self.matcher = scan.Matcher(used)
        self.by_id = {e.id: e for e in used}
        self.titles = {e.id: e.title for e in used}
        self.options = options

    def run(self, job: Job) -> dict[str, Any]:
        """The record of a job of files."""

        def opener(path: str) -> Opener:
            return lambda: _open(path, self.options.max_file_bytes)

        return self.run_streams(job.name, job.layout, [(p, opener(p)) for p in job.files])

    def run_streams(
        self, name: str, layout: str, files: Iterable[tuple[str, Opener]]
    ) -> dict[str, Any]:
        """Scan each file, diagnose them together, and keep what the summary needs."""
        deadline = time.monotonic() + self.options.deadline
        tap = ErrorLines()
        summary = SummaryHosts()
        scans: list[scan.FileScan] = []
        skips: list[Skip] = []
        heads: dict[str, HeadHosts] = {}
        found = readers.Found()
        for file, open_file in files:
            if time.monotonic() > deadline:
                skips.append(Skip(file, "deadline", SKIP_REASONS["deadline"], name))
                continue
            if readers.is_evidence_name(file):
                self._structured(name, file, open_file, found, tap, skips)
                continue
            try:
                with open_file() as stream:
                    head, ended = _read_head(stream)
                    if b"\0" in head[:HEAD_BYTES]:
                        skips.append(Skip(file, "binary", SKIP_REASONS["binary"], name))
                        continue
                    if not ended and b"\n" not in head and b"\r" not in head:
                        skips.append(Skip(file, "single-line", SKIP_REASONS["single-line"], name))
                        continue
                    heads[file] = head_hosts(head[:HEAD_BYTES], file_rank(file))
                    tap.start(file)
                    tapped = _Tapped(head, stream, self.options.max_file_bytes, tap, summary)
                    scans.append(scan.scan(tapped, file, self.matcher, deadline))  # type: ignore[arg-type]
                    tap.finish()
            except (TooLarge, logs.LogTooLarge) as err:
                skips.append(Skip(file, "too-large", str(err), name))
            except logs.NotRegular:  # swapped for a FIFO or a device after it was listed
                skips.append(Skip(file, "not-regular", SKIP_REASONS["not-regular"], name))
            except scan.DiagnoseTimeout:
                skips.append(Skip(file, "deadline", SKIP_REASONS["deadline"], name))
            except (OSError, EOFError) as err:
                reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
                skips.append(Skip(file, "unreadable", reason, name))
        for error in found.errors:
            try:
                scans.append(scan.scan_error_file(error, self.matcher, deadline))
            except scan.DiagnoseTimeout:  # the deadline passed while the files were read
                skips.append(Skip(error.file, "deadline", SKIP_REASONS["deadline"], name))
        return self._record(name, layout, scans, skips, heads, tap, summary, found)

    def _structured(
        self,
        job: str,
        file: str,
        open_file: Opener,
        found: readers.Found,
        tap: ErrorLines,
        skips: list[Skip],
    ) -> None:
        """An error file or Flight Recorder dump of the job read (its size capped before it is
        parsed) into `found`; a JSON file that is neither is passed over, a damaged one skipped
        with its reader's message. An error file's traceback counts for the job's error lines."""
        limit = elastic.MAX_BYTES if elastic.is_error_file(file) else flight.MAX_BYTES
        try:
            with open_file() as stream:
                data = readers.read_capped(stream, file, limit)
        except elastic.ReaderError as err:  # past the cap, read no further
            skips.append(Skip(file, "too-large", err.message, job))
            return
        except (TooLarge, logs.LogTooLarge) as err:
            skips.append(Skip(file, "too-large", str(err), job))
            return
        except (OSError, EOFError) as err:
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            skips.append(Skip(file, "unreadable", reason, job))
            return
        what = readers.kind(file, data[: readers.SNIFF_BYTES])
        if what == "log":
            return
        try:
            item = elastic.parse(data, file) if what == "elastic" else flight.parse(data, file)
        except elastic.ReaderError as err:
            hint = f" ({err.hint})" if err.hint else ""
            skips.append(Skip(file, "unreadable", err.message + hint, job))
            return
        found.add(item)
        if isinstance(item, elastic.ErrorFile):
            tap.start(file)
            tap.feed(item.traceback.encode("utf-8", "replace") + b"\n")
            tap.finish()

    def _record(
        self,
        name: str,
        layout: str,
        scans: list[scan.FileScan],
        skips: list[Skip],
        heads: dict[str, HeadHosts],
        tap: ErrorLines,
        summary: SummaryHosts,
        found: readers.Found | None = None,
    ) -> dict[str, Any]:
        from nanopedia.diagnosis.report import with_answers

        found = found or readers.Found()
        result = rank.diagnose(scans, found.errors, found.report(), self.titles)
        out = with_answers(result, self.by_id, self.options.base_url, self.options.top or None)
        for row in out["matches"]:
            row["evidence_count"] = len(row["evidence"])
            row["evidence"] = row["evidence"][:EVIDENCE_KEPT]
        for ev in [out["initiating"] or {}] + [e for m in out["matches"] for e in m["evidence"]]:
            if "text" in ev:
                ev["text"] = ev["text"][:EVIDENCE_CHARS]
        verdict = next((c for c in result.matches if not c.benign), None)
        best = next((m for m in out["matches"] if verdict and m["id"] == verdict.id), None)
        # a rank's error file says it failed, whatever words it holds (a C++ file's message)
        failed = bool(found.errors or (result.flight_report and result.flight_report.findings))
        status = (
            "matched"
            if verdict
            else "skipped"
            if not scans and not found.dumps
            else "unmatched"
            if tap.counts or failed
            else "clean"
        )
        host, how = (
            first_host(out["initiating"], result.initiating_rank, heads, summary.by_rank)
            if verdict
            else (None, None)
        )
        named: set[str] = set().union(*(h.hosts for h in heads.values()))
        hosts = sorted(named | ({host} if host else set()))
        out.update(
            {
                "job": name,
                "layout": layout,
                "status": status,
                "verdict": verdict.id if verdict else None,
                "confidence": ("possible" if verdict.possible else "certain") if verdict else None,
                "domain": best["domain"] if best else None,
                "action": best["action"] if best else None,
                "initiating_host": host,
                "host_rule": how,
                "hosts": hosts[:HOSTS_KEPT],
                "bytes": sum(s.bytes for s in scans),
                "lines": sum(s.lines for s in scans),
                "skipped": [s.as_json() for s in skips],
                "error_lines": [] if verdict else tap.top(),
            }
        )
        if not verdict:
            out["initiating_rank"] = out["initiating"] = out["initiating_reason"] = None
        return out


_WORKER: Worker | None = None


def _init_worker(entries: Sequence[EntryView | Entry], options: Options) -> None:
    import signal

    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _WORKER = Worker(entries, options)


def _run_job(job: Job) -> dict[str, Any]:
    assert _WORKER is not None, "the pool initializer runs first"
    return _WORKER.run(job)


def _local(
    items: Iterator[Job | Skip], entries: Sequence[EntryView | Entry], options: Options, jobs: int
) -> Iterator[dict[str, Any] | Skip]:
    """Jobs over a process pool, at most `4 x jobs` in flight, results in job order."""
    if jobs <= 1:
        worker = Worker(entries, options)
        yield from (worker.run(i) if isinstance(i, Job) else i for i in items)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs, _init_worker, (entries, options)) as pool:
        window: deque[Any] = deque()
        for item in items:
            window.append(item if isinstance(item, Skip) else pool.apply_async(_run_job, (item,)))
            while len(window) > 4 * jobs:
                head = window.popleft()
                yield head if isinstance(head, Skip) else head.get()
        while window:
            head = window.popleft()
            yield head if isinstance(head, Skip) else head.get()


def _import_ray() -> Any:
    """Ray with Ray Data, imported only for `--ray`."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise TriageError(
            f"--ray needs Ray: pip install 'nanopedia[ray]' (or 'ray[data]') ({err})"
        ) from None
    return ray


class _RayWorker:
    """A Ray Data actor: the matcher built once, then batches of jobs (as JSON) to records."""

    def __init__(self, entries: list[Any], options: Options) -> None:
        import ray

        # `entries` is [ref]: a ref nested in a list is not resolved by Ray, so the actor's own
        # arguments stay small and a restarted actor can fetch the entries again.
        self.worker = Worker(ray.get(entries[0]), options)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy

        results = []
        for text in batch["job"]:
            row = json.loads(str(text))
            job = Job(row["name"], row["layout"], tuple(row["files"]))
            results.append(json.dumps(self.worker.run(job), sort_keys=True))
        return {
            "index": numpy.asarray(batch["index"], dtype=numpy.int64),
            "result": numpy.array(results, dtype=object),
        }


def _ray(
    items: Iterator[Job | Skip],
    entries: Sequence[EntryView | Entry],
    options: Options,
    jobs: int,
    address: str,
) -> Iterator[dict[str, Any] | Skip]:
    """Jobs as a Ray Data map on the cluster at `address` (empty: a local instance of `jobs`
    CPUs, no dashboard), `RAY_WINDOW` jobs per dataset, results in job order."""
    import logging

    ray = _import_ray()
    started = not ray.is_initialized()
    try:
        # Workers' output and the raylet's notices (a worker died, was OOM-killed) are not
        # forwarded to this process: they would land in stdout, inside `--format json`.
        if started and address:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        elif started:
            ray.init(
                num_cpus=jobs,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise TriageError(
            f"cannot join the Ray cluster at {address or 'a local instance'}: {err}"
        ) from None
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # no plan and timing chatter
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "disabled"
        actors = jobs if not address else max(1, int(ray.cluster_resources().get("CPU", 1)))
        shared = [ray.put(list(entries))]
        while window := [item for _, item in zip(range(RAY_WINDOW), items, strict=False)]:
            rows = [
                {"index": i, "job": json.dumps(asdict(item))}
                for i, item in enumerate(window)
                if isinstance(item, Job)
            ]
            done: dict[int, dict[str, Any]] = {}
            ready = iter(range(len(window)))
            pending = next(ready, None)
            if rows:
                data = ray.data.from_items(rows).map_batches(
                    _RayWorker,
                    fn_constructor_args=(shared, options),
                    batch_size=RAY_BATCH,
                    compute=ray.data.ActorPoolStrategy(size=min(actors, len(rows))),
                    batch_format="numpy",
                )
                for row in data.iter_rows():
                    done[int(row["index"])] = json.loads(row["result"])
                    while pending is not None and (
                        isinstance(window[pending], Skip) or pending in done
                    ):
                        yield (
                            cast(Skip, window[pending])
                            if pending not in done
                            else done.pop(pending)
                        )
                        pending = next(ready, None)
            while pending is not None:  # a job Ray did not return is a KeyError: a bug
                item = window[pending]
                yield done.pop(pending) if isinstance(item, Job) else item
                pending = next(ready, None)
    finally:
        if started:
            ray.shutdown()


Source = str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | Mapping[str, Any]


def stream(
    source: Source,
    entries: Sequence[EntryView | Entry],
    *,
    jobs: int | None = None,
    ray: str | None = None,
    job_pattern: str | None = None,
    options: Options = Options(),
) -> Iterator[dict[str, Any] | Skip]:
    """Job records and skips, one at a time, in job order: `source` is a path, paths, or a
    mapping job name -> lines / {file name: lines} (diagnosed in this process, whatever `jobs`
    and `ray` say). Bad paths, a bad pattern and a missing Ray raise `TriageError` here, before
    any job runs; the cluster is joined at the first `next()`."""
    if isinstance(source, Mapping):
        return _from_lines(source, entries, options)
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    items = find_jobs(paths, job_pattern)
    workers = jobs or os.cpu_count() or 1
    if ray is not None:
        _import_ray()
        return _ray(items, entries, options, workers, ray)
    return _local(items, entries, options, workers)


def _from_lines(
    source: Mapping[str, Any], entries: Sequence[EntryView | Entry], options: Options
) -> Iterator[dict[str, Any]]:
    worker = Worker(entries, options)
    for name, value in source.items():
        files = value.items() if isinstance(value, Mapping) else [(name, value)]
        opens = [(str(f), (lambda v=v: Lines(v))) for f, v in files]
        yield worker.run_streams(str(name), "lines", opens)  # type: ignore[arg-type]
