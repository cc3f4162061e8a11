"""Hostile entries (issue 18): each is refused with a located message, quickly, by every command
that reads entries, and none reaches a page.

Each block names the finding of issue 18 it covers. The entries are the fixture corpus with one
value changed, so every expected location is a line of `tests/fixtures/corpus`.
"""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.commands import serve
from nanopedia.content import apicheck
from nanopedia.content.corpus import gather
from nanopedia.content.links import LABEL_BUDGET, label_cost
from nanopedia.content.load import MAX_BYTES, parse, read, read_file
from nanopedia.content.validate import check_entry, check_tags
from nanopedia.diagnosis import scan
from nanopedia.errors import NanopediaError
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.model import Dates
from nanopedia.site.markdown import PageEnv, render

SITE_CONFIG = FIXTURES / "build-config" / "nanopedia.toml"
DATES = {
    "alpha-failure": Dates(datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)),
    "beta-failure": Dates(datetime(2024, 2, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC)),
}
ALPHA = (FIXTURES / "corpus" / "alpha-failure.yaml").read_text(encoding="utf-8")
TAGS = (FIXTURES / "corpus" / "tags.yaml").read_text(encoding="utf-8")


def replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the fixture that holds `needle`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def alpha_problems(text: str) -> tuple[bool, list[str]]:
    """Whether the changed alpha entry loads as a source, and its problems as printed."""
    try:
        src, found = check_entry(parse(text, "alpha-failure.yaml"), "alpha-failure")
    except NanopediaError as err:
        return False, [str(p) for p in err.problems]
    return src is not None, [str(p) for p in found]


# 1, 2. Entry files that are not regular files: refused before they are opened, in every command.


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    here = os.getcwd()
    os.chdir(path.parent)  # a socket path is at most 108 bytes: bind the short relative name
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path.name)
        sock.close()
    finally:
        os.chdir(here)


def _loop(path: Path) -> None:
    other = path.with_name(f"{path.stem}-back.yaml")
    path.symlink_to(other.name)
    other.symlink_to(path.name)


NON_REGULAR: dict[str, tuple[Callable[[Path], None], list[tuple[str, str]]]] = {
    # file name: (how to make it, the lines `check` prints for it)
    "zero.yaml": (lambda p: p.symlink_to("/dev/zero"), [("zero.yaml", "symlinks are not allowed")]),
    "fifo.yaml": (_fifo, [("fifo.yaml", "not a regular file: a FIFO (named pipe)")]),
    "sock.yaml": (_socket, [("sock.yaml", "not a regular file: a socket")]),
    "dir.yaml": (lambda p: p.mkdir(), [("dir.yaml", "not a regular file: a directory")]),
    "loop.yaml": (
        _loop,
        [("loop-back.yaml", "symlinks are not allowed"), ("loop.yaml", "symlinks are not allowed")],
    ),
    "dangling.yaml": (
        lambda p: p.symlink_to("nowhere.yaml"),
        [("dangling.yaml", "symlinks are not allowed")],
    ),
    "beta-link.yaml": (
        lambda p: p.symlink_to("beta-failure.yaml"),
        [("beta-link.yaml", "symlinks are not allowed")],
    ),
}


def expected_lines(names: list[str], prefix: str = "") -> list[str]:
    return sorted(
        f"{prefix}{shown}: error[E001]: {message}\n    hint: commit a regular file"
        for name in names
        for shown, message in NON_REGULAR[name][1]
    )


