"""When no entry matches: the error line `diagnose` finds (tests/cases/unmatched.json), the
inputs that are no logs, and the next steps."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from nanopedia.diagnosis import unmatched
from nanopedia.site.wrapping import cut, fill

ROOT = Path(__file__).resolve().parents[2]
CASES = json.loads((ROOT / "tests" / "cases" / "unmatched.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    found = unmatched.find(case["log"], "job.log")
    got = (
        None
        if found is None
        else {
            "text": found.text,
            "line": found.line,
            "kind": found.kind,
            "raised_in": found.raised_in,
        }
    )
    assert got == case["found"]


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"", "empty"),
        (b"ELF\0\1\2", "binary"),
        (b"RuntimeError: no newline", "single-line"),
        (b"x" * 100, "single-line"),
        (b"step 1\n", None),
        (b"50%\r60%\r", None),  # a progress bar's carriage returns break lines too
    ],
)
def test_inputs_that_are_no_logs_are_named_as_triage_names_them(
    head: bytes, reason: str | None
) -> None:
    from nanopedia.diagnosis.jobs import SKIP_REASONS

    assert unmatched.input_problem(head) == reason
    if reason and reason != "empty":
        assert reason in SKIP_REASONS


def test_next_steps_link_the_search_under_the_base_url_and_name_nanopedia_new() -> None:
    found = unmatched.Found("RuntimeError: x & y", "a.log", 3, "RuntimeError", "user code (a.py)")
    steps = unmatched.next_steps(found, "https://wiki.example/np/")
    assert steps[0] == "search: https://wiki.example/np/search.html?q=RuntimeError%3A%20x%20%26%20y"
    assert "nanopedia new" in steps[-1]
    assert unmatched.next_steps(None, None) == steps[-1:]


FOUND = unmatched.Found(
    "RuntimeError: shard 3 of `data` | missing @team " + "word " * 60,
    "logs/a|b.log",
    12,
    "RuntimeError",
    "user code (train.py)",
)
INPUTS = (("empty.log", "empty"), ("blob.bin", "binary"))


def test_the_terminal_answer_names_inputs_error_line_class_and_where_to_search() -> None:
    """The error line is cut after four lines with `…`; the search link is whole on its line,
    its query cut at a word to fit."""
    assert unmatched.as_text(unmatched.Missed(FOUND, INPUTS), None).splitlines() == [
        "no known failure matched",
        "  input: empty.log: empty (no bytes at all: nothing to diagnose)",
        "  input: blob.bin: binary (NUL bytes in its first 256 KiB: not a text log)",
        "  error line at logs/a|b.log:12:",
        "    RuntimeError: shard 3 of `data` | missing @team word word word word word",
        "    word word word word word word word word word word word word word word word",
        "    word word word word word word word word word word word word word word word",
        "    word word word word word word word word word word word word word word word …",
        "  class: RuntimeError",
        "  raised in: user code (train.py)",
        "  next: search a Nanopedia site for the error line (set base_url in",
        "    nanopedia.toml for a full link):",
        "    search.html?q=RuntimeError%3A+shard+3+of+%60data%60+%7C+missing+%40team+word",
        "  next: contribute: nanopedia new ENTRY-ID (entries/README.md says what an entry",
        "    holds)",
    ]
    narrow = unmatched.as_text(unmatched.Missed(FOUND), "https://np.example/", 30)
    assert narrow.splitlines()[-5:] == [
        "  raised in: user code (train.py)",
        "  next: search the site for the error line:",
        "    https://np.example/search.html?q=RuntimeError%3A+shard+3",
        "  next: contribute: nanopedia new ENTRY-ID",
        "    (entries/README.md says what an entry holds)",
    ]
    assert max(len(ln) for ln in narrow.splitlines()) <= unmatched.MIN_WIDTH


def test_a_short_error_line_is_shown_whole_and_hostile_bytes_escaped() -> None:
    found = unmatched.Found("Killed\x1b]0;x\x07", "job.log", 3, "signal 9 (SIGKILL)", "native code")
    lines = unmatched.as_text(unmatched.Missed(found), None).splitlines()
    assert lines[1:5] == [
        "  error line at job.log:3:",
        "    Killed\\x1b]0;x\\x07",
        "  class: signal 9 (SIGKILL)",
        "  raised in: native code",
    ]
    assert unmatched.as_text(unmatched.Missed(found), None) == unmatched.as_text(
        unmatched.Missed(found), None, unmatched.WIDTH
    )


def test_with_no_error_line_the_answer_says_none_was_found_unless_inputs_explain_it() -> None:
    assert unmatched.as_text(unmatched.Missed(None), None).splitlines()[:2] == [
        "no known failure matched",
        "  error line: none found (no traceback, no fatal native line)",
    ]
    text = unmatched.as_text(unmatched.Missed(None, INPUTS[:1]), None)
    assert "none found" not in text and "  input: empty.log: empty" in text


@pytest.mark.parametrize(
    ("text", "room", "link"),
    [
        ("a b c", 30, "search.html?q=a+b+c"),
        ("a b c", 18, "search.html?q=a+b"),
        ("a b c", 17, "search.html?q=a+b"),
        ("a b c", 16, "search.html?q=a"),
        ("longword b", 5, "search.html?q=longword"),  # the first word at least
        ("x&y z", 30, "search.html?q=x%26y+z"),
    ],
)
def test_the_search_link_is_cut_at_a_word_to_fit_its_line(text: str, room: int, link: str) -> None:
    found = unmatched.Found(text, "a.log", 1, "unknown", "native code")
    assert unmatched.search_link(found, None, room) == link
    assert unmatched.search_link(found, "https://s.example/", room + 18) == (
        "https://s.example/" + link
    )


def test_the_search_query_is_the_first_120_characters_of_the_error_line() -> None:
    found = unmatched.Found("e" * 130, "a.log", 1, "unknown", "native code")
    assert unmatched.next_steps(found, "https://s.example")[0] == (
        f"search: https://s.example/search.html?q={'e' * 120}"
    )
    assert unmatched.next_steps(found, None)[0] == (
        f"search: search.html?q={'e' * 120} on a Nanopedia site (set base_url in "
        "nanopedia.toml for a full link)"
    )


def test_the_markdown_answer_is_inert_but_its_search_link_stays_live() -> None:
    """Log text cannot format the paste or ping anyone; the site's own search link, whose query
    is percent-encoded, is an autolink a reader can open (#39: it was broken by the word
    joiner that makes log text inert)."""
    md = unmatched.as_markdown(unmatched.Missed(FOUND, INPUTS), "https://np.example/")
    query = "RuntimeError%3A%20shard%203%20of%20%60data%60%20%7C%20missing%20%40team%20"
    assert md.splitlines() == [
        "**nanopedia:** no known failure matched",
        "",
        "- **Input:** empty.log: `empty` (no bytes at all: nothing to diagnose)",
        "- **Input:** blob.bin: `binary` (NUL bytes in its first 256 KiB: not a text log)",
        f"- **Error line:** `RuntimeError: shard 3 of 'data' ¦ missing @team {'word ' * 60}` "
        "(logs/a\\|b.log:12)",
        "- **Class:** `RuntimeError`",
        "- **Raised in:** user code (train.py)",
        f"- **Next:** search: <https://np.example/search.html?q={query}" + "word%20" * 14 + "wo>",
        "- **Next:** contribute: nanopedia new ENTRY-ID (entries/README.md says what an entry "
        "holds)",
    ]
    bare = unmatched.as_markdown(unmatched.Missed(FOUND), None).splitlines()
    assert bare[-2].startswith(f"- **Next:** search: search.html?q={query}")
    assert bare[-2].endswith(
        " on a Nanopedia site (set base\\_url in nanopedia.toml for a full link)"
    )
    assert unmatched.as_markdown(unmatched.Missed(None), "https://np.example/").splitlines() == [
        "**nanopedia:** no known failure matched",
        "",
        "- **Next:** contribute: nanopedia new ENTRY-ID (entries/README.md says what an entry "
        "holds)",
    ]


def test_the_json_answer_carries_the_error_line_its_class_and_the_inputs() -> None:
    assert unmatched.as_json(unmatched.Missed(FOUND, INPUTS[1:]), None) == {
        "error": FOUND.text,
        "file": "logs/a|b.log",
        "line": 12,
        "class": "RuntimeError",
        "raised_in": "user code (train.py)",
        "inputs": [
            {"file": "blob.bin", "reason": "binary", "detail": unmatched.INPUT_REASONS["binary"]}
        ],
        "next": unmatched.next_steps(FOUND, None),
    }
    assert unmatched.as_json(unmatched.Missed(None), "https://s.example") == {
        "error": None,
        "file": None,
        "line": None,
        "class": None,
        "raised_in": None,
        "inputs": [],
        "next": [unmatched.CONTRIBUTE],
    }


MIB = 1 << 20


@pytest.mark.parametrize(
    ("data", "problem", "found"),
    [
        (b"", "empty", None),
        (b"ok\n\0binary\nTraceback (most recent call last):\nValueError: x\n", "binary", None),
        (b"Segmentation fault " + b"x" * MIB, "single-line", None),  # a head with no break
        (b"x" * (MIB + 10) + b"\nSegmentation fault\n", "single-line", None),
        (b"\xff\xfe\nKilled\n", None, ("Killed", 2, "signal 9 (SIGKILL)")),
        (b"Segmentation fault", "single-line", ("Segmentation fault", 1, "signal 11 (SIGSEGV)")),
        (b"x" * (MIB + 10), "single-line", None),  # a head of 1 MiB with no line break
        (
            b"\x1b[31mTraceback (most recent call last):\x1b[0m\nValueError: \x1b[1mbad\x1b[0m\n",
            None,
            ("ValueError: bad", 2, "ValueError"),
        ),
        (
            (b"x" * 999 + b"\n") * 1100 + b"step\nKilled\n",
            None,
            ("Killed", 1102, "signal 9 (SIGKILL)"),
        ),
        (b"a\n" + b"x" * MIB + b"\nKilled\n", None, ("Killed", 3, "signal 9 (SIGKILL)")),
        (b"fine\r\nCUDA error: bad\r\n", None, ("CUDA error: bad", 2, "unknown")),
    ],
)
def test_a_log_is_read_for_its_input_problem_and_first_error_past_its_first_mib(
    data: bytes, problem: str | None, found: tuple[str, int, str] | None
) -> None:
    got_problem, got = unmatched.read_stream(io.BytesIO(data), "job.log")
    assert got_problem == problem
    assert (got and (got.text, got.line, got.kind)) == found
    assert got is None or got.file == "job.log"


def test_a_line_cut_by_the_search_limit_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Killed` is a signal only as a whole word: `Killedx` cut after `Killed` by the limit
    must not read as one."""
    lines = (b"x" * 999 + b"\n") * 1100  # past the first MiB
    monkeypatch.setattr(unmatched, "SEARCH_BYTES", len(lines) + len(b"Killed"))
    assert unmatched.read_stream(io.BytesIO(lines + b"Killedx\nfine\n"), "job.log") == (None, None)
    monkeypatch.setattr(unmatched, "SEARCH_BYTES", len(lines) + len(b"Killed\nmo"))
    found = unmatched.read_stream(io.BytesIO(lines + b"Killed\nmore\n"), "job.log")[1]
    assert found and (found.text, found.line) == ("Killed", 1101)
    monkeypatch.setattr(unmatched, "SEARCH_BYTES", len(lines) + 2)
    past = io.BytesIO(lines + b"fine\nKilled\nmore\n")
    assert unmatched.read_stream(past, "job.log") == (None, None)  # read no further


