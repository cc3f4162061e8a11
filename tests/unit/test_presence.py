"""`nanopedia.diagnosis.presence`: Hyperscan's answer names every pattern RE2's set finds (on
every test log and every fingerprint's must-match lines, in ASCII and with characters over 0x7F),
an answer that names too much changes no scan, and the compiled database is stored, checked and
compiled again when it is not what was stored."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import hyperscan
import pytest
from conftest import FIXTURES, ROOT, gathered_entries

from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import presence, scan

LOGS = sorted(p for p in (ROOT / "tests" / "logs").rglob("*") if p.is_file())


class MemoryStore:
    """A `presence.Store` in a dict, counting what it is asked."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.gets = 0

    def get(self, name: str) -> bytes | None:
        self.gets += 1
        return self.files.get(name)

    def put(self, name: str, data: bytes) -> None:
        self.files[name] = data


@pytest.fixture(scope="module")
def entries() -> list:
    return gathered_entries()[0].entries


@pytest.fixture(scope="module")
def matchers(entries: list) -> tuple[scan.Matcher, scan.Matcher]:
    """The RE2 set's matcher and the accelerated one, of every shipped entry."""
    exact, fast = scan.Matcher(entries), scan.Matcher(entries)
    before = fast.present
    fast.accelerate(None)
    assert fast.present is not before
    return exact, fast


def test_every_shipped_pattern_compiles_for_hyperscan(matchers) -> None:
    """The shipped entries get the fast answer: one pattern Hyperscan refused would leave every
    buffer to the RE2 set."""
    exact, _ = matchers
    assert presence.accelerated(exact.programs, None) is not None


def test_every_must_match_line_is_named_as_the_set_names_it(entries, matchers) -> None:
    exact, fast = matchers
    lines = [line for e in entries for fp in e.fingerprints for line in fp.must_match]
    assert len(lines) > 1000
    for line in lines:
        data = (line + "\n").encode()
        assert set(exact.present(data)) <= set(fast.present(data)), line


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(ROOT / "tests" / "logs")))
def test_a_test_log_scans_alike_with_either_answer(path: Path, matchers) -> None:
    exact, fast = matchers
    data = path.read_bytes()
    assert set(exact.present(data)) <= set(fast.present(data))
    one = scan.scan(io.BytesIO(data), path.name, exact)
    assert scan.scan(io.BytesIO(data), path.name, fast) == one


def test_every_must_match_line_with_wide_characters_is_named_as_the_set_names_it(
    entries, matchers
) -> None:
    """RE2 reads UTF-8, so `.` or `[^x]` takes all two bytes of `é`: the widened programs must
    find those lines too."""
    exact, fast = matchers
    for e in entries:
        for fp in e.fingerprints:
            for line in fp.must_match:
                data = (line.replace("e", "\u00e9").replace(" ", "\u2003") + "\n").encode()
                assert set(exact.present(data)) <= set(fast.present(data)), line


def test_a_character_over_0x7f_is_one_to_four_bytes() -> None:
    programs = ["(?m)a.b", "(?m)plain", '(?m)x[^"]{2}y', r"(?m)p\Sq"]
    fast = presence.accelerated(programs, None)
    assert fast is not None
    assert fast("x a\u00e9b plain\n".encode()) == [0, 1]
    assert fast("x\u00e9\u2588y p\U0001f600q\n".encode()) == [2, 3]
    assert fast(b"x axb\n") == [0]
    assert fast(b"nothing here\n") == []
    assert fast(b"plain plain\nplain\n") == [1]  # each pattern named once


def test_a_pattern_that_matches_nothing_at_all_is_named_as_the_set_names_it() -> None:
    programs = ["(?m)x*", "(?m)plain"]
    fast = presence.accelerated(programs, None)
    assert fast is not None
    exact = presence.exact(presence.re2_set(programs))
    for data in (b"plain\n", b"y\n", b"xx plain\n"):
        assert fast(data) == exact(data)


def test_the_set_matches_no_pattern_across_a_newline() -> None:
    exact = presence.exact(presence.re2_set([r"(?m)a\sb"]))
    assert exact(b"a\nb\n") == []
    assert exact(b"a b\n") == [0]