@pytest.fixture
def fifo_guard() -> Iterator[Callable[[Path], None]]:
    """Opens the write end of a FIFO for as long as the test runs, should anything have opened
    it to read: a regression then reads an empty file and fails instead of hanging forever."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def release(fifo: Path) -> None:
        while not stop.wait(0.05):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: nobody is reading, as it should be
                continue

    def guard(fifo: Path) -> None:
        thread = threading.Thread(target=release, args=(fifo,), daemon=True)
        thread.start()
        threads.append(thread)

    yield guard
    stop.set()
    for thread in threads:
        thread.join(timeout=5)


@pytest.fixture
def hostile_corpus(tmp_corpus: Path, fifo_guard: Callable[[Path], None]) -> Path:
    """The fixture corpus with one entry file of every non-regular kind but `/dev/zero`."""
    for name, (make, _) in NON_REGULAR.items():
        if name != "zero.yaml":
            make(tmp_corpus / name)
    fifo_guard(tmp_corpus / "fifo.yaml")
    return tmp_corpus


@pytest.mark.parametrize("name", sorted(NON_REGULAR))
def test_read_refuses_every_non_regular_file(
    name: str, tmp_path: Path, fifo_guard: Callable[[Path], None]
) -> None:
    make, lines = NON_REGULAR[name]
    path = tmp_path / name
    make(path)
    if name == "fifo.yaml":
        fifo_guard(path)
    start = time.monotonic()
    with pytest.raises(NanopediaError) as err:
        read(path, name)
    assert time.monotonic() - start < 1.0
    assert [str(p) for p in err.value.problems] == [
        f"{name}: error[E001]: {dict(lines)[name]}\n    hint: commit a regular file"
    ]


def test_check_reports_each_non_regular_file_at_its_name(
    hostile_corpus: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (hostile_corpus / "zero.yaml").symlink_to("/dev/zero")
    monkeypatch.chdir(hostile_corpus)
    result = cli("check", ".")
    assert result.code == 1
    names = sorted(NON_REGULAR)
    assert result.out.strip("\n") == "\n".join(expected_lines(names))
    explicit = cli("check", "fifo.yaml", "loop.yaml", "zero.yaml")  # named one by one, too
    assert explicit.code == 1
    assert explicit.out.strip("\n") == "\n".join(
        sorted(
            expected_lines(["fifo.yaml", "zero.yaml"])
            + ["loop.yaml: error[E001]: symlinks are not allowed\n    hint: commit a regular file"]
        )
    )


def test_build_serve_and_diagnose_refuse_them_too(hostile_corpus: Path, tmp_path: Path) -> None:
    names = sorted(n for n in NON_REGULAR if n != "zero.yaml")
    wanted = expected_lines(names, "entries/")
    os.chdir(tmp_path)
    try:
        with pytest.raises(NanopediaError) as err:
            build(
                Request(
                    hostile_corpus,
                    tmp_path / "site",
                    SITE_CONFIG,
                    use_cache=False,
                    jobs=1,
                    dates=DATES,
                )
            )
        assert sorted(str(p) for p in err.value.problems) == wanted
        assert not (tmp_path / "site").exists()
        logged: list[str] = []
        server = serve.Server(hostile_corpus, tmp_path / "served", SITE_CONFIG, 0, logged.append)
        try:
            server.rebuild("first build")
        finally:
            server.httpd.server_close()
        assert all(line in logged[0] for line in wanted)
        assert logged[0].endswith("problem(s); the last good site is served")
        _, skipped = scan.usable_entries(hostile_corpus)
        assert sorted(str(p) for p in skipped if p.code == "E001") == wanted
        catalog, problems = gather(hostile_corpus)  # what verify and the MkDocs plugin use
        assert sorted(str(p) for p in problems if p.code == "E001") == wanted
        assert sorted(s.entry.id for s in catalog.sources) == ["alpha-failure", "beta-failure"]
    finally:
        os.chdir(ROOT)


def _limit_memory() -> None:
    """At most 2 GiB of address space: a regression that reads /dev/zero stops, with
    MemoryError, long before it takes the machine down."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_build_refuses_a_symlink_to_dev_zero_without_reading_it(
    tmp_corpus: Path, tmp_path: Path
) -> None:
    (tmp_corpus / "zero.yaml").symlink_to("/dev/zero")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generator")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nanopedia",
            "build",
            "--entries",
            "entries",
            "--out",
            "site",
            "--no-cache",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_memory,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip("\n") == "\n".join(expected_lines(["zero.yaml"], "entries/"))
    assert not (tmp_path / "site").exists()


