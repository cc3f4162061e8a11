"""A time-boxed fuzz of `check` and `diagnose` with hypothesis: untrusted entries and logs must
give a located problem or an answer, never a traceback, within a bounded time.

Entries: a real entry's YAML with one field's text replaced, or its bytes damaged, checked by
the CLI in-process (exit 0, 1 or 2; exit 3 or an exception is a finding). Logs: real excerpts of
the corpus cut, spliced, wrapped, with control bytes and huge numbers put in, scanned and ranked
(a scan must take under `SLOW_S` seconds). Not part of the default test run. Run:
`.venv/bin/python bench/fuzz.py [--minutes 20]`; it prints the examples tried and any finding.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logcorpus import ROOT, log_bytes, real_cases  # noqa: E402

from nanopedia.cli import main as cli  # noqa: E402
from nanopedia.content.corpus import gather  # noqa: E402
from nanopedia.diagnosis import contract, rank, scan  # noqa: E402

#: A scan of a fuzzed log (a few hundred KB at most) slower than this is a finding.
SLOW_S = 10.0
ENTRIES = sorted((ROOT / "entries").glob("*.yaml"))
ENTRY_TEXTS = [p.read_text() for p in ENTRIES if p.name != "tags.yaml"]
LOGS = [log_bytes(c.logs[0]) for c in real_cases()]
NASTY = [
    "\x00",
    "\u202e",
    "\x1b]52;c;AAAA\x07",
    "\r",
    "\r\n",
    "[rank" + "9" * 300 + "]:",
    "global_ranks=[" + "1, " * 500 + "]",
    "(?:a|a)*b",
    "![" * 200,
    "](//evil/x)",
    "Root Cause (first observed failure):\n  rank      : 1 (local_rank: 1)\n",
    "\t" * 50,
    "\ufffd",
    "&#0;",
    "{{ 7*7 }}",
    "<script>alert(1)</script>",
    "\\",
    "'",
    '"',
    ": ",
    "- ",
]
MATCHER = scan.Matcher(gather(ROOT / "entries")[0].entries)
tried = {"entries": 0, "logs": 0}


def run_check(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "entries"
        folder.mkdir()
        (folder / "tags.yaml").write_bytes((ROOT / "entries" / "tags.yaml").read_bytes())
        target = folder / "fuzzed-entry.yaml"
        target.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "replace"))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli(["check", str(folder)])
        assert code in (0, 1, 2), f"check exited {code}"
    tried["entries"] += 1


@given(
    st.sampled_from(ENTRY_TEXTS),
    st.integers(0, 10**6),
    st.integers(0, 400),
    st.lists(st.sampled_from(NASTY) | st.text(max_size=40), min_size=1, max_size=6),
)
def fuzz_entry_text(text: str, at: int, cut: int, insert: list[str]) -> None:
    at %= len(text) + 1
    run_check(text[:at] + "".join(insert) + text[at + cut :])


@given(st.sampled_from(ENTRY_TEXTS), st.binary(min_size=1, max_size=64), st.integers(0, 10**6))
def fuzz_entry_bytes(text: str, junk: bytes, at: int) -> None:
    data = text.encode()
    at %= len(data) + 1
    run_check(data[:at] + junk + data[at:])


@given(
    st.lists(st.sampled_from(LOGS), min_size=1, max_size=3),
    st.integers(0, 10**6),
    st.lists(
        st.sampled_from(NASTY)
        | st.text(max_size=80)
        | st.binary(max_size=80).map(lambda b: b.decode("latin-1")),
        max_size=8,
    ),
    st.integers(0, 200),
)
def fuzz_log(logs: list[bytes], at: int, insert: list[str], width: int) -> None:
    data = b"".join(logs)
    at %= len(data) + 1
    data = data[:at] + "".join(insert).encode("utf-8", "surrogateescape") + data[at:]
    if width >= 40:  # a terminal's hard wrap
        data = b"\n".join(
            line[i : i + width]
            for line in data.split(b"\n")
            for i in range(0, max(len(line), 1), width)
        )
    start = time.monotonic()
    scanned = scan.scan(io.BytesIO(data), "fuzzed.log", MATCHER)
    result = rank.diagnose([scanned])
    contract.as_json(result, None)
    assert time.monotonic() - start < SLOW_S, f"scan took {time.monotonic() - start:.1f} s"
    tried["logs"] += 1


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--minutes", type=float, default=20.0, help="total time (default 20)")
    opts = args.parse_args()
    end = time.monotonic() + opts.minutes * 60
    options = settings(
        max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    tests = [options(t) for t in (fuzz_entry_text, fuzz_entry_bytes, fuzz_log)]
    rounds = 0
    while time.monotonic() < end:
        for test in tests:
            test()  # raises, with the falsifying example, on a finding
        rounds += 1
    print(
        f"{rounds} rounds in {opts.minutes:g} min: {tried['entries']} entries checked, "
        f"{tried['logs']} logs diagnosed, no finding"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