@pytest.mark.parametrize(
    ("program", "widened"),
    [
        ("(?m)a.b", r"(?m)a(?:[^\n]{1,4})b"),
        ('x[^"]+y', 'x(?:[^"]{1,4})+y'),
        (r"[\S]x\W", r"(?:[\S]{1,4})x(?:\W{1,4})"),
        (r"[a-z\d]\s\w\x41", r"[a-z\d]\s\w\x41"),
        ("(?m:a|b)(?P<n>c)", "(?m:a|b)(?P<n>c)"),
        (r"\x7f\x41", r"\x7f\x41"),
        (r"\x41.", r"\x41(?:[^\n]{1,4})"),
        (r"a\xe9", None),
        ("(?-m)x.", r"(?-m)x(?:[^\n]{1,4})"),
        (r"\x{2588}", None),
        (r"\xe9", None),
        (r"\x80", None),
        (r"[\xe9-\xff]", None),
        (r"\pL", None),
        (r"\PL", None),
        (r"[\pL]", None),
        (r"a[\PL]", None),
        (r"\C", None),
        (r"\Qa.b\E", None),
        ("(?i)k", None),  # RE2 folds K into the Kelvin sign
        ("(?s)a.b", None),
        ("x:(?s)y", None),
        ("a(?i:b)", None),
        ("caf\u00e9", None),
    ],
)
def test_bytewise_widens_what_can_match_a_wide_character(program: str, widened: str | None) -> None:
    assert presence.bytewise(program) == widened


@pytest.mark.parametrize(
    ("program", "kept"),
    [
        (r"(?m)(?:[^mM] |[^\w ]|train_)[lL]oss=nan", r"(?m)[lL]oss=nan"),
        (r"(?m)^\s*rank: \d+", r"(?m)rank: \d+"),
        (r"(?:Train batch size|Gradient steps): \d+", r"(?:Train batch size|Gradient steps): \d+"),
        (r"(?:\d+/\d+: )x", "x"),
        (r"\bfoo|\s+bar|baz", "foo|bar|baz"),
        (r"\d+\s+", r"\d+\s+"),  # no text at all: left whole
        (r"\d+\.x", r"\.x"),
        (r"\s*[:=]x", "[:=]x"),
        (r"[a-z]+x", "x"),
        (r"[^a]x", "x"),
        (r"[\w.]x", "x"),
        ("a?b", "b"),
        ("a*?b", "b"),
        ("a{0,2}b", "b"),
        ("a{2}b", "a{2}b"),
        ("a+?b", "a+?b"),
        ("(?:abc)?d", "d"),
        ("(?:abc|de)f", "f"),
        (r"\x41b", "b"),
        (r"\s*(?m)^x", "(?m)x"),  # a flag is never dropped
        (r"(?m)(?-m)\s*x", "(?m)(?-m)x"),
        ("x(?m)^a|b", "x(?m)^a|b"),
        (r"\d(?:[^|]|\|)x|y", "x|y"),  # a `|` in a class or escaped splits nothing
        ("(?:a(b)c)x", "x"),
        (".x", "x"),
        (r"\s*X", "X"),
        (r"\d+(?m)$", r"\d+(?m)$"),  # no text: left whole, its flag once
        (r"\s\|\sx", r"\|\sx"),
        (r"\s[|]x", "[|]x"),
        (r"(?:\d)a|\s+b", "a|b"),
        (r"\s(abc|def)x", "(abc|def)x"),
        (r"\s(?:a\)bcd)x", r"(?:a\)bcd)x"),
        (r"\s(?:[)]abc)x", "(?:[)]abc)x"),
    ],
)
def test_each_alternative_starts_at_the_first_text_every_match_holds(
    program: str, kept: str
) -> None:
    assert presence.from_text(program) == kept


def test_a_pattern_after_a_leading_context_is_still_named() -> None:
    programs = [r"(?m)(?:[^mM] |[^\w ]|train_)loss=nan", r"(?m)^\s*rank: \d+"]
    fast = presence.accelerated(programs, None)
    assert fast is not None
    exact = presence.exact(presence.re2_set(programs))
    for data in (b"step loss=nan\n", b"  rank: 3\n", b"train_loss=nan rank: 1\n", b"x\n"):
        assert set(fast(data)) >= set(exact(data)), data


