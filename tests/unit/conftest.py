"""Helpers the unit tests share: an entry parsed and validated from text, with no disk."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import FIXTURES

from nanopedia.content.load import parse
from nanopedia.content.validate import Source, check_entry
from nanopedia.errors import Problem

Checker = Callable[..., tuple[Source | None, list[Problem]]]


@pytest.fixture
def alpha_text() -> str:
    """The fixture corpus's valid entry `alpha-failure`, as text a test may change."""
    return (FIXTURES / "corpus" / "alpha-failure.yaml").read_text(encoding="utf-8")


@pytest.fixture
def check_text() -> Checker:
    """`check_text(yaml, stem)`: the entry validated from text, as `check` would see the file."""

    def run(text: str, stem: str = "alpha-failure") -> tuple[Source | None, list[Problem]]:
        return check_entry(parse(text, f"{stem}.yaml"), stem)

    return run
