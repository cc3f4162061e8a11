"""`nanopedia verify`: run every entry's repros against the installed libraries and judge them.

A repro is two short scripts, `broken` and `fixed`. Each runs in a scratch folder, in a process
group of its own (two ranks: two processes, with the variables torchrun would set), under a
timeout that kills the whole group, with its output captured to files so a chatty or hung script
cannot block the runner. The judgement is pure: `judge` takes the two runs and the entry and says
what is wrong, so the rules are tested on tiny scripts without torch.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from nanopedia.content import apicheck
from nanopedia.content.fingerprints import compile_pattern
from nanopedia.content.validate import Source, text_line
from nanopedia.diagnosis import scan
from nanopedia.diagnosis.rank import diagnose
from nanopedia.errors import Problem
from nanopedia.model import Entry, Repro

#: Seconds a script may run before its process group is killed.
DEFAULT_TIMEOUT = 120.0
#: Bytes of a script's output kept (the end of it: errors come last).
OUTPUT_CAP = 1 << 20
#: Seconds the other rank gets to exit after one rank failed, before it is killed.
GRACE = 5.0
#: Lines of output shown under a failed repro.
TAIL_LINES = 25

#: Set for every script: CPU only, no hub downloads, one thread per rank (two repros of two ranks
#: share two cores), unbuffered so a killed script still leaves its output.
SCRIPT_ENV = {
    "CUDA_VISIBLE_DEVICES": "",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONWARNINGS": "default",
}


@dataclass(frozen=True, slots=True)
class Run:
    """What one script did."""

    code: int | None
    """Exit status (the worst of the ranks: the first non-zero one); None when it timed out."""
    output: str
    """stdout and stderr together; with two ranks, rank N's lines prefixed `[defaultN]:` as
    `torchrun --tee 3` prefixes them (torch adds its own `[rankN]:` to tracebacks)."""
    seconds: float
    """Wall time of the run."""

    @property
    def timed_out(self) -> bool:
        return self.code is None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one repro."""

    entry: str
    """Id of the entry the repro belongs to."""
    repro: Repro
    """The repro itself."""
    failures: tuple[str, ...]
    """What is wrong, one sentence each; empty when it passed."""
    broken: Run
    """The broken script's run."""
    fixed: Run | None
    """The fixed script's run (None when verify stopped before it)."""

    @property
    def passed(self) -> bool:
        return not self.failures


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a two-rank rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_script(code: str, ranks: int = 1, timeout: float = DEFAULT_TIMEOUT,
               python: str = sys.executable) -> Run:
    """Run one script as `ranks` processes in a scratch folder and collect its output."""
    with tempfile.TemporaryDirectory(prefix="nanopedia-repro-") as scratch:
        folder = Path(scratch)
        (folder / "script.py").write_text(code, encoding="utf-8")
        env = {**os.environ, **SCRIPT_ENV, "WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(free_port()), "LOCAL_WORLD_SIZE": str(ranks)}
        start = time.monotonic()
        procs, logs = [], []
        for rank in range(ranks):
            log = open(folder / f"rank{rank}.out", "wb")  # noqa: SIM115 (closed below)
            logs.append(log)
            procs.append(subprocess.Popen(
                [python, "script.py"], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}))
        codes = _wait(procs, start + timeout)
        seconds = time.monotonic() - start
        for log in logs:
            log.close()
        outputs = [_tail(folder / f"rank{rank}.out") for rank in range(ranks)]
    if ranks > 1:
        outputs = [_prefixed(text, f"[default{rank}]:") for rank, text in enumerate(outputs)]
    worst = None if None in codes else next((c for c in codes if c != 0), 0)
    return Run(worst, "".join(outputs), seconds)


def _wait(procs: Sequence[subprocess.Popen[bytes]], deadline: float) -> list[int | None]:
    """Exit codes in the order the ranks ended, or None for a rank still running at `deadline`.

    As torchrun does, once one rank fails the others are stopped (SIGTERM, then SIGKILL after
    `GRACE` seconds) instead of waiting in a collective for a peer that is gone. Every process
    group is killed at the end: nothing a repro started outlives it.
    """
    codes: list[int | None] = []
    running = list(procs)
    stop_at: float | None = None
    while running:
        now = time.monotonic()
        for proc in [p for p in running if p.poll() is not None]:
            running.remove(proc)
            codes.append(proc.returncode)
            if proc.returncode != 0 and stop_at is None and running:
                stop_at = now + GRACE
                for other in running:
                    _signal(other, signal.SIGTERM)
        if running and (now >= deadline or (stop_at is not None and now >= stop_at)):
            if stop_at is None or now >= deadline:
                codes += [None] * len(running)
            else:
                codes += [-signal.SIGKILL] * len(running)
            break
        time.sleep(0.02)
    for proc in procs:
        _signal(proc, signal.SIGKILL)
        proc.wait()
    return codes


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path) -> str:
    """The last `OUTPUT_CAP` bytes of a file, as text."""
    with open(path, "rb") as f:
        f.seek(0, io.SEEK_END)
        size = f.tell()
        f.seek(max(size - OUTPUT_CAP, 0))
        data = f.read()
    return data.decode("utf-8", errors="replace")