def test_a_file_swapped_after_the_lstat_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fifo_guard: Callable[[Path], None]
) -> None:
    """Between `lstat` and `open` the file may change: the open neither waits for a FIFO's
    writer nor follows a symlink, and `fstat` looks again."""
    regular = tmp_path / "regular.yaml"
    regular.write_text("id: a\n")
    swapped = os.lstat(regular)
    monkeypatch.setattr("nanopedia.content.load.os.lstat", lambda *args, **kwargs: swapped)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    fifo_guard(fifo)
    with pytest.raises(NanopediaError, match=r"not a regular file: a FIFO"):
        read_file(fifo, "fifo.yaml")
    link = tmp_path / "link.yaml"
    link.symlink_to(regular)
    with pytest.raises(NanopediaError, match="symlinks are not allowed"):
        read_file(link, "link.yaml")


def test_no_more_than_the_limit_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: '" + b"x" * (4 * MAX_BYTES) + b"'\n")
    assert len(read_file(big, "big.yaml")) == MAX_BYTES + 1
    with pytest.raises(NanopediaError, match=f"over the {MAX_BYTES} byte limit"):
        read(big, "big.yaml")


# 3. Python code that the parser gives up on: E017 with a hint, never a traceback.

DEEP_CODE = {
    "20,000 minus signs": "-" * 19_990 + "1",
    "4,000 not": "not " * 4_000 + "x",
    "20,000 tildes": "~" * 19_990 + "1",
    "a long sum": "1" + "+1" * 9_990,
    "a long power chain": "2" + "**2" * 6_600,
    "a long attribute chain": "a" + ".b" * 9_990,
    "a long call chain": "f" + "()" * 9_990,
    "a long subscript chain": "a" + "[0]" * 6_600,
}


@pytest.mark.parametrize("name", sorted(DEEP_CODE))
def test_code_too_deep_for_the_parser_is_a_located_e017(name: str) -> None:
    code = DEEP_CODE[name]
    text = replaced(ALPHA, "      mask = mask.to(hidden.dtype)\n", f"      {code}\n")
    start = time.monotonic()
    loaded, found = alpha_problems(text)
    assert time.monotonic() - start < 2.0
    assert loaded
    line = line_of(ALPHA, "mask = mask.to(hidden.dtype)")
    assert found == [
        f"alpha-failure.yaml:{line}:1: error[E017]: python example does not parse: it nests too "
        "deeply for Python's parser\n"
        "    hint: write the expression with fewer nested operators, calls or brackets"
    ]
    assert apicheck.check(code) == apicheck.Report((), ())  # verify: nothing to check, no crash
    assert apicheck.imported_packages(code) == set()


def test_a_repro_script_too_deep_is_refused_the_same_way() -> None:
    text = replaced(ALPHA, '      print("ok")\n', "      " + "-" * 7_990 + "1\n")
    loaded, found = alpha_problems(text)
    assert loaded
    assert len(found) == 1
    assert (
        "error[E017]: repro 'float-input' fixed script does not parse: it nests too "
        "deeply" in found[0]
    )


# 4. Markdown whose `[` brackets would cost seconds to parse.

COSTLY_MARKDOWN = {
    "![ 9,990 times": "![" * 9_990,
    "[ 19,990 times": "[" * 19_990,
    "[![ 6,600 times": "[![" * 6_600,
    "9,990 nested brackets": "[" * 9_990 + "]" * 9_990,
}


@pytest.mark.parametrize("name", sorted(COSTLY_MARKDOWN))
def test_markdown_that_would_take_seconds_is_refused_fast(name: str) -> None:
    text = replaced(
        ALPHA, "  FSDP casts parameters at module boundaries.\n", f"  {COSTLY_MARKDOWN[name]}\n"
    )
    start = time.monotonic()
    loaded, found = alpha_problems(text)
    assert time.monotonic() - start < 0.5  # parsing it took 1 to 4 s
    assert not loaded  # no later stage (links, pages, search) parses it again
    line = line_of(ALPHA, "FSDP casts parameters")
    assert len(found) == 1
    assert found[0].startswith(
        f"alpha-failure.yaml:{line}:1: error[E013]: 'mechanism' leaves too many '[' open"
    )
    assert found[0].endswith(
        "hint: close each '[' with ']', or write '\\[' for a bracket that is text"
    )


