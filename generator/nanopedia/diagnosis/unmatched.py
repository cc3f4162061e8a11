"""What `nanopedia diagnose` says when no entry matched: the error line it found, its class, where
it was raised, and the next step; and inputs that are no logs at all (empty, binary, one line with
no line break), named as `triage` names them.

The error line is the last exception line of the first traceback (`RuntimeError: ...` under
`Traceback (most recent call last):`, rank prefixes allowed), else the first fatal native line (a
C++ `terminate called`, a signal, a non-zero exit code that stands for one, a glog `F` line). Its
class is the exception type, or the signal behind the exit code; where it was raised comes from
the path of the traceback's last frame: user code, the standard library, or a library named by its
folder under `site-packages`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import quote, quote_plus

from nanopedia.diagnosis.jobs import HEAD_BYTES, SKIP_REASONS
from nanopedia.diagnosis.report import CONTROLS
from nanopedia.diagnosis.text_report import MAX_PIECES, MIN_WIDTH, WIDTH
from nanopedia.site.wrapping import cut, fill

#: Bytes of a log read when looking for its first error (the whole log of any usual size).
SEARCH_BYTES = 256 << 20
#: Characters of the error line kept.
ERROR_CHARS = 300

#: The way on for a contributor, in every format.
CONTRIBUTE = "contribute: nanopedia new ENTRY-ID (entries/README.md says what an entry holds)"
#: Inputs that are no log, with what `triage` calls them (jobs.SKIP_REASONS) and "empty".
INPUT_REASONS = {
    "empty": "no bytes at all: nothing to diagnose",
    "binary": SKIP_REASONS["binary"],
    "single-line": "no line break at all: not a log, or one cut before its first line ended",
}

_PREFIX = r"(?:\[[A-Za-z_]*\d{1,6}\]:|\[default\d+\]:|[A-Za-z][\w.-]*\d[\w.-]*: )?"
_TRACEBACK = re.compile(rf"^(\s*{_PREFIX}\s*)Traceback \(most recent call last\):")
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_EXCEPTION = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure|"
    r"Fault|Abort|Timeout|[A-Z][a-z]+Error))(?::\s?(.*))?$"
)
_BARE_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::\s(.*))?$")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")
_WHAT = re.compile(r"what\(\):\s*(.*)")
_SIGNAL_WORDS = {
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
    "Aborted (core dumped)": "SIGABRT",
    "Killed": "SIGKILL",
}
_SIGNAL_TEXT = re.compile(
    r"(?:^|\s|: )(" + "|".join(re.escape(w) for w in _SIGNAL_WORDS) + r")(?:\s|$)"
)
_SIGNAL_NAME = re.compile(r"\bSignal (\d+) \((SIG[A-Z]+)\)|\bsignal (\d+)\b|\b(SIG[A-Z]{3,6})\b")
_EXITCODE = re.compile(
    r"exitcode\s*:?\s*(-?\d+)|exit (?:code|status)[ :]+(\d+)|"
    r"exited with (?:exit )?code (\d+)"
)
_FATAL = re.compile(
    r"Fatal Python error: .*|^\s*" + _PREFIX + r"\s*\[?F\d{4} \d\d:\d\d:\d\d.*|"
    r"CUDA error: .*|NCCL error.*"
)


@dataclass(frozen=True, slots=True)
class Found:
    """The error line a log shows when no entry matched."""

    text: str
    """The line, without its rank prefix, cut to `ERROR_CHARS`."""
    file: str
    """The log's name."""
    line: int
    """Its line number (of the `terminate called` line for a C++ exception)."""
    kind: str
    """The exception type (`torch.OutOfMemoryError`), the C++ type thrown, or the signal behind
    an exit code (`signal 9 (SIGKILL)`); `unknown` when the line names none."""
    raised_in: str
    """`user code (train.py)`, `the Python standard library`, `library torch`, or `native code`
    for a line with no Python traceback."""


@dataclass(frozen=True, slots=True)
class Missed:
    """What a diagnosis that matched nothing, and read no error file or dump, says instead:
    the JSON's `unmatched`."""

    error: Found | None
    """The first error line of the logs, in the order given."""
    inputs: tuple[tuple[str, str], ...] = ()
    """Each input that is no log, by name, with its reason (a key of `INPUT_REASONS`)."""


def signal_text(number: int) -> str:
    """`signal 9 (SIGKILL)`: the number with its name when it has one."""
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def raised_in(path: str) -> str:
    """Where a frame's file lives: a library's folder under site- or dist-packages, the standard
    library, or user code."""
    norm = path.replace("\\", "/")
    m = re.search(r"/(?:site|dist)-packages/([^/]+)", norm)
    if m:
        name = m.group(1).removesuffix(".py")
        return f"library {name.split('-')[0]}"
    if norm.startswith("<frozen") or re.search(r"/lib/python\d\.\d+/", norm):
        return "the Python standard library"
    return f"user code ({norm.rsplit('/', 1)[-1]})"