def _prefixed(text: str, prefix: str) -> str:
    return "".join(prefix + line + "\n" for line in text.splitlines())


def matched_lines(entry: Entry, ids: Iterable[str], output: str) -> dict[str, str | None]:
    """For each fingerprint id, the first output line it matches (None if none)."""
    lines = output.splitlines()
    found: dict[str, str | None] = {}
    by_id = {fp.id: fp for fp in entry.fingerprints}
    for name in ids:
        regex = compile_pattern(by_id[name])
        found[name] = next((line for line in lines if regex.search(line)), None)
    return found


def top_entry(matcher: scan.Matcher, output: str) -> str | None:
    """The entry `nanopedia diagnose` ranks first on this output (None when nothing matched)."""
    scanned = scan.scan(io.BytesIO(output.encode("utf-8")), "repro.log", matcher)
    result = diagnose([scanned])
    return result.matches[0].id if result.matches else None


def missing_imports(entries: Iterable[Entry]) -> list[str]:
    """Top-level packages the repros of `entries` import that this interpreter cannot find."""
    wanted: set[str] = set()
    for entry in entries:
        for repro in entry.repro:
            for code in (repro.broken, repro.fixed):
                wanted |= apicheck.imported_packages(code)
    return sorted(name for name in wanted if not apicheck.installed(name))


def judge(entry: Entry, repro: Repro, broken: Run, fixed: Run | None,
          ranked_first: str | None) -> tuple[str, ...]:
    """Everything wrong with a repro's runs; `ranked_first` is diagnosis's top entry on the
    broken output."""
    wrong: list[str] = []
    if broken.timed_out:
        wrong.append(f"the broken script ran past its timeout ({broken.seconds:.0f} s)")
    elif repro.expect == "error" and broken.code == 0:
        wrong.append("the broken script exited 0: it does not reproduce the failure")
    for name, line in matched_lines(entry, repro.shows, broken.output).items():
        if line is None:
            wrong.append(f"fingerprint '{name}' matches no line of the broken output")
    if repro.shows and not broken.timed_out and ranked_first != entry.id:
        wrong.append(f"diagnose ranks {ranked_first or 'nothing'!r} first on the broken output, "
                     f"not '{entry.id}'")
    if fixed is None:
        return tuple(wrong)
    if fixed.timed_out:
        wrong.append(f"the fixed script ran past its timeout ({fixed.seconds:.0f} s)")
    elif fixed.code != 0:
        wrong.append(f"the fixed script exited {fixed.code}")
    # The fixed run must show neither the failure's decisive lines nor what the broken run
    # showed: then a repro whose `fixed` is its `broken` can never pass.
    telling = [fp.id for fp in entry.fingerprints if fp.indicates == "decisive"]
    telling += [name for name in repro.shows if name not in telling]
    for name, line in matched_lines(entry, telling, fixed.output).items():
        if line is not None:
            wrong.append(f"the fixed output still shows fingerprint '{name}': {line!r}")
    return tuple(wrong)


def verify_one(matcher: scan.Matcher, entry: Entry, repro: Repro,
               timeout: float = DEFAULT_TIMEOUT, python: str = sys.executable) -> Outcome:
    """Run one repro's two scripts and judge them; `matcher` holds every entry's fingerprints
    (built once for all repros)."""
    broken = run_script(repro.broken, repro.ranks, timeout, python)
    first = top_entry(matcher, broken.output) if repro.shows else None
    fixed = run_script(repro.fixed, repro.ranks, timeout, python)
    return Outcome(entry.id, repro, judge(entry, repro, broken, fixed, first), broken, fixed)