def test_a_file_is_read_plain_or_gzip_and_standard_input_not_again(tmp_path: Path) -> None:
    plain = tmp_path / "a.log"
    plain.write_bytes(b"step\nSegmentation fault (core dumped)\n")
    packed = tmp_path / "b.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        problem, found = unmatched.read(str(path), "named.log")
        assert problem is None and found and (found.file, found.line) == ("named.log", 2)
    assert unmatched.read("-", "<stdin>") == (None, None)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("process exited with exit code 1 (Signal 9 (SIGKILL) received)", "signal 9 (SIGKILL)"),
        ("exitcode: 1 after signal 15", "signal 15 (SIGTERM)"),
        ("exit code 2: got SIGTERM", "signal 15 (SIGTERM)"),
        ("exit code 2: got SIGFOOD", "SIGFOOD"),
        ("exit code 128 SIGTERM", "signal 15 (SIGTERM)"),
        ("exit status 3", "exit code 3"),
        ("exitcode: -9", "signal 9 (SIGKILL)"),
        ("exited with code 137", "signal 9 (SIGKILL)"),
        ("exit code 0 SIGTERM", None),
    ],
)
def test_an_exit_code_names_the_signal_the_line_gives_for_it(line: str, kind: str | None) -> None:
    found = unmatched.find([line], "a.log")
    assert (found and found.kind) == kind


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("/usr/lib/python3.11/site-packages/torch/nn/modules.py", "library torch"),
        ("/venv/lib/python3.11/site-packages/six.py", "library six"),
        ("/usr/lib/python3/dist-packages/foo_bar-1.0/x.py", "library foo_bar"),
        ("/x/site-packages/my lib/x.py", "library my lib"),
        ("C:\\Py\\Lib\\site-packages\\torch\\x.py", "library torch"),
        ("<frozen importlib._bootstrap>", "the Python standard library"),
        ("/usr/lib/python3.11/json/decoder.py", "the Python standard library"),
        ("/usr/lib/python3/json.py", "user code (json.py)"),
        ("C:\\work\\proj\\train.py", "user code (train.py)"),
        ("/home/me/proj/train.py", "user code (train.py)"),
        ("train.py", "user code (train.py)"),
    ],
)
def test_where_an_error_was_raised_is_read_from_its_frames_path(path: str, where: str) -> None:
    assert unmatched.raised_in(path) == where


