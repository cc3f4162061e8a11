"""`nanopedia verify`: run every entry's repros against the installed libraries and judge them.

A repro is two short scripts, `broken` and `fixed`, written by strangers. Each runs in a sandbox
of its own (`sandbox`: no network, no secrets, nothing writable but its `/tmp`, resource limits,
an unprivileged user) through a launcher (`repro_launch`) that starts its ranks (two ranks: two
processes in the one sandbox, with the variables torchrun would set) under a timeout; when it
ends, every process in the sandbox dies. Output comes back through pipes, capped as it is read,
so a chatty, hostile or hung script cannot block or fill the runner. The judgement is pure:
`judge` takes the two runs and the entry and says what is wrong, so the rules are tested on tiny
scripts without torch.
"""

from __future__ import annotations

import io
import json
import os
import selectors
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
from typing import IO, cast

from nanopedia.commands import repro_launch, sandbox
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


def script_env(ranks: int, home: str, python: str) -> dict[str, str]:
    """Everything a script's environment holds: an allow-list, never the caller's variables
    (its tokens and keys), so a repro can neither read a secret nor depend on the caller's
    setup. `RANK` and `LOCAL_RANK` are added per rank."""
    path = os.pathsep.join(
        [str(Path(python).absolute().parent), "/usr/local/bin", "/usr/bin", "/bin"]
    )
    return {
        **SCRIPT_ENV,
        "PATH": path,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "USER": "nobody",
        "LOGNAME": "nobody",
        "WORLD_SIZE": str(ranks),
        "LOCAL_WORLD_SIZE": str(ranks),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }


