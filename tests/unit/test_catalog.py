"""`nanopedia/content/catalog.py` (and the gathering in `corpus.py`): linking the corpus into
unique ids,
back links and the tag index, the same whatever order the entries come in."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nanopedia.content.catalog import Node, link
from nanopedia.content.corpus import gather, load_entry
from nanopedia.content.load import parse
from nanopedia.model import Tag

TAGS = {
    slug: Tag(title=slug.upper(), description=f"About {slug}.") for slug in ("bf16", "fsdp", "nccl")
}


def node(
    ident: str,
    *,
    aliases: tuple[str, ...] = (),
    related: tuple[str, ...] = (),
    tags: tuple[str, ...] = ("nccl",),
    text_links: tuple[str, ...] = (),
) -> Node:
    """A node whose every name sits on a line of its own, in field order, at column 5."""
    count = 1 + len(aliases) + len(related) + len(tags)
    positions = tuple(n for line in range(1, count + 1) for n in (line, 5))
    links = tuple((target, 40 + i, 3, "mechanism") for i, target in enumerate(text_links))
    return Node(ident, f"{ident}.yaml", aliases, related, tags, (), links, positions)


def test_back_links_are_sorted_and_the_same_in_any_order() -> None:
    nodes = [
        node("hub"),
        node("c-entry", related=("hub",), text_links=("hub",)),  # both ways: listed once
        node("a-entry", related=("hub", "b-entry")),
        node("b-entry", text_links=("hub", "c-entry")),
        node("d-entry", related=("c-entry",), text_links=("b-entry",)),
    ]
    results = [link(order, TAGS, None)[0] for order in itertools.permutations(nodes)]
    first = results[0]
    assert first.backlinks == {
        "a-entry": (),
        "b-entry": ("a-entry", "d-entry"),
        "c-entry": ("b-entry", "d-entry"),
        "d-entry": (),
        "hub": ("a-entry", "b-entry", "c-entry"),
    }
    assert all(r.backlinks == first.backlinks for r in results)
    assert all(list(r.nodes) == sorted(first.nodes) for r in results)


def test_an_entry_linking_to_itself_in_text_is_no_problem_and_no_back_link() -> None:
    linked, found = link([node("solo", text_links=("solo",))], TAGS, None)
    assert found == [] and linked.backlinks == {"solo": ()}


def test_an_entry_listing_itself_as_related_is_reported_where_it_is_written() -> None:
    linked, found = link([node("solo", related=("solo",))], TAGS, None)
    assert [(str(p.location), p.code, p.message) for p in found] == [
        ("solo.yaml:2:5", "E021", "entry 'solo' lists itself as related")
    ]
    assert linked.backlinks == {"solo": ()}


def test_ids_and_aliases_are_unique_compared_case_insensitively() -> None:
    _, found = link([node("alpha"), node("beta", aliases=("Alpha",))], TAGS, None)
    assert [(str(p.location), p.code, p.message) for p in found] == [
        ("beta.yaml:2:5", "E020", "alias 'Alpha' is already used by entry 'alpha'")
    ]
    assert found[0].hint is not None and found[0].hint.startswith("see alpha.yaml:1:5;")


def test_an_id_taken_by_an_earlier_entrys_alias_is_reported_at_the_id() -> None:
    _, found = link([node("alpha", aliases=("beta",)), node("beta")], TAGS, None)
    assert [(str(p.location), p.code, p.message) for p in found] == [
        ("beta.yaml:1:5", "E020", "id 'beta' is already used by entry 'alpha'")
    ]


def test_ids_and_aliases_are_compared_after_unicode_case_folding() -> None:
    _, found = link([node("strasse"), node("street", aliases=("STRAẞE",))], TAGS, None)
    assert [(p.code, p.message) for p in found] == [
        ("E020", "alias 'STRAẞE' is already used by entry 'strasse'")
    ]


def test_after_a_link_to_an_invalid_entry_the_next_links_are_still_checked() -> None:
    _, found = link([node("user", related=("broken", "nope"))], TAGS, None, frozenset({"broken"}))
    assert [(p.code, p.message) for p in found] == [("E021", "related entry 'nope' does not exist")]


def test_a_link_to_a_former_id_names_the_current_one() -> None:
    linked, found = link(
        [node("new", aliases=("old",)), node("user", related=("old",))], TAGS, None
    )
    assert [(p.code, p.message, p.hint) for p in found] == [
        ("E021", "related entry 'old' is a former id", "link the current id 'new'")
    ]
    assert linked.aliases == {"old": "new"}


def test_links_to_an_invalid_entry_are_not_reported_again() -> None:
    _, found = link(
        [node("user", related=("broken",), text_links=("broken",))],
        TAGS,
        None,
        frozenset({"broken"}),
    )
    assert found == []


def test_the_tag_index_has_every_registered_tag_with_its_entries_in_id_order() -> None:
    linked, found = link(
        [node("zeta", tags=("nccl", "bf16")), node("eta", tags=("nccl",))], TAGS, None
    )
    assert linked.by_tag == {"bf16": ("zeta",), "fsdp": (), "nccl": ("eta", "zeta")}
    assert found == []  # an unused tag is reported only with the registry's file


def test_an_unused_tag_is_reported_at_its_key_in_the_registry() -> None:
    registry = parse(
        "bf16:\n  title: B\n  description: d\nfsdp:\n  title: F\n  description: d\n"
        "nccl:\n  title: N\n  description: d\n",
        "tags.yaml",
    )
    _, found = link([node("eta", tags=("nccl", "bf16"))], TAGS, registry)
    assert [(str(p.location), p.code, p.message, p.hint) for p in found] == [
        (
            "tags.yaml:4:1",
            "E024",
            "tag 'fsdp' is used by no entry",
            "remove it from the registry or tag an entry with it",
        )
    ]


@pytest.mark.parametrize(
    "target, hint",
    [
        ("thetta", "did you mean 'theta'?"),
        ("nothing-like-it", "check the spelling against entries/*.yaml"),
    ],
)
def test_a_related_entry_that_does_not_exist_gets_the_close_id_or_where_to_look(
    target: str, hint: str
) -> None:
    _, found = link([node("eta", related=(target,)), node("theta")], TAGS, None)
    assert [(p.code, p.message, p.hint) for p in found] == [
        ("E021", f"related entry '{target}' does not exist", hint)
    ]


def test_an_unknown_tag_suggests_the_registered_spelling() -> None:
    _, found = link([node("eta", tags=("bfl6",))], TAGS, None)
    assert [(p.code, p.message, p.hint) for p in found] == [
        ("E023", "unknown tag 'bfl6'", "did you mean 'bf16'?")
    ]


def test_two_problems_on_one_line_are_reported_in_column_order(tmp_corpus: Path) -> None:
    """The checks find them in another order (the unknown cause before the unsafe link written
    to its left); `gather` reports them as they read on the line."""
    beta = tmp_corpus / "beta-failure.yaml"
    text = beta.read_text(encoding="utf-8")
    start, end = text.index("symptoms:\n"), text.index("mechanism:")
    line = 'symptoms: [{text: "See [x](javascript:alert(1))", cause: desynk}]\n'
    beta.write_text(text[:start] + line + text[end:], encoding="utf-8")
    number = text.count("\n", 0, start) + 1
    _, in_check_order = load_entry(beta)
    assert [p.code for p in in_check_order] == ["E022", "E016"]
    _, found = gather(tmp_corpus)
    assert [(p.code, p.location.line, p.location.col) for p in found] == [
        ("E016", number, line.index('"See') + 1),
        ("E022", number, line.index("desynk") + 1),
    ]