def verify_all(entries: Sequence[Entry], chosen: Sequence[Entry], jobs: int,
               timeout: float = DEFAULT_TIMEOUT,
               done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every repro of `chosen`, `jobs` at a time, in entry then repro order; `done` hears of
    each as it finishes (the CLI prints a line per repro while the rest run)."""
    work = [(e, r) for e in chosen for r in e.repro]
    matcher = scan.Matcher(entries)

    def one(item: tuple[Entry, Repro]) -> Outcome:
        outcome = verify_one(matcher, item[0], item[1], timeout)
        if done is not None:
            done(outcome)
        return outcome

    # Two-rank repros first: they are the longest, so the pool does not end on one of them alone.
    order = sorted(range(len(work)), key=lambda i: -work[i][1].ranks)
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        results = dict(zip(order, pool.map(one, [work[i] for i in order]), strict=True))
    return [results[i] for i in range(len(work))]


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last lines of an output, for the report of a failed repro."""
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True, slots=True)
class Located:
    """A finding of the example check, at its place in the entry file."""

    where: tuple[str, int, int]
    """(path, line, column) in the entry file."""
    message: str
    """What the installed library does not have."""


@dataclass(frozen=True, slots=True)
class FailedRun:
    """A `runs_on_cpu` example that did not exit 0."""

    name: str
    """`<entry>/example-<n>`."""
    reason: str
    """Exit status or timeout, with the last line of output."""


@dataclass(frozen=True, slots=True)
class ExampleCheck:
    """What checking the python examples of some entries found."""

    findings: tuple[Located, ...]
    checked: int
    """Python examples read against the installed libraries."""
    ran: int
    """Examples executed (`runs_on_cpu`)."""
    missing: dict[str, int]
    """Package not installed here to the number of examples that import it."""
    failed_runs: list[FailedRun]

    def missing_text(self) -> str:
        return ", ".join(f"{name} not installed: {n}" for name, n in sorted(self.missing.items()))


def check_examples(sources: Sequence[Source], timeout: float = DEFAULT_TIMEOUT) -> ExampleCheck:
    """Every python example of `sources` read against the installed libraries; those marked
    `runs_on_cpu` run too."""
    findings: list[Located] = []
    missing: dict[str, int] = {}
    failed: list[FailedRun] = []
    checked = ran = 0
    for src in sources:
        for i, example in enumerate(src.entry.code_examples):
            if example.language != "python":
                continue
            checked += 1
            report = apicheck.check(example.code)
            for name in report.missing:
                missing[name] = missing.get(name, 0) + 1
            where = ("code_examples", i, "code")
            indent = _block_indent(src, where)
            for f in report.findings:
                line, _ = text_line(src, where, f.line - 1)
                findings.append(Located((src.doc.path, line, indent + f.col), f.message))
            if example.runs_on_cpu:
                ran += 1
                run = run_script(example.code, 1, timeout)
                if run.code != 0:
                    status = "ran past its timeout" if run.timed_out else f"exited {run.code}"
                    last = tail(run.output, 1)
                    failed.append(FailedRun(f"{src.entry.id}/example-{i + 1}",
                                            f"the example {status}: {last}"))
    return ExampleCheck(tuple(findings), checked, ran, missing, failed)


def _block_indent(src: Source, where: tuple[str | int, ...]) -> int:
    """The indentation of a block scalar's text in the file (0 when it is not a block)."""
    if where not in src.doc.blocks:
        return 0
    line, _ = text_line(src, where, 0)
    try:
        text = Path(src.doc.path).read_text(encoding="utf-8").split("\n")[line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return 0
    return len(text) - len(text.lstrip(" "))


def environment() -> str:
    """`torch 2.13.0, Python 3.11.7`: what the repros ran with."""
    parts = []
    for name in ("torch", "transformers"):
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    parts.append(f"Python {sys.version.split()[0]}")
    return ", ".join(parts)


def as_json(outcomes: Sequence[Outcome], examples: ExampleCheck, found: Sequence[Problem],
            seconds: float) -> dict[str, object]:
    """The whole verification as one JSON object (`verify --format json`)."""

    def run(r: Run | None) -> dict[str, object] | None:
        if r is None:
            return None
        return {"exit": r.code, "timed_out": r.timed_out, "seconds": round(r.seconds, 2),
                "output_tail": tail(r.output)}

    return {
        "environment": environment(),
        "seconds": round(seconds, 2),
        "repros": [{"entry": o.entry, "id": o.repro.id, "ranks": o.repro.ranks,
                    "passed": o.passed, "failures": list(o.failures),
                    "broken": run(o.broken), "fixed": run(o.fixed)} for o in outcomes],
        "examples": {"checked": examples.checked, "ran": examples.ran,
                     "not_installed": examples.missing,
                     "problems": [p.as_dict() for p in found],
                     "failed_runs": [{"name": f.name, "reason": f.reason}
                                     for f in examples.failed_runs]},
        "passed": all(o.passed for o in outcomes) and not found and not examples.failed_runs,
    }
