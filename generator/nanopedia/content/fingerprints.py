"""Fingerprint patterns compiled and timed: the checks `check` runs beyond the portable subset.

`nanopedia/content/portable.py` says whether a pattern's text is inside the subset both engines
read alike; here a fingerprint becomes the one program both compile (`ignore_case` folded into
it), RE2 must accept it, and it is timed on text built to make it slow: an adversarial log for
RE2 as diagnosis scans it, a smaller sample for the browser's backtracking engine.
"""

from __future__ import annotations

import random
import time
import zlib
from typing import TYPE_CHECKING

import re2

from nanopedia.content.portable import (
    CONTROL_ESCAPES,
    class_end,
    fold_ascii,
    is_count,
    portable_error,
    re2_hex,
)

if TYPE_CHECKING:  # diagnosis compiles its programs without the model (pydantic)
    from nanopedia.model import Fingerprint


def program(fp: Fingerprint) -> str:
    """The pattern both engines compile: with `ignore_case`, every ASCII letter as a class of its
    two cases (`fold_ascii`), and no engine flag.

    RE2's case folding and JavaScript's `i` flag disagree beyond ASCII: RE2 folds `k` with the
    Kelvin sign U+212A and `s` with the long s U+017F, JavaScript (without `u`) does not. Folding
    ASCII letters in the pattern itself gives both the same, documented meaning: `ignore_case`
    folds A-Z only. `contract.export_data` hands this text to the browser.
    """
    return fold_ascii(fp.pattern) if fp.ignore_case else fp.pattern


def compile_pattern(fp: Fingerprint) -> re2._Regexp:
    """The RE2 program for one fingerprint, with the same options diagnosis uses."""
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    return re2.compile(program(fp), options)


def pattern_error(fp: Fingerprint) -> str | None:
    """Why the pattern cannot be used (outside the subset, or RE2 refuses it), or None."""
    reason = portable_error(fp.pattern)
    if reason:
        return reason
    try:
        compile_pattern(fp)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return f"RE2 cannot compile it: {detail}"
    return None


#: Size of the generated adversarial log each pattern is timed on at `check` time.
ADVERSARIAL_BYTES = 256 * 1024
#: Slowest scan rate a pattern may have on that log (bytes/s). Specific patterns run at 400+ MB/s
#: here; one at 100 MB/s alone would halve the rate of the whole diagnosis set (target 200 MB/s).
MIN_RATE = 100e6
CHECK_BUDGET_S = ADVERSARIAL_BYTES / MIN_RATE


#: Width of the adversarial lines a pattern is timed on in the browser's engine, and the most
#: bytes of them: a backtracking blow-up shows within a few dozen characters of the right line, and
#: every pattern of a `check` run is timed, so the sample stays small.
BROWSER_LINE = 1024
BROWSER_BYTES = 32 * 1024
#: Slowest rate (sample bytes per CPU second) a pattern may have in the browser's engine. Measured
#: under Node 20 (V8 11.3): the encyclopedia's 282 patterns run at 7.5 to 11 MB/s (the slowest,
#: a long literal with many near misses) up to 170 MB/s; the slow patterns of issue 18 at 0.04 MB/s
#: (`(?:a|b)*a(?:a|b){25}c`, quadratic on a line of a and b; `{5}` instead: 0.14 MB/s) or never
#: finish (`(?:a|a)*b`, `(?:a|ab|b)*yend`, `(?:.*,){12}X`: exponential). 1 MB/s leaves a factor of
#: 7 on either side, and CPU time (not the clock) keeps a busy machine from eating into it.
MIN_BROWSER_RATE = 1e6
#: Wall-clock seconds after which a pattern still running is stopped and called too slow: 30 times
#: the CPU budget of the largest sample, so only a pattern that never returns reaches it.
BROWSER_TIMEOUT_S = 1.0


def browser_sample(fp: Fingerprint) -> str:
    """The text a pattern is timed on in the browser's engine: its `adversarial_lines`."""
    return "\n".join(adversarial_lines(fp, BROWSER_LINE))[:BROWSER_BYTES]


def line_program(fp: Fingerprint) -> str:
    """The pattern as diagnosis compiles it: multi-line anchors, ASCII case folded (`program`).

    Diagnosis matches whole buffers of lines at once, so `^`/`$` must mean line boundaries and
    `never_nl` (in `scan_options`) keeps every match inside one line.
    """
    return "(?m)" + program(fp)