def find(lines: Iterable[str], file: str) -> Found | None:
    """The first traceback's exception line, else the first fatal native line, in `lines`
    without their line breaks (`str.splitlines`)."""
    fatal: Found | None = None
    prefix: str | None = None
    last_frame: str | None = None
    pending_terminate: tuple[int, str] | None = None
    for n, line in enumerate(lines, 1):
        if prefix is None:
            m = _TRACEBACK.match(line)
            if m:
                prefix, last_frame = m.group(1), None
                continue
            if fatal is None:
                fatal, pending_terminate = _fatal(line, n, file, pending_terminate)
            continue
        body = (
            line[len(prefix) :] if line.startswith(prefix) else line if not prefix.strip() else None
        )
        if body is None:  # another rank's line inside this rank's traceback
            continue
        frame = _FRAME.match(body)
        if frame:
            last_frame = frame.group(1)
            continue
        if not body.strip() or body[:1].isspace():
            continue  # the source line under a frame, a caret line
        m = _EXCEPTION.match(body.strip()) or _BARE_EXCEPTION.match(body.strip())
        if m:
            kind = m.group(1)
            where = raised_in(last_frame) if last_frame else "unknown"
            return Found(body.strip()[:ERROR_CHARS], file, n, kind, where)
        prefix = None  # not a traceback after all: keep looking
    if pending_terminate and fatal is None:
        n, kind = pending_terminate
        fatal = Found(
            f"terminate called after throwing an instance of '{kind}'", file, n, kind, "native code"
        )
    return fatal


def _fatal(
    line: str, n: int, file: str, terminate: tuple[int, str] | None
) -> tuple[Found | None, tuple[int, str] | None]:
    """A fatal native line, or the `terminate called` line waiting for its `what():`."""
    if terminate:
        what = _WHAT.search(line)
        if what:
            return Found(
                what.group(1).strip()[:ERROR_CHARS], file, terminate[0], terminate[1], "native code"
            ), None
    m = _TERMINATE.search(line)
    if m:
        return None, (n, m.group(1))
    text = line.strip()[:ERROR_CHARS]
    words = _SIGNAL_TEXT.search(line)
    if words:
        name = _SIGNAL_WORDS[words.group(1)]
        return Found(
            text, file, n, signal_text(int(signal.Signals[name])), "native code"
        ), terminate
    code = _EXITCODE.search(line)
    if code:
        value = int(next(g for g in code.groups() if g is not None))
        number = -value if value < 0 else value - 128 if value > 128 else None
        if number:
            return Found(text, file, n, signal_text(number), "native code"), terminate
        named = _SIGNAL_NAME.search(line)
        if value and named:
            return Found(text, file, n, _signal_of(named), "native code"), terminate
        if value:
            return Found(text, file, n, f"exit code {value}", "native code"), terminate
    if _FATAL.search(line):
        return Found(text, file, n, "unknown", "native code"), terminate
    return None, terminate


def _signal_of(m: re.Match[str]) -> str:
    if m.group(1):
        return signal_text(int(m.group(1)))
    if m.group(3):
        return signal_text(int(m.group(3)))
    try:
        return signal_text(int(signal.Signals[m.group(4)]))
    except KeyError:
        return m.group(4)


def input_problem(head: bytes) -> str | None:
    """What makes an input no log, as `triage` names it (`INPUT_REASONS`): no bytes, NUL bytes
    in its head, or no line break in all it holds (a log that ended, or a head of 1 MiB)."""
    if not head:
        return "empty"
    if b"\0" in head[:HEAD_BYTES]:
        return "binary"
    if b"\n" not in head and b"\r" not in head:
        return "single-line"
    return None


def next_steps(found: Found | None, base_url: str | None) -> list[str]:
    """Where to go from here: the site's search for the error line, and how to contribute."""
    steps = []
    if found and base_url:
        steps.append(f"search: {search_url(found, base_url)}")
    elif found:
        steps.append(
            f"search: search.html?q={quote(_query(found))} on a Nanopedia site (set "
            "base_url in nanopedia.toml for a full link)"
        )
    steps.append(CONTRIBUTE)
    return steps


def search_url(found: Found, base_url: str) -> str:
    """The site's search for the error line under `base_url`."""
    return f"{base_url.rstrip('/')}/search.html?q={quote(_query(found))}"


def _query(found: Found) -> str:
    """The part of the error line worth searching: the message without its numbers' noise."""
    return found.text[:120]


