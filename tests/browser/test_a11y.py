"""Every page type passes axe-core with zero violations, in the light and the dark scheme.

axe-core (npm, MPL-2.0) is installed on demand into `.cache/npm/` (tests/tools.py) and evaluated
in the page through the DevTools protocol, which the page's CSP does not restrict. The search
pages are checked with their suggestions and results showing, since that is where the ARIA is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from tools import held, npm_package, page_types

from nanopedia.site import highlight

SCHEMES = ("light", "dark")
RUN = (
    "axe.run(document).then(r => r.violations.map(v => "
    "v.id + ' (' + v.impact + '): ' + v.nodes.map(n => n.target.join(' ')).join(', ')))"
)


@pytest.fixture(scope="module")
def axe_source() -> str:
    return (npm_package("axe-core") / "axe.min.js").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def page(browser: Any) -> Iterator[Any]:
    """One page for every check: contexts are slow to make on a loaded machine."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def violations(page: Any, axe_source: str) -> list[str]:
    page.evaluate(axe_source + "\n;0")
    return list(page.evaluate(RUN))


def test_axe_reports_a_known_violation(page: Any, axe_source: str) -> None:
    page.set_content(
        '<!doctype html><html lang="en"><title>t</title><main><img src="x.png"></main></html>'
    )
    assert any(v.startswith("image-alt ") for v in violations(page, axe_source))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_page_type_has_no_axe_violations(
    repo_site: Path, page: Any, axe_source: str, scheme: str
) -> None:
    page.emulate_media(color_scheme=scheme)
    found = []
    for kind, path in page_types(repo_site).items():
        with held(path) if kind == "redirect" else nullcontext(path) as shown:
            page.goto(shown.as_uri() + ("?q=dtype" if kind == "search" else ""))
            page.wait_for_load_state("load")
            if kind == "search":
                page.locator("#search-results .search-entry").first.wait_for()
            if kind == "entry":  # the header box with its suggestions open
                page.fill("#search-q", "bf16")
                page.locator("#search-suggestions .search-entry").first.wait_for()
            found += [f"{kind} ({path.name}): {v}" for v in violations(page, axe_source)]
    assert found == [], f"axe-core violations in the {scheme} scheme:\n" + "\n".join(found)


def test_code_colours_are_readable_on_every_code_background() -> None:
    """Pygments' own light comment colour (#3D7B7B) was 3.9:1 on a removed diff line."""
    for scheme, rules in highlight.styles().items():
        for colour in re.findall(r"#[0-9a-fA-F]{3,6}\b", rules):
            for ground in highlight.BACKGROUNDS[scheme]:
                ratio = highlight.contrast(highlight.rgb(colour), highlight.rgb(ground))
                assert ratio >= 4.5, f"{scheme}: {colour} on {ground} is {ratio:.2f}:1"
    assert highlight.readable("#3D7B7B", ["#ffebe9"]) != "#3D7B7B"