def scan_options() -> re2.Options:
    """RE2 options for buffer-at-a-time scanning: no match crosses a newline, room for the DFA."""
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    options.max_mem = 256 << 20
    return options


#: Printable ASCII and a tab: the characters a class is sampled from.
_POOL = "\t" + "".join(chr(c) for c in range(0x20, 0x7F))
_POOL_TEXT = _POOL.encode()
#: Characters standing for `.` and for the class escapes outside a class.
_ESCAPE_SAMPLES = {"d": "07", "D": "x-", "w": "a_Z9", "W": " -", "s": " \t", "S": "x."}
#: Distinct characters and fixed-text runs of one pattern that adversarial lines are made of; more
#: adds bytes to every pattern's sample without finding more slow patterns.
MAX_CHARS = 24
MAX_FRAGMENTS = 16


def class_samples(pattern: str, i: int, end: int) -> str:
    """The pool characters the class `pattern[i:end]` matches, at most four spread over it."""
    members = re2.compile(pattern[i:end]).findall(_POOL_TEXT)
    picked = members[:: max(1, len(members) // 3)][:3] + members[-1:]
    return "".join(dict.fromkeys(m.decode() for m in picked))


def pattern_pieces(pattern: str) -> tuple[list[str], str]:
    """The fixed-text runs of a (portable) pattern and the characters it matches, in order.

    `(?:a|ab|b)*yend` gives the runs `a`, `ab`, `b`, `yend` and the characters `abyend`; a class
    adds a few of its members, a class escape its sample characters. What text makes a pattern
    slow is made of these: a repeated group over them, a counted run of them.
    """
    runs: list[str] = []
    chars: list[str] = []
    run = ""
    i, n = 0, len(pattern)

    def close() -> None:
        nonlocal run
        if run:
            runs.append(run)
        run = ""

    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "x" and re2_hex(pattern[i + 2 : i + 4]):
                run += chr(int(pattern[i + 2 : i + 4], 16))
                chars.append(run[-1])
                i += 4
                continue
            if nxt in _ESCAPE_SAMPLES:
                close()
                chars.extend(_ESCAPE_SAMPLES[nxt])
            elif nxt in CONTROL_ESCAPES:
                run += chr(CONTROL_ESCAPES[nxt])
                chars.append(run[-1])
            elif nxt not in "bB":
                run += nxt
                chars.append(nxt)
            else:
                close()
            i += 2
            continue
        if ch == "[":
            end = class_end(pattern, i)
            close()
            try:
                chars.extend(class_samples(pattern, i, end))
            except re2.error:
                pass
            i = end
            continue
        if ch == "{" and is_count(pattern, i):
            close()
            i = pattern.index("}", i) + 1
            continue
        if ch in "()|*+?.^$":
            close()
            i += 2 if pattern.startswith("(?:", i) else 0
        else:
            run += ch
            chars.append(ch)
        i += 1
    close()
    return list(dict.fromkeys(runs)), "".join(dict.fromkeys(chars))


def unfinished(runs: list[str], chars: str) -> str:
    """The pattern's characters without the last one of its fixed text: random text over them
    keeps a pattern that ends in fixed text (`...{25}c`) working and never matching."""
    return chars.replace(runs[-1][-1], "") if runs else chars


def adversarial_lines(fp: Fingerprint, width: int) -> list[str]:
    """Lines of at most `width` characters built to make one pattern work hard, in both engines.

    Backtracking explodes where a repeated group can split the same text many ways, and RE2's
    automaton where a repetition over a few characters must remember many positions; either is
    set off by long runs of the pattern's own pieces that never complete a match. So: each
    character of the pattern repeated, each fixed-text run and each pair of neighbouring runs
    repeated, random lines over the pattern's characters (and without its last one, so a match
    cannot end), near misses of the examples (every prefix with its next character changed) and
    the examples repeated. The seed is the pattern itself: the same verdict on every run.
    """
    rnd = random.Random(zlib.crc32(fp.pattern.encode()))
    runs, chars = pattern_pieces(fp.pattern)
    runs = runs[:MAX_FRAGMENTS]

    def fill(piece: str) -> str:
        return (piece * (width // len(piece) + 1))[:width]

    lines = [fill(c) for c in chars[:MAX_CHARS]]
    lines += [fill(a + b) for a, b in zip(runs, runs[1:], strict=False)]
    lines += [fill(r) for r in runs if len(r) > 1]
    for letters in dict.fromkeys(a for a in (chars, unfinished(runs, chars)) if a.isascii() and a):
        lines.append(random_text(rnd, letters, width).decode())
    alphabet = sorted(set("".join(fp.must_match)) | set(chars) | set("abcdefghijklmnopqrstuvwxyz"))
    for example in fp.must_match:
        for cut in range(1, len(example), max(1, len(example) // 64)):
            lines.append(example[:cut] + rnd.choice(alphabet) + example[cut + 1 :])
        lines.append(" ".join([example] * max(1, width // (len(example) + 1))))
    return [line[:width] for line in lines]


def adversarial_log(fp: Fingerprint, size: int = ADVERSARIAL_BYTES) -> bytes:
    """A deterministic log of `size` bytes built to make one pattern work hard in RE2.

    Linear-time engines are still slow when a pattern's automaton explodes (counted repetitions,
    wide classes in sequence): the DFA cache thrashes and RE2 falls back to its NFA. The log
    starts with `adversarial_lines` and goes on with 4 KiB lines of random text over the
    examples' characters, so that a pattern's cost is measured over the buffer sizes diagnosis
    reads, not over one line.
    """
    rnd = random.Random(zlib.crc32(fp.pattern.encode()))
    common = set("abcdefghijklmnopqrstuvwxyz0123456789 ._:-")
    alphabet = sorted(c for c in set("".join(fp.must_match)) | common if c.isascii() and c >= " ")
    runs, chars = pattern_pieces(fp.pattern)
    own = "".join(c for c in unfinished(runs, chars) or chars if c.isascii()) or "".join(alphabet)
    head = "\n".join(adversarial_lines(fp, 4096)).encode()[:size]
    # 4 KiB lines of random text: half the body over the examples' characters, half over the
    # pattern's own (without its last, so no match ends).
    half = max(0, size - len(head)) // 2
    body = b""
    for letters in ("".join(alphabet), own):
        noise = random_text(rnd, letters, half + 4096)
        body += b"\n" + b"\n".join(noise[i : i + 4096] for i in range(0, len(noise), 4096))
    return (head + body)[:size]


def random_text(rnd: random.Random, letters: str, size: int) -> bytes:
    """`size` random bytes over the ASCII `letters` (random bytes mapped by a table: fast)."""
    table = (letters * (256 // len(letters) + 1))[:256].encode("ascii")  # byte i: letters[i % n]
    return rnd.randbytes(size).translate(table)


def scan_seconds(fp: Fingerprint, log: bytes, tries: int = 3) -> float:
    """Best-of-`tries` CPU time to scan `log` with the pattern the way diagnosis does (an RE2 set).

    CPU time of this thread, not wall time: a busy machine (parallel tests, CI neighbours) delays
    the scan but does not make it cost more, so the verdict does not depend on the load. A fast
    first run returns at once; only a run over budget is repeated, each with a freshly compiled
    program: RE2 keeps the DFA states a scan built, so a second scan of the same 256 KiB is fast
    even for a pattern whose automaton explodes on every new log (google-re2 1.1.20251105: 200 ms
    cold, 2 ms warm for `[a-z][^X]{25}Q`). A run ten times over budget is not noise: it is not
    repeated.
    """
    best = float("inf")
    for _ in range(tries):
        program = re2.Set.SearchSet(scan_options())
        program.Add(line_program(fp))
        program.Compile()
        start = time.thread_time()
        program.Match(log)
        best = min(best, time.thread_time() - start)
        if best <= CHECK_BUDGET_S or best > 10 * CHECK_BUDGET_S:
            break
    return best


def slowness_error(fp: Fingerprint) -> str | None:
    """Why the pattern is too slow for diagnosis (over budget on its adversarial log), or None."""
    seconds = scan_seconds(fp, adversarial_log(fp))
    if seconds <= CHECK_BUDGET_S:
        return None
    rate = ADVERSARIAL_BYTES / seconds / 1e6
    return (
        f"pattern is too slow: {seconds * 1000:.1f} ms on a {ADVERSARIAL_BYTES // 1024} KiB "
        f"adversarial log ({rate:.0f} MB/s, at least {MIN_RATE / 1e6:.0f} MB/s needed)"
    )