def test_an_answer_that_names_too_much_changes_no_scan(entries, matchers) -> None:
    exact, _ = matchers
    loose = scan.Matcher(entries)
    loose.present = lambda data: list(range(len(loose.programs)))
    for path in LOGS:
        data = path.read_bytes()
        one = scan.scan(io.BytesIO(data), path.name, exact)
        assert scan.scan(io.BytesIO(data), path.name, loose) == one, path


def test_a_pattern_named_past_its_cap_that_is_not_there_leaves_every_line_compared() -> None:
    """A decisive fingerprint at its cap and the late lines spent: a later buffer whose answer
    names it without holding it must not report lines left uncompared."""
    source, problems = load_entry(FIXTURES / "corpus" / "alpha-failure.yaml")
    assert source is not None and not problems
    exact = scan.Matcher([source.entry])
    error = "RuntimeError: expected scalar type BFloat16 but found Float"
    first = "".join(
        f"[rank0]: 2024-05-01 10:00:00.{i % 1000:03d} {error}\n"
        for i in range(scan.EVIDENCE_CAP + scan.LATE_LINES)
    ).encode()
    log = first + b"step 2 loss 1.0\n" * 100
    loose = scan.Matcher([source.entry])
    loose.present = lambda data: list(range(len(loose.programs)))
    one = scan.scan(io.BytesIO(log), "a.log", exact, buffer_bytes=len(first))
    assert not one.uncompared
    assert scan.scan(io.BytesIO(log), "a.log", loose, buffer_bytes=len(first)) == one
    more = first + f"[rank1]: {error}\n".encode()  # one decisive line too many: not compared
    assert scan.scan(io.BytesIO(more), "a.log", loose, buffer_bytes=len(first)).uncompared


def test_the_database_is_stored_read_back_and_compiled_again_when_damaged(matchers) -> None:
    exact, _ = matchers
    store = MemoryStore()
    first = presence.accelerated(exact.programs, store)
    assert first is not None and len(store.files) == 1
    ((name, stored),) = store.files.items()
    assert name.startswith("hyperscan-") and name.endswith(".db")
    sample = (ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log").read_bytes()
    answer = first(sample)
    assert answer and presence.accelerated(exact.programs, store)(sample) == answer
    assert store.files[name] == stored  # read back, not written again
    for damaged in (stored[:-1] + bytes([stored[-1] ^ 1]), stored[:100], b"", b"\n" * 5):
        store.files[name] = damaged
        again = presence.accelerated(exact.programs, store)
        assert again is not None and again(sample) == answer
        assert store.files[name] == stored  # compiled again and stored whole


def test_a_stored_database_is_read_back_without_compiling(matchers, monkeypatch) -> None:
    exact, _ = matchers
    store = MemoryStore()
    first = presence.accelerated(exact.programs, store)
    assert first is not None

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(hyperscan, "Database", no_compiling)
    again = presence.accelerated(exact.programs, store)
    sample = (ROOT / "tests" / "logs" / "fsdp-mp-torchrun.log").read_bytes()
    assert again is not None and again(sample) == first(sample) != []


def test_other_programs_are_another_database(matchers) -> None:
    exact, _ = matchers
    store = MemoryStore()
    presence.accelerated(exact.programs, store)
    presence.accelerated(exact.programs[:-1], store)
    assert len(store.files) == 2


def test_without_hyperscan_or_with_a_pattern_it_refuses_the_set_answers(monkeypatch) -> None:
    programs = ["(?m)plain", "(?U)a+"]  # ungreedy: RE2's flag, not Hyperscan's
    assert presence.accelerated(programs, None) is None
    programs = ["(?m)plain", r"(?m)\x{2588}"]  # a code point no byte pattern stands for
    assert presence.accelerated(programs, None) is None
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # `import hyperscan` raises ImportError
    assert presence.accelerated(programs[:1], None) is None
    matcher = scan.Matcher([])
    before = matcher.present
    matcher.accelerate(None)
    assert matcher.present is before