class _Tail:
    """The last `cap` bytes read from a pipe: memory stays bounded whatever a script prints,
    and nothing of it reaches the disk."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.cap:
            del self.data[: len(self.data) - self.cap]

    def text(self) -> str:
        return bytes(self.data[-self.cap :]).decode("utf-8", errors="replace")


#: Seconds past the script's own timeout before the launcher itself is killed (it stops the
#: ranks at the timeout, then waits for them to die).
LAUNCH_SLACK = 15.0
#: Seconds the pipes are still read once the launcher has exited (without the sandbox, a
#: process that left the ranks' sessions may hold a pipe open for ever).
DRAIN = 1.0


def run_script(
    code: str,
    ranks: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    python: str = sys.executable,
    sandboxed: bool = True,
) -> Run:
    """Run one script as `ranks` processes and collect their output.

    One launcher (`repro_launch`) starts the ranks; `sandboxed`, it runs in the sandbox
    (`sandbox.command`), so both ranks share one network namespace and every process dies with
    it. Output comes back through one pipe per rank, of which the last `OUTPUT_CAP` bytes are
    kept as they are read."""
    box = sandbox.find() if sandboxed else None
    if sandboxed and box is None:
        raise OSError(f"bwrap is not installed: {sandbox.MISSING_HINT}")
    launcher = Path(repro_launch.__file__).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(
        prefix="nanopedia-repro-", ignore_cleanup_errors=True
    ) as scratch:
        home = "/tmp" if box else scratch
        env = script_env(ranks, home, python)
        pipes = [os.pipe() for _ in range(ranks)]
        writes = [w for _, w in pipes]
        settings = {
            "fds": writes,
            "env": env,
            "timeout": timeout,
            "grace": GRACE,
            "limits": sandbox.limits_for(timeout).as_dict(),
        }
        inner = [python, "-I", "-c", launcher, json.dumps(settings)]
        argv = sandbox.command(box, inner, python) if box else inner
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=scratch,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                pass_fds=writes,
                start_new_session=True,
            )
        finally:
            for _, w in pipes:
                os.close(w)
        tails = _collect(proc, code, [r for r, _ in pipes], start + timeout + LAUNCH_SLACK)
        seconds = time.monotonic() - start
    status, errors = tails[-2].text(), tails[-1].text()
    codes = _codes(status, ranks)
    outputs = [t.text() for t in tails[:ranks]]
    if codes is None:  # the launcher never reported: killed at the backstop, or bwrap failed
        late = proc.returncode in (-signal.SIGKILL, None)
        codes = [None] * ranks if late else [proc.returncode or 1] * ranks
        if errors.strip():
            outputs.append(f"nanopedia: the repro's launcher failed: {errors.strip()}\n")
    if ranks > 1:
        outputs = [_prefixed(text, f"[default{rank}]:") for rank, text in enumerate(outputs)]
    worst = None if None in codes else next((c for c in codes if c != 0), 0)
    return Run(worst, "".join(outputs), seconds)


def _collect(
    proc: subprocess.Popen[bytes], code: str, reads: list[int], deadline: float
) -> list[_Tail]:
    """Hand the launcher the script, then read every rank's pipe, the launcher's stdout and its
    stderr until they close (or `deadline`: then the launcher is killed, and with it the
    sandbox). Closes every pipe it read."""
    stdin, stdout, stderr = (
        cast(IO[bytes], proc.stdin),
        cast(IO[bytes], proc.stdout),
        cast(IO[bytes], proc.stderr),
    )
    try:
        stdin.write(code.encode("utf-8"))
        stdin.close()
    except BrokenPipeError:  # the launcher died first: its stderr says why
        pass
    fds = [*reads, stdout.fileno(), stderr.fileno()]
    tails = [_Tail(OUTPUT_CAP) for _ in reads] + [_Tail(1 << 16), _Tail(1 << 16)]
    where = dict(zip(fds, tails, strict=True))
    ended_at: float | None = None
    with selectors.DefaultSelector() as sel:
        for fd in fds:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if ended_at is None and proc.poll() is not None:
                ended_at = now
            if now >= deadline and proc.poll() is None:
                _kill(proc)
            if ended_at is not None and now >= ended_at + DRAIN:
                break
            for key, _ in sel.select(timeout=0.1):
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if chunk:
                    where[fd].add(chunk)
                else:
                    sel.unregister(fd)
    for fd in reads:
        os.close(fd)
    stdout.close()
    stderr.close()
    _kill(proc)
    return tails


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the launcher (or bwrap) and its session; wait for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _codes(status: str, ranks: int) -> list[int | None] | None:
    """The exit codes the launcher printed, or None when it printed none that make sense."""
    try:
        codes = json.loads(status.strip().splitlines()[-1])["codes"]
    except (ValueError, IndexError, KeyError, TypeError):
        return None
    ok = (
        isinstance(codes, list)
        and len(codes) == ranks
        and all(c is None or (isinstance(c, int) and not isinstance(c, bool)) for c in codes)
    )
    return codes if ok else None


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


def judge(
    entry: Entry, repro: Repro, broken: Run, fixed: Run | None, ranked_first: str | None
) -> tuple[str, ...]:
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
        wrong.append(
            f"diagnose ranks {ranked_first or 'nothing'!r} first on the broken output, "
            f"not '{entry.id}'"
        )
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


def verify_one(
    matcher: scan.Matcher,
    entry: Entry,
    repro: Repro,
    timeout: float = DEFAULT_TIMEOUT,
    python: str = sys.executable,
    sandboxed: bool = True,
) -> Outcome:
    """Run one repro's two scripts and judge them; `matcher` holds every entry's fingerprints
    (built once for all repros)."""
    broken = run_script(repro.broken, repro.ranks, timeout, python, sandboxed)
    first = top_entry(matcher, broken.output) if repro.shows else None
    fixed = run_script(repro.fixed, repro.ranks, timeout, python, sandboxed)
    return Outcome(entry.id, repro, judge(entry, repro, broken, fixed, first), broken, fixed)


def verify_all(
    entries: Sequence[Entry],
    chosen: Sequence[Entry],
    jobs: int,
    timeout: float = DEFAULT_TIMEOUT,
    done: Callable[[Outcome], None] | None = None,
    sandboxed: bool = True,
) -> list[Outcome]:
    """Every repro of `chosen`, `jobs` at a time, in entry then repro order; `done` hears of
    each as it finishes (the CLI prints a line per repro while the rest run)."""
    work = [(e, r) for e in chosen for r in e.repro]
    matcher = scan.Matcher(entries)

    def one(item: tuple[Entry, Repro]) -> Outcome:
        outcome = verify_one(matcher, item[0], item[1], timeout, sandboxed=sandboxed)
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


def check_examples(
    sources: Sequence[Source], timeout: float = DEFAULT_TIMEOUT, sandboxed: bool = True
) -> ExampleCheck:
    """Every python example of `sources` read against the installed libraries; those marked
    `runs_on_cpu` run too. Both happen in the sandbox: reading an example imports what it
    imports, and a module's import-time code (`import this` prints, `import unittest.__main__`
    runs a test program) must not run in this process."""
    findings: list[Located] = []
    missing: dict[str, int] = {}
    failed: list[FailedRun] = []
    examples = [
        (src, i, example)
        for src in sources
        for i, example in enumerate(src.entry.code_examples)
        if example.language == "python"
    ]
    reports = _api_reports([e.code for _, _, e in examples], timeout, sandboxed)
    ran = 0
    for (src, i, example), report in zip(examples, reports, strict=True):
        where = ("code_examples", i, "code")
        if isinstance(report, str):
            line, _ = text_line(src, where, 0)
            findings.append(
                Located(
                    (src.doc.path, line, _block_indent(src, where) + 1),
                    f"the example cannot be checked: {report}",
                )
            )
            continue
        for name in report.missing:
            missing[name] = missing.get(name, 0) + 1
        indent = _block_indent(src, where)
        for f in report.findings:
            line, _ = text_line(src, where, f.line - 1)
            findings.append(Located((src.doc.path, line, indent + f.col), f.message))
        if example.runs_on_cpu:
            ran += 1
            run = run_script(example.code, 1, timeout, sandboxed=sandboxed)
            if run.code != 0:
                status = "ran past its timeout" if run.timed_out else f"exited {run.code}"
                last = tail(run.output, 1)
                failed.append(
                    FailedRun(f"{src.entry.id}/example-{i + 1}", f"the example {status}: {last}")
                )
    return ExampleCheck(tuple(findings), len(examples), ran, missing, failed)


#: Seconds the check of all examples may take (it imports torch and friends once).
API_TIMEOUT = 600.0


def _api_reports(codes: list[str], timeout: float, sandboxed: bool) -> list[apicheck.Report | str]:
    """`apicheck.check` of each code, run in one sandboxed process; when that one gives no
    answer (an example's module killed it), each code in a process of its own. A code whose
    check never answers gets why, as a string."""
    if not codes:
        return []
    run = run_script(apicheck.script(codes), 1, max(timeout, API_TIMEOUT), sandboxed=sandboxed)
    found = apicheck.reports(run.output, len(codes))
    if found is not None:
        return found
    out: list[apicheck.Report | str] = []
    for code in codes:
        run = run_script(apicheck.script([code]), 1, timeout, sandboxed=sandboxed)
        one = apicheck.reports(run.output, 1)
        if one is not None:
            out.append(one[0])
        else:
            status = "ran past its timeout" if run.timed_out else f"exited {run.code}"
            out.append(f"checking it {status}: {tail(run.output, 1)}")
    return out


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


def as_json(
    outcomes: Sequence[Outcome], examples: ExampleCheck, found: Sequence[Problem], seconds: float
) -> dict[str, object]:
    """The whole verification as one JSON object (`verify --format json`)."""

    def run(r: Run | None) -> dict[str, object] | None:
        if r is None:
            return None
        return {
            "exit": r.code,
            "timed_out": r.timed_out,
            "seconds": round(r.seconds, 2),
            "output_tail": tail(r.output),
        }

    return {
        "environment": environment(),
        "seconds": round(seconds, 2),
        "repros": [
            {
                "entry": o.entry,
                "id": o.repro.id,
                "ranks": o.repro.ranks,
                "passed": o.passed,
                "failures": list(o.failures),
                "broken": run(o.broken),
                "fixed": run(o.fixed),
            }
            for o in outcomes
        ],
        "examples": {
            "checked": examples.checked,
            "ran": examples.ran,
            "not_installed": examples.missing,
            "problems": [p.as_dict() for p in found],
            "failed_runs": [{"name": f.name, "reason": f.reason} for f in examples.failed_runs],
        },
        "passed": all(o.passed for o in outcomes) and not found and not examples.failed_runs,
    }
