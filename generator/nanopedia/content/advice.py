"""The warnings `check` gives an entry that builds but tells a reader less than it could.

Not build problems: the site is still right, so `build` does not report them. Each is located at
the value it is about.
"""

from __future__ import annotations

from collections.abc import Iterator

from nanopedia.content.validate import Source
from nanopedia.errors import Location, Problem


def advice_problems(src: Source) -> list[Problem]:
    """Every warning of the entry."""
    return [*_checked_with(src), *_unserved_causes(src)]


def _checked_with(src: Source) -> Iterator[Problem]:
    """E061: the entry does not say which releases it was checked against (less trustworthy)."""
    if src.entry.checked_with:
        return
    yield Problem(
        Location(src.doc.path, *src.at("id")),
        "E061",
        "the entry does not say which releases its claims were checked against",
        "add 'checked_with:' with library: version lines, e.g. 'torch: 2.13.0'",
        "warning",
    )


def _unserved_causes(src: Source) -> Iterator[Problem]:
    """E062: a root cause no fix step serves (a step serves the causes its `causes` names, or
    every cause without it): `diagnose` has no fix to print beside that likely cause."""
    steps = src.entry.fix
    if any(not step.causes for step in steps):
        return
    served = {cause for step in steps for cause in step.causes}
    for i, cause in enumerate(src.entry.root_causes):
        if cause.id not in served:
            yield Problem(
                Location(src.doc.path, *src.at("root_causes", i, "id")),
                "E062",
                f"no fix step is for root cause '{cause.id}': diagnose has no fix to give "
                "when it is the likely cause",
                f"add a fix step with 'causes: [{cause.id}]', or add '{cause.id}' to the "
                "'causes' of a step that fixes it (a step without 'causes' is for every cause)",
                "warning",
            )