def test_an_error_line_of_exactly_four_lines_is_shown_whole_and_a_longer_one_cut() -> None:
    words = " ".join(f"w{i:02}" for i in range(90))
    lines = fill(words, 80, "    ", "    ")
    four = unmatched.Found(" ".join(" ".join(lines[:4]).split()), "a.log", 1, "unknown", "x")
    shown = unmatched.as_text(unmatched.Missed(four), None).splitlines()
    assert shown[2:6] == lines[:4]
    assert len(lines) == 5
    longer = unmatched.Found(words, "a.log", 1, "unknown", "x")
    shown = unmatched.as_text(unmatched.Missed(longer), None).splitlines()
    assert shown[2:6] == [*lines[:3], cut(lines[3] + " …", 80)]


def test_the_search_link_keeps_a_runs_spaces_and_the_base_urls_own_path() -> None:
    found = unmatched.Found("a  b", "a.log", 1, "unknown", "x")
    assert unmatched.search_link(found, None, 40) == "search.html?q=a++b"
    base = "https://np.example/DOCX/"
    assert unmatched.search_link(found, base, 80) == "https://np.example/DOCX/search.html?q=a++b"
    assert unmatched.search_url(found, base) == "https://np.example/DOCX/search.html?q=a%20%20b"
    missed = unmatched.Missed(found)
    assert unmatched.as_json(missed, base)["next"][0] == f"search: {base}search.html?q=a%20%20b"