def test_a_field_of_many_ordinary_links_costs_little() -> None:
    text = " ".join(f"[step {i}](https://example.org/{i}) and `x[{i}]`" for i in range(400))
    assert label_cost(text)[0] < LABEL_BUDGET // 10
    assert label_cost("\\[" * 9_000)[0] == 0  # escaped brackets are text
    # each open bracket is scanned for to the end of its paragraph, not of the field
    assert label_cost("[" * 200 + "\n\n" + "a" * 19_000) == (200 * 201 // 2, -1)


def test_every_real_entry_is_far_below_the_budget() -> None:
    """The budget refuses only hostile text: every string of the real entries costs a twentieth
    of it at most."""

    def strings(value: object) -> Iterator[str]:
        if isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
        elif isinstance(value, str):
            yield value

    files = sorted((ROOT / "entries").glob("*.yaml"))
    assert len(files) > 10
    worst = max(label_cost(text)[0] for path in files for text in strings(read(path).data))
    assert worst < LABEL_BUDGET // 20


def test_a_costly_tag_description_leaves_the_tag_out() -> None:
    text = replaced(TAGS, "  description: Collectives.\n", f'  description: "{"![" * 5_000}"\n')
    tags, found = check_tags(parse(text, "tags.yaml"))
    assert sorted(tags) == ["bf16", "fsdp"]
    assert [p.code for p in found] == ["E013"]
    assert str(found[0]).startswith("tags.yaml:9:17: error[E013]: 'nccl.description' leaves")


# 5. Links to another host without a scheme.

OTHER_HOST = {
    # markdown link target as typed: the href `check` names
    "//evil.example/p": "//evil.example/p",
    "\\\\\\\\evil.example/p": "\\\\evil.example/p",
    "/\\\\evil.example/p": "/\\evil.example/p",
    "\\\\/evil.example/p": "\\/evil.example/p",
    "&#47;&#47;evil.example/p": "//evil.example/p",
    "<//evil.example/p>": "//evil.example/p",
}
SAME_HOST = [
    "/ok/path",
    "ok//path",
    "../entries/x.html",
    "#frag",
    "https://ok.example//x",
    "\\/ok",
    "entry:beta-failure",
]


@pytest.mark.parametrize("typed", sorted(OTHER_HOST))
def test_protocol_relative_links_are_refused(typed: str) -> None:
    for link in (f"[x]({typed})", f"![x]({typed})"):
        text = replaced(ALPHA, "See [beta](entry:beta-failure).", f"See {link}.")
        loaded, found = alpha_problems(text)
        assert loaded
        line = line_of(ALPHA, "See [beta]")
        assert found == [
            f"alpha-failure.yaml:{line}:1: error[E016]: protocol-relative link "
            f"'{OTHER_HOST[typed]}' is not allowed in 'summary': it points at another host "
            "(a file:// one from a bundle)\n"
            "    hint: write the https:// address in full, or a path without a leading '//'"
        ]
        # the renderer drops it as well, or percent-encodes the backslashes (a relative path)
        assert re.search(r'href="[/\\\\]{2}', render(link, PageEnv())) is None


@pytest.mark.parametrize("typed", SAME_HOST)
def test_links_on_the_same_host_stay_allowed(typed: str) -> None:
    text = replaced(ALPHA, "See [beta](entry:beta-failure).", f"See [x]({typed}).")
    loaded, found = alpha_problems(text)
    assert loaded and found == []
    assert "href" in render(f"[x]({typed})", PageEnv())


# 6, 7. Control characters and bidirectional overrides in any text, escaped or typed.

HIDDEN_TEXT = {
    # name: (old line, new line, the problem printed)
    "override escaped in the title": (
        "title: Alpha failure under FSDP",
        'title: "Alpha \\u202e failure under FSDP"',
        "3:8: error[E018]: 'title' holds U+202E RIGHT-TO-LEFT OVERRIDE, a bidirectional control "
        "that reorders the text shown\n    hint: delete it: it is invisible and makes the text "
        "read differently than it is",
    ),
    "override typed in a block": (
        "  FSDP casts parameters at module boundaries.",
        "  FSDP casts parameters\n  at module \u2067boundaries.",
        "21:13: error[E018]: 'mechanism' holds U+2067 RIGHT-TO-LEFT ISOLATE, a bidirectional "
        "control that reorders the text shown\n    hint: delete it: it is invisible and makes "
        "the text read differently than it is",
    ),
    "NUL escaped in the title": (
        "title: Alpha failure under FSDP",
        'title: "Alpha\\0 failure under FSDP"',
        "3:8: error[E018]: 'title' holds the control character U+0000 (NUL)\n"
        "    hint: remove it: text may hold tab and newline, no other control character",
    ),
    "ESC in a log line": (
        '      - "[rank0]: RuntimeError: expected scalar type BFloat16 but found Float"',
        '      - "\\e]0;pwned\\x07[rank0]: RuntimeError: expected scalar type BFloat16 but found '
        'Float"',
        "57:9: error[E018]: 'fingerprints[0].must_match[0]' holds the control character U+001B "
        "(ESC)\n    hint: remove it: text may hold tab and newline, no other control character",
    ),
    "CR in an answer": (
        "    answer: No.",
        '    answer: "No.\\rYes."',
        "45:13: error[E018]: 'faq[0].answer' holds the control character U+000D (CR)\n"
        "    hint: remove it: text may hold tab and newline, no other control character",
    ),
    "C1 control in a tag list": (
        "tags: [fsdp, bf16]",
        'tags: [fsdp, "bf16\\x9b"]',
        "7:14: error[E018]: 'tags[1]' holds the control character U+009B\n"
        "    hint: remove it: text may hold tab and newline, no other control character",
    ),
    "override in a key": (
        "mechanism: |",
        '"mechanism\\u202d": |',
        "19:1: error[E018]: the key 'mechanism\\u202d' holds U+202D LEFT-TO-RIGHT OVERRIDE, a "
        "bidirectional control that reorders the text shown\n    hint: delete it: it is "
        "invisible and makes the text read differently than it is",
    ),
}


@pytest.mark.parametrize("name", sorted(HIDDEN_TEXT))
def test_hidden_characters_are_refused_where_they_are(name: str) -> None:
    old, new, printed = HIDDEN_TEXT[name]
    text = replaced(ALPHA, old + "\n", new + "\n")
    assert alpha_problems(text) == (False, [f"alpha-failure.yaml:{printed}"])


def test_tab_and_the_direction_marks_are_allowed() -> None:
    text = replaced(
        ALPHA,
        "title: Alpha failure under FSDP",
        'title: "Alpha\\tfailure \\u200f\\u200e\\u061c under FSDP"',
    )
    assert alpha_problems(text) == (True, [])


def test_a_hidden_character_in_a_tag_description_is_refused() -> None:
    text = replaced(TAGS, "  description: Collectives.", '  description: "Coll\\u202eectives."')
    with pytest.raises(NanopediaError) as err:
        parse(text, "tags.yaml")
    assert [p.code for p in err.value.problems] == ["E018"]
    assert str(err.value).startswith("tags.yaml:9:16: error[E018]: 'nccl.description' holds U+202E")


# 8. Names Windows cannot hold as files.

RESERVED = ["con", "prn", "aux", "nul", "com0", "com1", "com9", "lpt1", "lpt9"]


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_windows_names_are_refused_as_id_alias_and_tag(name: str) -> None:
    hint = (
        f"    hint: add a word, e.g. '{name}-failure'; con, prn, aux, nul, com0-com9 and "
        "lpt0-lpt9 cannot be file names on Windows"
    )
    as_alias = replaced(ALPHA, "aliases: [alpha-old]", f"aliases: [alpha-old, {name}]")
    assert alpha_problems(as_alias) == (
        True,
        [
            f"alpha-failure.yaml:8:22: error[E013]: '{name}' cannot be an alias: Windows reserves "
            f"the file name '{name}' (any extension)\n{hint}"
        ],
    )
    as_id = replaced(ALPHA, "id: alpha-failure", f"id: {name}")
    src, found = check_entry(parse(as_id, f"{name}.yaml"), name)
    assert src is not None
    assert [str(p) for p in found] == [
        f"{name}.yaml:2:5: error[E013]: '{name}' cannot be an id: Windows reserves the file "
        f"name '{name}' (any extension)\n{hint}"
    ]
    tags, problems = check_tags(
        parse(TAGS + f"{name}:\n  title: T\n  description: D.\n", "tags.yaml")
    )
    assert name not in tags
    assert [str(p) for p in problems] == [
        f"tags.yaml:10:1: error[E013]: '{name}' cannot be a tag: Windows reserves the file name "
        f"'{name}' (any extension)\n{hint}"
    ]


@pytest.mark.parametrize("name", ["con-x", "console", "com10", "lpt", "nul-pointer", "auxiliary"])
def test_names_that_only_look_reserved_are_fine(name: str) -> None:
    as_alias = replaced(ALPHA, "aliases: [alpha-old]", f"aliases: [alpha-old, {name}]")
    assert alpha_problems(as_alias) == (True, [])


# 9. Links in tag descriptions follow the entries' link rules.

TAG_LINKS = {
    "[x](javascript:alert(1))": "error[E016]: link scheme 'javascript:' is not allowed in "
    "'nccl.description'",
    "[x](//evil.example/p)": "error[E016]: protocol-relative link '//evil.example/p' is not "
    "allowed in 'nccl.description'",
    "[x](entry:nope)": "error[E025]: link in 'nccl.description' to entry 'nope' does not exist",
    "[x](entry:alpha-old)": "error[E025]: link in 'nccl.description' to entry 'alpha-old' is a "
    "former id",
}


@pytest.mark.parametrize("link", sorted(TAG_LINKS))
def test_links_in_tag_descriptions_are_checked(link: str, tmp_corpus: Path) -> None:
    (tmp_corpus / "tags.yaml").write_text(
        replaced(TAGS, "  description: Collectives.", f"  description: See {link}.")
    )
    _, problems = gather(tmp_corpus)
    shown = [str(p).split(": ", 1)[1] for p in problems if p.severity == "error"]
    assert len(shown) == 1 and shown[0].startswith(TAG_LINKS[link]), shown
    assert [p.location.line for p in problems if p.severity == "error"] == [9]


def test_a_good_entry_link_in_a_tag_description_passes(tmp_corpus: Path) -> None:
    (tmp_corpus / "tags.yaml").write_text(
        replaced(
            TAGS, "  description: Collectives.", "  description: See [beta](entry:beta-failure)."
        )
    )
    _, problems = gather(tmp_corpus)
    assert [p for p in problems if p.severity == "error"] == []


# 10. A `.yml` file is not read: `build` and `serve` say so, as `check` does.


def test_build_and_serve_warn_of_a_yml_file(
    tmp_corpus: Path, tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_corpus / "gamma-failure.yml").write_text("id: gamma-failure\n")
    warning = (
        "entries/gamma-failure.yml: warning[E007]: a '.yml' file in the entries folder is "
        "not read\n    hint: rename it to 'gamma-failure.yaml'"
    )
    monkeypatch.chdir(tmp_path)
    report = build(
        Request(tmp_corpus, tmp_path / "site", SITE_CONFIG, use_cache=False, jobs=1, dates=DATES)
    )
    assert [str(p) for p in report.warnings if p.code == "E007"] == [warning]
    ran = cli(
        "build",
        "--entries",
        "entries",
        "--out",
        "cli-site",
        "--config",
        str(SITE_CONFIG),
        "--no-cache",
    )
    assert ran.code == 0
    assert warning in ran.out
    logged: list[str] = []
    server = serve.Server(tmp_corpus, tmp_path / "served", SITE_CONFIG, 0, logged.append)
    try:
        server.rebuild("first build")
    finally:
        server.httpd.server_close()
    assert warning in logged
