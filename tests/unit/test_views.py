"""`nanopedia/site/views.py`: the data each template gets, built from the corpus in one place."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from conftest import FIXTURES

from nanopedia.config import Config
from nanopedia.content.catalog import Catalog
from nanopedia.content.corpus import gather
from nanopedia.content.suggest import Suggestions
from nanopedia.model import Dates
from nanopedia.site.exports import export_record, with_dates
from nanopedia.site.views import (
    RedirectInputs,
    TagInputs,
    card,
    entry_page,
    fix_lines,
    fragments,
    neighbours,
    redirect_page,
    reproduced_with,
    sitemap,
    tag_page,
)

from .conftest import Checker

IDS = re.compile(r'<h(\d) id="([^"]+)"')


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    found, problems = gather(FIXTURES / "corpus")
    assert problems == []
    return found


def test_a_third_duplicate_heading_gets_the_next_number_across_fields(
    alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace(
        "mechanism: |\n  FSDP casts parameters at module boundaries.\n",
        "mechanism: |\n  ## Why\n\n  One.\n\n  ## Why\n\n  Two.\n\n  ## Why\n\n  Three.\n",
    ).replace(
        "      Use `x.dtype`, not `self.dtype`.\n",
        "      ## Why\n\n      Use `x.dtype`, not `self.dtype`.\n",
    )
    source, found = check_text(text)
    assert source is not None and found == []
    html = fragments(source.entry)
    assert IDS.findall(html["mechanism"]) == [("5", "md-why"), ("5", "md-why-2"), ("5", "md-why-3")]
    assert IDS.findall(html["fix[0].detail"]) == [("5", "md-why-4")]  # unique on the page


def test_an_entry_linked_both_ways_is_listed_once_under_related(catalog: Catalog) -> None:
    cards = {s.entry.id: card(s.entry) for s in catalog.sources}
    alpha, beta = catalog.links.nodes["alpha-failure"], catalog.links.nodes["beta-failure"]
    assert catalog.backlinks["beta-failure"] == ("alpha-failure",)
    near = neighbours(beta, catalog.links, cards, ())
    assert near.backlinks == [("alpha-failure", "Alpha failure under FSDP")]
    assert near.related == [] and near.tags == {"nccl": "NCCL"}
    near = neighbours(alpha, catalog.links, cards, ())
    assert near.related == [("beta-failure", "Beta failure in NCCL collectives")]
    assert near.backlinks == []  # beta does not link back


def test_an_entry_page_lists_only_the_sections_it_has(catalog: Catalog) -> None:
    cards = {s.entry.id: card(s.entry) for s in catalog.sources}
    beta = catalog.by_id["beta-failure"].entry
    node = catalog.links.nodes["beta-failure"]
    page = entry_page(beta, neighbours(node, catalog.links, cards, ()), Config(), fragments(beta))
    anchors = [s["anchor"] for s in page.context["sections"]]
    assert "referenced-by" in anchors  # alpha links to it
    assert not {"code-examples", "reproduce", "faq", "related", "also-tagged"} & set(anchors)
    assert page.path == "entries/beta-failure.html" and page.template == "entry.html"
    assert page.context["entry"]["edit_url"] is None  # no repository URL configured


@pytest.mark.parametrize(
    "repo", ["https://git.example/np/entries", "https://git.example/np/entries/"]
)
def test_the_edit_link_points_at_the_entry_file_in_the_repository(
    catalog: Catalog, repo: str
) -> None:
    cards = {s.entry.id: card(s.entry) for s in catalog.sources}
    beta = catalog.by_id["beta-failure"].entry
    node = catalog.links.nodes["beta-failure"]
    page = entry_page(
        beta, neighbours(node, catalog.links, cards, ()), Config(repo_url=repo), fragments(beta)
    )
    assert page.context["entry"]["edit_url"] == "https://git.example/np/entries/beta-failure.yaml"


def test_affected_notes_and_a_silent_repro_reach_the_page(
    catalog: Catalog, alpha_text: str, check_text: Checker
) -> None:
    text = alpha_text.replace(
        '    versions: ">= 1.12"\n',
        '    versions: ">= 1.12"\n    notes: Only with `use_orig_params`.\n',
    ).replace("    shows: [scalar-type]\n", "    shows: [scalar-type]\n    expect: warning\n")
    source, found = check_text(text)
    assert source is not None and found == []
    e = source.entry
    cards = {s.entry.id: card(s.entry) for s in catalog.sources}
    near = neighbours(catalog.links.nodes["alpha-failure"], catalog.links, cards, ())
    page = entry_page(e, near, Config(), fragments(e))
    [system] = page.context["entry"]["systems"]
    assert system["notes"] == "Only with <code>use_orig_params</code>."
    [repro] = page.context["entry"]["repros"]
    assert repro["silent"] is True


@pytest.mark.parametrize(
    ("ranks", "pins", "said"),
    [
        (1, {"torch": "2.13.0"}, "Reproduced with PyTorch 2.13.0 (CPU, 1 rank)"),
        (2, {"torch": "2.13.0"}, "Reproduced with PyTorch 2.13.0 (CPU, 2 ranks, gloo)"),
        (2, {}, "Reproduced with PyTorch (CPU, 2 ranks, gloo)"),
    ],
)
def test_a_repro_says_what_it_was_reproduced_with(
    ranks: int, pins: dict[str, str], said: str
) -> None:
    assert reproduced_with(ranks, pins) == said


def test_suggestions_never_repeat_what_the_page_already_links(catalog: Catalog) -> None:
    suggestions = Suggestions(catalog.links)
    for ident, node in catalog.links.nodes.items():
        shown = {ident, *node.related, *catalog.backlinks[ident]}
        assert not shown & set(suggestions.also(node))


def test_a_tag_page_lists_its_entries_in_id_order_with_their_summaries(catalog: Catalog) -> None:
    cards = {s.entry.id: card(s.entry) for s in catalog.sources}
    tag = catalog.links.tags["fsdp"]
    members = tuple(cards[i] for i in catalog.by_tag["fsdp"])
    page = tag_page(TagInputs("fsdp", tag.title, tag.description, members), Config())
    listed = page.context["tag"]["entries"]
    assert [e["id"] for e in listed] == list(catalog.by_tag["fsdp"])
    assert all(e["href"] == f"../entries/{e['id']}.html" for e in listed)
    assert page.path == "tags/fsdp.html" and page.context["page"]["root"] == "../"


def test_a_redirect_page_sits_at_the_former_id_and_names_the_current_one(catalog: Catalog) -> None:
    alpha = card(catalog.by_id["alpha-failure"].entry)
    page = redirect_page(RedirectInputs("alpha-old", alpha.id, alpha.title), Config())
    assert page.path == "entries/alpha-old.html" and page.template == "redirect.html"
    assert page.context["target"] == {"href": "alpha-failure.html", "title": alpha.title}


def test_a_sitemap_lists_absolute_urls_sorted() -> None:
    page = sitemap(("b.html", "a.html"), Config(base_url="https://x.example/"))
    assert page.context["urls"] == ["https://x.example/a.html", "https://x.example/b.html"]


def test_an_export_record_is_deterministic_json_with_its_dates(catalog: Catalog) -> None:
    entry = catalog.by_id["alpha-failure"].entry
    record = export_record(entry)
    assert record == export_record(entry)
    assert record == json.dumps(
        json.loads(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    dated = json.loads(with_dates(record.encode(), Dates(when, when)))
    assert dated["dates"] == {
        "first_published": "2026-01-02T03:04:05Z",
        "last_updated": "2026-01-02T03:04:05Z",
    }
    assert json.loads(with_dates(record.encode(), None))["dates"] is None


def test_fix_lines_show_the_change_with_one_line_of_context() -> None:
    broken = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n"
    fixed = "a = 0\nb = 2\nc = 3\nd = 4\ne = 5\nf = 7\n"
    assert fix_lines(broken, fixed) == [
        ("del", "a = 1"),
        ("ins", "a = 0"),
        ("ctx", "b = 2"),
        ("gap", "…"),
        ("ctx", "e = 5"),
        ("del", "f = 6"),
        ("ins", "f = 7"),
    ]
    assert fix_lines(broken, broken) == []
