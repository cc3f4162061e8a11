"""The page budget: an entry page with every stylesheet it links stays under 60,000 bytes before
compression, measured on the repository's own entries as `nanopedia build` makes them.

A page over budget needs a lighter theme or a tighter entry (split it, shorten what repeats), not
a bigger number here.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from conftest import ROOT

from generator.build import build

BUDGET = 60_000
OVER_BUDGET: dict[str, int] = {
    # The review's corrections and the "Reproduce it" sections (two repros each) took these over;
    # the reader issue (#20) trims the pages (shorter code examples, lazily loaded search).
    "fsdp-mixed-precision-error.html": 72_000,
    "gradscaler-misuse.html": 71_000,
    # Widened to every DeepSpeed-vs-TrainingArguments mismatch (eleven keys, "auto", the batch
    # assertion): it wants splitting into a precision entry and a batch/"auto" entry.
    "hf-deepspeed-config-mismatch.html": 92_000,
}
"""Entry pages known to be over BUDGET, each with the ceiling it must stay under meanwhile. The
test fails when such a page comes within budget, so that its line here goes too."""


def stylesheets(html: str) -> list[str]:
    """The href of every `<link rel="stylesheet">` of a page, in order."""
    found: list[str] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            values = dict(attrs)
            if tag == "link" and "stylesheet" in (values.get("rel") or "").lower().split():
                found.append(values.get("href") or "")

    Collect().feed(html)
    return found


def weight(page: Path) -> int:
    """Bytes a reader's browser fetches for the page and its stylesheets, uncompressed."""
    html = page.read_bytes()
    return len(html) + sum((page.parent / href).stat().st_size
                           for href in stylesheets(html.decode("utf-8")))


def over_budget(site: Path, known: dict[str, int]) -> list[str]:
    """One line per entry page over its limit (BUDGET, or its ceiling in `known`), and per
    `known` page that is within BUDGET now or is no longer built."""
    problems = []
    pages = sorted((site / "entries").glob("*.html"))
    for page in pages:
        size, limit = weight(page), known.get(page.name, BUDGET)
        if size >= limit:
            problems.append(f"entries/{page.name}: {size:,} bytes with its stylesheets, "
                            f"limit {limit:,}")
        elif page.name in known and size < BUDGET:
            problems.append(f"entries/{page.name}: {size:,} bytes, within the {BUDGET:,} budget "
                            "now: remove it from OVER_BUDGET")
    problems += [f"entries/{name} is in OVER_BUDGET but was not built"
                 for name in sorted(set(known) - {p.name for p in pages})]
    return problems


def test_entry_pages_with_their_stylesheets_fit_the_budget(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build(ROOT / "entries", site, ROOT / "nanopedia.toml", use_cache=False, jobs=1)
    assert list((site / "entries").glob("*.html")), "the build made no entry page"
    problems = over_budget(site, OVER_BUDGET)
    assert not problems, "entry pages over budget:\n" + "\n".join(problems)


def test_the_budget_counts_the_page_and_every_stylesheet_it_links(tmp_path: Path) -> None:
    (tmp_path / "static").mkdir()
    (tmp_path / "entries").mkdir()
    (tmp_path / "static" / "a.css").write_bytes(b"x" * 20_000)
    (tmp_path / "static" / "b.css").write_bytes(b"x" * 30_000)
    (tmp_path / "static" / "unlinked.css").write_bytes(b"x" * 50_000)
    head = ('<link rel="stylesheet" href="../static/a.css"><link href="../static/b.css" '
            'rel="Stylesheet"><link rel="alternate" href="../static/unlinked.css">')
    light, heavy = (head + "x" * (n - len(head)) for n in (9_999, 10_000))
    (tmp_path / "entries" / "light.html").write_text(light)
    (tmp_path / "entries" / "heavy.html").write_text(heavy)
    (tmp_path / "entries" / "known.html").write_text(heavy)
    assert weight(tmp_path / "entries" / "light.html") == 59_999
    assert over_budget(tmp_path, {"known.html": 61_000, "gone.html": 70_000}) == [
        "entries/heavy.html: 60,000 bytes with its stylesheets, limit 60,000",
        "entries/gone.html is in OVER_BUDGET but was not built",
    ]
    assert over_budget(tmp_path, {"light.html": 61_000}) == [
        "entries/heavy.html: 60,000 bytes with its stylesheets, limit 60,000",
        "entries/known.html: 60,000 bytes with its stylesheets, limit 60,000",
        "entries/light.html: 59,999 bytes, within the 60,000 budget now: remove it from "
        "OVER_BUDGET",
    ]
