"""`nanopedia/content/validate.py`: the rules a type cannot express, each reported at the value it
is about."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nanopedia.content.validate import _parses

from .conftest import Checker

CAUSE = """  - id: cast
    title: Model code casts to self.dtype
    domain: workload
    action: fix-code
    explanation: |
      The visible parameters are fp32 shards.
"""
FINGERPRINT_ID = "  - id: scalar-type\n"


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the `nth` occurrence of `needle`."""
    at = -1
    for _ in range(nth):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1


def test_the_fixture_entry_is_valid(alpha_text: str, check_text: Checker) -> None:
    source, found = check_text(alpha_text)
    assert source is not None and source.entry.id == "alpha-failure"
    assert found == []


def test_a_duplicate_root_cause_id_is_reported_at_each_repeat(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace(CAUSE, CAUSE * 3)
    _, found = check_text(text)
    assert [(p.code, p.location.line, p.location.col, p.message) for p in found] == [
        ("E026", line_of(text, "  - id: cast", n), 9, "duplicate root cause id 'cast'")
        for n in (2, 3)
    ]
    assert found[0].hint == "ids must be unique within the entry"


def test_a_duplicate_fingerprint_id_is_reported_at_the_repeat(
    alpha_text: str, check_text: Checker
) -> None:
    start = alpha_text.index(FINGERPRINT_ID)
    block = alpha_text[start : alpha_text.index("checked_with:")]
    text = alpha_text.replace(block, block * 2)
    _, found = check_text(text)
    assert [(p.code, p.location.line, p.message) for p in found] == [
        ("E026", line_of(text, FINGERPRINT_ID, 2), "duplicate fingerprint id 'scalar-type'")
    ]


def test_ids_of_different_kinds_may_be_equal(alpha_text: str, check_text: Checker) -> None:
    """A root cause and a fingerprint are different namespaces."""
    text = alpha_text.replace("  - id: scalar-type\n", "  - id: cast\n").replace(
        "shows: [scalar-type]", "shows: [cast]"
    )
    assert check_text(text)[1] == []


def test_an_id_that_is_not_the_file_name_is_reported_at_the_id(
    alpha_text: str, check_text: Checker
) -> None:
    _, found = check_text(alpha_text, stem="alpha")
    assert [(p.code, p.location.line, p.location.col) for p in found] == [
        ("E014", line_of(alpha_text, "id: alpha-failure"), 5)
    ]
    assert found[0].hint == "rename the file to 'alpha-failure.yaml' or set 'id: alpha'"


def test_a_symptom_of_an_unknown_cause_suggests_the_close_one(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("    cause: cast\n", "    cause: cats\n", 1)
    _, found = check_text(text)
    assert [(p.code, p.message, p.hint) for p in found] == [
        ("E022", "symptom points to unknown root cause 'cats'", "did you mean 'cast'?")
    ]


def test_an_unsafe_link_is_reported_at_its_own_line_of_a_block(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace(
        "  FSDP casts parameters at module boundaries.\n",
        "  FSDP casts parameters.\n  See [this](javascript:alert(1)).\n",
    )
    source, found = check_text(text)
    assert source is not None  # reported, and the page drops the link
    assert [(p.code, p.location.line) for p in found] == [("E016", line_of(text, "javascript:"))]
    assert found[0].message == "link scheme 'javascript:' is not allowed in 'mechanism'"


def test_a_repro_naming_an_unknown_fingerprint_lists_the_known_ones(
    alpha_text: str, check_text: Checker
) -> None:
    _, found = check_text(alpha_text.replace("shows: [scalar-type]", "shows: [scalar]"))
    assert [(p.code, p.message) for p in found] == [
        ("E027", "repro 'float-input' names unknown fingerprint 'scalar'")
    ]


def test_a_file_that_is_not_a_mapping_is_refused(check_text: Checker) -> None:
    source, found = check_text("- a list\n")
    assert source is None
    assert [(p.code, p.message) for p in found] == [("E012", "an entry must be a YAML mapping")]


def test_a_root_cause_without_a_domain_or_an_action_is_refused_at_the_cause(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("    domain: workload\n    action: fix-code\n", "")
    _, found = check_text(text)
    line = line_of(text, "  - id: cast")
    assert [(p.code, p.location.line, p.message) for p in found] == [
        ("E011", line, "missing required field 'root_causes[0].domain'"),
        ("E011", line, "missing required field 'root_causes[0].action'"),
    ]


def test_an_unknown_action_is_refused_with_the_closest_allowed_value(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("action: fix-code", "action: drain-nodes")
    _, found = check_text(text)
    assert [(p.code, p.location.line, p.message, p.hint) for p in found] == [
        (
            "E013",
            line_of(text, "action: drain-nodes"),
            "'drain-nodes' is not an allowed value for 'root_causes[0].action'",
            "did you mean 'drain-node'?",
        )
    ]


def test_an_unknown_domain_is_refused_and_the_allowed_values_are_listed(
    alpha_text: str, check_text: Checker
) -> None:
    _, found = check_text(alpha_text.replace("domain: workload", "domain: user-error"))
    assert [p.code for p in found] == ["E013"]
    assert found[0].hint == (
        "expected one of: workload, environment, infrastructure, scheduler, data"
    )


RANGES = '    package: torch\n    affected:\n      - introduced: "1.12"\n'


def _with_system(text: str, extra: str) -> str:
    """The fixture with its package and ranges replaced by `extra`."""
    assert RANGES in text
    return text.replace(RANGES, extra)


def test_affected_ranges_that_parse_and_run_forwards_are_accepted(
    alpha_text: str, check_text: Checker
) -> None:
    text = _with_system(
        alpha_text,
        "    package: torch\n    affected:\n"
        '      - introduced: "1.12"\n        fixed: "2.4.0"\n'
        '      - introduced: "0"\n',
    )
    source, found = check_text(text)
    assert found == []
    assert source is not None
    ranges = source.entry.affected_systems[0].affected
    assert [(r.introduced, r.fixed) for r in ranges] == [("1.12", "2.4.0"), ("0", None)]


def test_a_version_that_cannot_be_compared_is_refused_at_its_value(
    alpha_text: str, check_text: Checker
) -> None:
    text = _with_system(
        alpha_text, '    package: torch\n    affected:\n      - introduced: "2.x"\n'
    )
    _, found = check_text(text)
    assert [(p.code, p.location.line, p.message) for p in found] == [
        ("E028", line_of(text, 'introduced: "2.x"'), "'2.x' is not a version a program can compare")
    ]


def test_a_range_that_ends_before_it_starts_is_refused_at_fixed(
    alpha_text: str, check_text: Checker
) -> None:
    text = _with_system(
        alpha_text,
        '    package: torch\n    affected:\n      - introduced: "2.4"\n        fixed: "2.4.0"\n',
    )
    _, found = check_text(text)
    assert [(p.code, p.location.line) for p in found] == [("E028", line_of(text, 'fixed: "2.4.0"'))]


def test_a_package_needs_ranges_and_ranges_need_a_package(
    alpha_text: str, check_text: Checker
) -> None:
    bare = _with_system(alpha_text, "    package: torch\n")
    _, found = check_text(bare)
    assert [(p.code, p.location.line, p.message) for p in found] == [
        ("E028", line_of(bare, "package: torch"), "package 'torch' has no 'affected' ranges")
    ]
    orphan = _with_system(alpha_text, '    affected:\n      - introduced: "0"\n')
    _, found = check_text(orphan)
    assert [(p.code, p.location.line) for p in found] == [("E028", line_of(orphan, "- introduced"))]


def test_a_fix_step_that_names_an_unknown_cause_is_refused_with_a_suggestion(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("causes: [cast]", "causes: [cats]")
    _, found = check_text(text)
    assert [(p.code, p.location.line, p.message, p.hint) for p in found] == [
        (
            "E022",
            line_of(text, "causes: [cats]"),
            "fix step points to unknown root cause 'cats'",
            "did you mean 'cast'?",
        )
    ]


#: Code, and whether reading it line by line vouches that it parses (`validate._parses`); where
#: it does not, the whole code goes to `ast.parse`.
LINE_BY_LINE = [
    ("x = 1\ny = f(x)\n", True),
    ("def f(x):\n    return x\n", True),
    ("class A:\n    def f(self):\n        pass\n    y = 1\nz = 2\n", True),
    ("if a: b\nc = 1\n", True),  # a header with its body on its line is a statement
    ("def f():\n    # note\n\n    return 1\n", True),  # comments and blanks keep the level
    ("for i in x:\n    if i:\n        break\n    continue\n", True),
    ("# only a comment\n\n", True),
    ("def f():\n", False),  # a header last
    ("x = 1\n    y = 2\n", False),  # deeper without a header
    ("def f():\nreturn 1\n", False),  # not deeper after a header
    ("if a:\n    b\n  c\n", False),  # back to a level that encloses nothing
    ("x = = 1\n", False),
    ("\tx = 1\n", False),
    ("x = (1,\n     2)\n", False),  # a bracket across lines: left to ast.parse
    ("s = '''a\nb'''\n", False),
    ("x = 1 + \\\n    2\n", False),
    ("if a:\n    b\nelse:\n    c\n", False),  # `else:` alone parses neither way
    ("@dec\ndef f():\n    pass\n", False),
    ("x = 1\r\n", False),
    ("from __future__ import annotations\n", False),
]


@pytest.mark.parametrize(("code", "vouched"), LINE_BY_LINE)
def test_code_examples_are_read_line_by_line_where_that_is_sure(code: str, vouched: bool) -> None:
    """The fast path of the code-example check says yes only for code that parses, and for the
    common shapes of code (statements, nested blocks, one-line bodies, comments)."""
    assert _parses(code) is vouched
    if vouched:
        ast.parse(code)


LINES = ["x = 1", "f(x)", "def f(a):", "class A:", "if a: b", "return", "else:", "pass", ")", "# c"]


@given(st.lists(st.tuples(st.sampled_from(LINES), st.integers(0, 3)), max_size=12))
@settings(max_examples=400, deadline=None)
def test_what_the_line_by_line_reading_vouches_for_parses(lines: list[tuple[str, int]]) -> None:
    code = "".join(f"{'    ' * depth}{text}\n" for text, depth in lines)
    if _parses(code):
        ast.parse(code)