@pytest.mark.parametrize(
    ("lines", "found"),
    [
        (  # an exit code that stands for no signal
            ["step", "worker exited with exit code 3"],
            ("worker exited with exit code 3", 2, "exit code 3", "native code"),
        ),
        (["step", "exit code 129"], ("exit code 129", 2, "signal 1 (SIGHUP)", "native code")),
        (
            ["x", "exit code 2 after SIGTERM"],
            ("exit code 2 after SIGTERM", 2, "signal 15 (SIGTERM)", "native code"),
        ),
        (["a", "CUDA error: device-side assert"], ("CUDA error: device-side assert", 2, "unknown",
                                                   "native code")),
        (  # a C++ exception with its what()
            ["terminate called after throwing an instance of 'c10::Error'", "  what():  bad"],
            ("bad", 1, "c10::Error", "native code"),
        ),
        (  # one without: the terminate line itself
            ["terminate called after throwing an instance of 'c10::Error'", "step"],
            ("terminate called after throwing an instance of 'c10::Error'", 1, "c10::Error",
             "native code"),
        ),
        (  # a fatal line after it is the first fatal line read
            ["terminate called after throwing an instance of 'std::bad_alloc'",
             "Segmentation fault"],
            ("Segmentation fault", 2, "signal 11 (SIGSEGV)", "native code"),
        ),
        (  # an indented traceback ends in an exception line that is not indented
            ["  Traceback (most recent call last):", '    File "/w/t.py", line 1, in f',
             "ValueError: bad"],
            ("ValueError: bad", 3, "ValueError", "user code (t.py)"),
        ),
        (  # a line of one leading space is source, not the exception
            ["Traceback (most recent call last):", ' File "/w/t.py", line 1', " oops",
             "KeyError: 'k'"],
            ("KeyError: 'k'", 4, "KeyError", "user code (t.py)"),
        ),
        (  # no frame: where it was raised is unknown
            ["Traceback (most recent call last):", "OSError: gone"],
            ("OSError: gone", 2, "OSError", "unknown"),
        ),
        (  # not a traceback after all: fatal lines after it are read again
            ["Traceback (most recent call last):", "hello world!", "Segmentation fault"],
            ("Segmentation fault", 3, "signal 11 (SIGSEGV)", "native code"),
        ),
        (
            ["Traceback (most recent call last):", "RuntimeError: shape of tensor X"],
            ("RuntimeError: shape of tensor X", 2, "RuntimeError", "unknown"),
        ),
    ],
)  # fmt: skip
def test_the_error_line_its_class_and_where_it_was_raised(
    lines: list[str], found: tuple[str, int, str, str]
) -> None:
    got = unmatched.find(lines, "job.log")
    assert got == unmatched.Found(found[0], "job.log", found[1], found[2], found[3])
