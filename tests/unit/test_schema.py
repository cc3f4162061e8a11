"""`nanopedia/content/schema.py`: what the model refuses, as a contributor reads it: each kind of
pydantic error a located problem at the value (the key, for an unknown field), with its code, a
message naming the field by its path and, where one helps, a hint. One case per kind, made by
changing the valid fixture entry."""

from __future__ import annotations

import pytest

from .conftest import Checker

#: name: (text of the fixture entry, what replaces it, the problems as (code, line, col, message,
#: hint)).
CASES: dict[str, tuple[str, str, list[tuple[str, int, int, str, str | None]]]] = {
    "title too long": (
        "title: Alpha failure under FSDP\n",
        "title: " + "x" * 121 + "\n",
        [
            (
                "E013",
                3,
                8,
                "'title' is too long (121 characters, at most 120)",
                "shorten it or move detail elsewhere",
            )
        ],
    ),
    "title too short": (
        "title: Alpha failure under FSDP\n",
        "title: ab\n",
        [("E013", 3, 8, "'title' is too short (at least 3 characters)", None)],
    ),
    "title blank": (
        "title: Alpha failure under FSDP\n",
        "title: '   '\n",
        [("E012", 3, 8, "'title' is empty", "give 'title' a value")],
    ),
    "tags none": (
        "tags: [fsdp, bf16]\n",
        "tags: []\n",
        [("E012", 7, 7, "'tags' needs at least 1 item(s)", None)],
    ),
    "tags null": (
        "tags: [fsdp, bf16]\n",
        "tags:\n",
        [("E012", 7, 6, "'tags' is empty", "give 'tags' a value or remove the line")],
    ),
    "tags item null": (
        "tags: [fsdp, bf16]\n",
        "tags:\n  - fsdp\n  -\n",
        [
            (
                "E012",
                9,
                4,
                "'tags[1]' is empty",
                "give item 2 of 'tags' a value or remove the line",
            )
        ],
    ),
    "confirm step blank": (
        "  - Print the dtype of inputs and weights.\n",
        "  - Print the dtype of inputs and weights.\n  - '  '\n",
        [("E012", 29, 5, "'confirm[1]' is empty", "give item 2 of 'confirm' a value")],
    ),
    "tags too many": (
        "tags: [fsdp, bf16]\n",
        "tags: [t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12]\n",
        [("E013", 7, 7, "'tags' has too many items (at most 12)", None)],
    ),
    "ranks 0": (
        "    stack: generic\n    broken: |\n",
        "    stack: generic\n    ranks: 0\n    broken: |\n",
        [("E013", 66, 12, "'0' is not allowed for 'repro[0].ranks': at least 1", None)],
    ),
    "ranks 3": (
        "    stack: generic\n    broken: |\n",
        "    stack: generic\n    ranks: 3\n    broken: |\n",
        [("E013", 66, 12, "'3' is not allowed for 'repro[0].ranks': at most 2", None)],
    ),
    "ranks word": (
        "    stack: generic\n    broken: |\n",
        "    stack: generic\n    ranks: two\n    broken: |\n",
        [("E012", 66, 12, "'repro[0].ranks' must be a whole number, not 'two'", None)],
    ),
    "ranks fraction": (
        "    stack: generic\n    broken: |\n",
        "    stack: generic\n    ranks: 1.5\n    broken: |\n",
        [("E012", 66, 12, "'repro[0].ranks' must be a whole number, not '1.5'", None)],
    ),
    "category typo": (
        "category: mixed-precision\n",
        "category: mixed-precisio\n",
        [
            (
                "E013",
                6,
                11,
                "'mixed-precisio' is not an allowed value for 'category'",
                "did you mean 'mixed-precision'?",
            )
        ],
    ),
    "category unknown": (
        "category: mixed-precision\n",
        "category: zzzzzz\n",
        [
            (
                "E013",
                6,
                11,
                "'zzzzzz' is not an allowed value for 'category'",
                "expected one of: mixed-precision, distributed, numerics, memory, performance, "
                "configuration, compilation, data, cuda, hardware, autograd, checkpointing, "
                "environment",
            )
        ],
    ),
    "confirm text": (
        "confirm:\n  - Print the dtype of inputs and weights.\n",
        "confirm: Print it.\n",
        [("E012", 27, 10, "'confirm' must be a list, not text", None)],
    ),
    "cause text": (
        (
            "root_causes:\n  - id: cast\n    title: Model code casts to self.dtype\n"
            "    domain: workload\n    action: fix-code\n    explanation: |\n"
            "      The visible parameters are fp32 shards.\n"
        ),
        "root_causes:\n  - cast\n",
        [("E012", 10, 5, "'root_causes[0]' must be a mapping, not text", None)],
    ),
    "summary list": (
        (
            "summary: |\n  The alpha failure happens when bf16 weights meet fp32 inputs. "
            "See [beta](entry:beta-failure).\n"
        ),
        "summary: [a, b]\n",
        [("E012", 4, 10, "'summary' must be text, not a list", None)],
    ),
    "summary mapping": (
        (
            "summary: |\n  The alpha failure happens when bf16 weights meet fp32 inputs. "
            "See [beta](entry:beta-failure).\n"
        ),
        "summary: {a: 1}\n",
        [("E012", 4, 10, "'summary' must be text, not a mapping", None)],
    ),
    "package pattern": (
        "    package: torch\n",
        "    package: Torch!\n",
        [
            (
                "E013",
                24,
                14,
                "'affected_systems[0].package' does not match ^[a-z0-9][a-z0-9._-]*$",
                None,
            )
        ],
    ),
    "http reference": (
        "    url: https://docs.pytorch.org/docs/stable/fsdp.html\n",
        "    url: http://docs.pytorch.org/docs/stable/fsdp.html\n",
        [
            (
                "E015",
                48,
                10,
                "reference URL 'http://docs.pytorch.org/docs/stable/fsdp.html' is not an https URL",
                "use the https:// address of the page",
            )
        ],
    ),
    "nested unknown close": (
        "    domain: workload\n",
        "    domain: workload\n    titel: x\n",
        [("E010", 13, 5, "unknown field 'root_causes[0].titel'", "did you mean 'title'?")],
    ),
    "nested unknown far": (
        "    domain: workload\n",
        "    domain: workload\n    zzzzzz: x\n",
        [
            (
                "E010",
                13,
                5,
                "unknown field 'root_causes[0].zzzzzz'",
                "known fields: id, title, domain, action, explanation",
            )
        ],
    ),
    "id pattern": (
        "id: alpha-failure\n",
        "id: Alpha_Failure\n",
        [
            (
                "E013",
                2,
                5,
                "'Alpha_Failure' is not a valid id for 'id'",
                "use lower-case words joined by hyphens, e.g. 'alpha-failure'",
            )
        ],
    ),
    "bool": (
        "    indicates: decisive\n",
        "    indicates: decisive\n    ignore_case: maybe\n",
        [("E012", 55, 18, "'fingerprints[0].ignore_case' must be true or false, not text", None)],
    ),
    "mapping null": (
        "checked_with:\n  torch: 2.13.0\n",
        "checked_with:\n",
        [
            (
                "E012",
                60,
                14,
                "'checked_with' is empty",
                "give 'checked_with' a value or remove the line",
            )
        ],
    ),
    "mapping given a list": (
        "checked_with:\n  torch: 2.13.0\n",
        "checked_with: [torch]\n",
        [("E012", 60, 15, "'checked_with' must be a mapping, not a list", None)],
    ),
    "unknown field two levels down": (
        '      - introduced: "1.12"\n',
        '      - introduced: "1.12"\n        fixd: "2.0"\n',
        [
            (
                "E010",
                27,
                9,
                "unknown field 'affected_systems[0].affected[0].fixd'",
                "did you mean 'fixed'?",
            )
        ],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_kind_of_refusal_is_located_and_said(
    name: str, alpha_text: str, check_text: Checker
) -> None:
    old, new, said = CASES[name]
    assert old in alpha_text
    _, found = check_text(alpha_text.replace(old, new, 1))
    assert [(p.code, p.location.line, p.location.col, p.message, p.hint) for p in found] == said