def as_json(missed: Missed, base_url: str | None) -> dict[str, Any]:
    """The `unmatched` object of `diagnose --format json` and of `Result.as_json()`."""
    found = missed.error
    return {
        "error": found.text if found else None,
        "file": found.file if found else None,
        "line": found.line if found else None,
        "class": found.kind if found else None,
        "raised_in": found.raised_in if found else None,
        "inputs": [{"file": f, "reason": r, "detail": INPUT_REASONS[r]} for f, r in missed.inputs],
        "next": next_steps(found, base_url),
    }


def read(path: str, name: str) -> tuple[str | None, Found | None]:
    """The input problem of a log file and its first error line (its first `SEARCH_BYTES`).
    Standard input was read by the scan and cannot be read again: nothing."""
    if path == "-":
        return None, None
    from nanopedia.diagnosis.logs import open_log

    stream, _ = open_log(path)
    with stream:
        return read_stream(stream, name)


def read_stream(stream: IO[bytes], name: str) -> tuple[str | None, Found | None]:
    """`read` of an open log (a file, or a text held in memory as `io.BytesIO`)."""
    head = stream.read(1 << 20)
    ended = len(head) < 1 << 20
    problem = input_problem(head)
    if problem == "binary" or problem == "empty":
        return problem, None
    if problem == "single-line" and not ended:
        return problem, None
    data = head + (b"" if ended else stream.read(SEARCH_BYTES - len(head)))
    text = data.decode("utf-8", "replace").splitlines()
    if not ended and len(data) >= SEARCH_BYTES and text:
        text = text[:-1]
    return problem, find(_clean(text), name)


_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def _clean(lines: list[str]) -> Iterable[str]:
    return (_CSI.sub("", line) for line in lines)


def as_text(missed: Missed, base_url: str | None, width: int = WIDTH) -> str:
    """The terminal answer when no entry matched, fitted to `width` columns (at least
    `MIN_WIDTH`): the error line wrapped, the search link whole on a line."""
    width = max(width, MIN_WIDTH)
    found = missed.error
    out = ["no known failure matched"]

    def prose(text: str) -> None:
        out.extend(cut(line, width) for line in fill(text.translate(CONTROLS), width, "  ", "    "))

    for file, reason in missed.inputs:
        prose(f"input: {file}: {reason} ({INPUT_REASONS[reason]})")
    if found:
        prose(f"error line at {found.file}:{found.line}:")
        lines = fill(found.text.translate(CONTROLS), width, "    ", "    ")
        if len(lines) > MAX_PIECES:
            lines = [*lines[: MAX_PIECES - 1], cut(lines[MAX_PIECES - 1] + " …", width)]
        out += lines
        prose(f"class: {found.kind}")
        prose(f"raised in: {found.raised_in}")
        where = "the site" if base_url else "a Nanopedia site"
        hint = "" if base_url else " (set base_url in nanopedia.toml for a full link)"
        prose(f"next: search {where} for the error line{hint}:")
        out.append("    " + search_link(found, base_url, width - 4))
    elif not missed.inputs:
        prose("error line: none found (no traceback, no fatal native line)")
    prose(f"next: {CONTRIBUTE}")
    return "\n".join(out)


def search_link(found: Found, base_url: str | None, room: int) -> str:
    """The site's search for the error line, the query cut at a word so that the link fits
    `room` columns (a link broken over lines cannot be opened); the first word at least."""
    base = f"{base_url.rstrip('/')}/search.html?q=" if base_url else "search.html?q="
    words = _query(found).split(" ")
    for n in range(len(words), 0, -1):
        link = base + quote_plus(" ".join(words[:n]))
        if len(link) <= room:
            break
    return link


def as_markdown(missed: Missed, base_url: str | None) -> str:
    """The same for a GitHub issue or a Slack thread."""
    from nanopedia.diagnosis.report import _code, _md

    found = missed.error
    out = ["**nanopedia:** no known failure matched", ""]
    for file, reason in missed.inputs:
        out.append(f"- **Input:** {_md(file)}: `{reason}` ({INPUT_REASONS[reason]})")
    if found:
        out += [
            f"- **Error line:** `{_code(found.text)}` ({_md(found.file)}:{found.line})",
            f"- **Class:** `{_code(found.kind)}`",
            f"- **Raised in:** {_md(found.raised_in)}",
        ]
    steps = next_steps(found, base_url)
    if found and base_url:
        # The site's own link stays live (`_md` would break its `://`): an autolink, whose
        # query, the log's text, is percent-encoded and so holds no Markdown.
        out.append(f"- **Next:** search: <{search_url(found, base_url)}>")
        steps = steps[1:]
    out += [f"- **Next:** {_md(step)}" for step in steps]
    return "\n".join(out)
