"""`nanopedia/content/advice.py`: the warnings `check` gives an entry that builds but tells a
reader less than it could, each at the value it is about."""

from __future__ import annotations

from nanopedia.content.advice import advice_problems

from .conftest import Checker
from .test_validate import CAUSE, line_of

SECOND = CAUSE.replace("id: cast", "id: upcast").replace("casts to", "upcasts")
STEP = """  - title: Cast from the activation dtype
    causes: [cast]
"""


def advice(text: str, check_text: Checker) -> list[tuple[str, int, int, str]]:
    source, found = check_text(text)
    assert source is not None and found == []  # a valid entry: advice only
    return [(p.code, p.location.line, p.location.col, p.severity) for p in advice_problems(source)]


def test_the_fixture_entry_gets_no_advice(alpha_text: str, check_text: Checker) -> None:
    assert advice(alpha_text, check_text) == []


def test_a_root_cause_no_fix_step_is_for_is_a_warning_at_its_id(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace(CAUSE, CAUSE + SECOND)
    assert advice(text, check_text) == [("E062", line_of(text, "  - id: upcast"), 9, "warning")]
    source, _ = check_text(text)
    (found,) = advice_problems(source)
    assert found.message == (
        "no fix step is for root cause 'upcast': diagnose has no fix to give when it is the "
        "likely cause"
    )
    assert found.hint is not None and "causes: [upcast]" in found.hint


def test_a_step_that_names_the_cause_is_for_it(alpha_text: str, check_text: Checker) -> None:
    text = alpha_text.replace(CAUSE, CAUSE + SECOND).replace(
        STEP, STEP.replace("[cast]", "[cast, upcast]")
    )
    assert advice(text, check_text) == []


def test_a_step_without_causes_is_for_every_cause(alpha_text: str, check_text: Checker) -> None:
    text = alpha_text.replace(CAUSE, CAUSE + SECOND).replace("    causes: [cast]\n", "")
    assert advice(text, check_text) == []


def test_an_entry_that_does_not_say_what_it_was_checked_with_is_a_warning_at_its_id(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("checked_with:\n  torch: 2.13.0\n", "")
    assert advice(text, check_text) == [("E061", line_of(text, "id: alpha-failure"), 5, "warning")]


def test_an_entry_without_checked_with_is_told_what_to_add_at_its_id(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace("checked_with:\n  torch: 2.13.0\n", "")
    source, _ = check_text(text)
    assert source is not None
    (found,) = advice_problems(source)
    assert (str(found.location), found.code, found.severity) == (
        "alpha-failure.yaml:2:5",
        "E061",
        "warning",
    )
    assert found.message == "the entry does not say which releases its claims were checked against"
    assert found.hint == "add 'checked_with:' with library: version lines, e.g. 'torch: 2.13.0'"
