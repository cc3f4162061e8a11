"""The page budget, measured on the repository's own entries as `nanopedia build` makes them:

- the HTML of every entry page at most 60,000 bytes before compression, repro scripts included;
- the CSS and JavaScript an entry page loads before the reader does anything (its stylesheets and
  its scripts) at most 15,000 bytes together. The search code is not among them: search-boot.js
  loads it when a search box is first used.

A page over budget needs a lighter theme or a tighter entry (split it, shorten what repeats), not
a bigger number here. The test prints the largest page, so a run shows the headroom.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

BUDGET = 60_000
ASSET_BUDGET = 15_000


def assets(html: str) -> list[str]:
    """The href of every `<link rel="stylesheet">` and the src of every `<script>`, in order."""
    found: list[str] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            values = dict(attrs)
            if tag == "link" and "stylesheet" in (values.get("rel") or "").lower().split():
                found.append(values.get("href") or "")
            elif tag == "script" and values.get("src"):
                found.append(values.get("src") or "")

    Collect().feed(html)
    return found


def asset_weight(page: Path) -> int:
    """Bytes of CSS and JS the page loads before any interaction, uncompressed."""
    html = page.read_text(encoding="utf-8")
    return sum((page.parent / href).stat().st_size for href in assets(html))


def over_budget(site: Path) -> list[str]:
    """One line per entry page whose HTML is over BUDGET or whose CSS and JS are over
    ASSET_BUDGET. No page is exempt: one over budget is split or tightened, not listed here."""
    problems = []
    for page in sorted((site / "entries").glob("*.html")):
        size = page.stat().st_size
        if size > BUDGET:
            problems.append(f"entries/{page.name}: {size:,} bytes of HTML, limit {BUDGET:,}")
        loaded = asset_weight(page)
        if loaded > ASSET_BUDGET:
            problems.append(
                f"entries/{page.name}: loads {loaded:,} bytes of CSS and JS, limit {ASSET_BUDGET:,}"
            )
    return problems


def test_entry_pages_fit_the_budget(repo_site: Path) -> None:
    pages = sorted((repo_site / "entries").glob("*.html"))
    assert pages, "the build made no entry page"
    largest = max(pages, key=lambda p: p.stat().st_size)
    heaviest = max(pages, key=asset_weight)
    print(
        f"largest entry page: {largest.name}, {largest.stat().st_size:,} bytes of HTML; "
        f"CSS and JS before interaction: {asset_weight(heaviest):,} bytes ({heaviest.name})"
    )
    problems = over_budget(repo_site)
    assert not problems, "entry pages over budget:\n" + "\n".join(problems)


def test_the_search_code_is_not_loaded_by_an_entry_page(repo_site: Path) -> None:
    page = next(
        p
        for p in sorted((repo_site / "entries").glob("*.html"))
        if "static/entry.js" in p.read_text(encoding="utf-8")
    )
    loaded = [Path(href).name for href in assets(page.read_text(encoding="utf-8"))]
    assert "search-boot.js" in loaded
    assert "search.js" not in loaded and "search.css" not in loaded


def test_the_budget_counts_html_and_every_stylesheet_and_script(tmp_path: Path) -> None:
    (tmp_path / "static").mkdir()
    (tmp_path / "entries").mkdir()
    (tmp_path / "static" / "a.css").write_bytes(b"x" * 10_000)
    (tmp_path / "static" / "b.js").write_bytes(b"x" * 5_000)
    (tmp_path / "static" / "unlinked.css").write_bytes(b"x" * 50_000)
    head = (
        '<link rel="stylesheet" href="../static/a.css"><script src="../static/b.js"></script>'
        '<link rel="alternate" href="../static/unlinked.css">'
    )
    light, heavy = (head + "x" * (n - len(head)) for n in (60_000, 60_001))
    (tmp_path / "entries" / "light.html").write_text(light)
    (tmp_path / "entries" / "heavy.html").write_text(heavy)
    assert asset_weight(tmp_path / "entries" / "light.html") == 15_000
    assert over_budget(tmp_path) == ["entries/heavy.html: 60,001 bytes of HTML, limit 60,000"]
    (tmp_path / "static" / "b.js").write_bytes(b"x" * 5_001)
    assert over_budget(tmp_path) == [
        "entries/heavy.html: 60,001 bytes of HTML, limit 60,000",
        "entries/heavy.html: loads 15,001 bytes of CSS and JS, limit 15,000",
        "entries/light.html: loads 15,001 bytes of CSS and JS, limit 15,000",
    ]
