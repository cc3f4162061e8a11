"""`nanopedia/site/plan.py`: a page's key is computed from exactly what its view is called with.

Each case changes one input of the fixture corpus (an entry's title, summary, category, tags or
alias; a tag's title or description; an entry's dates) and plans the whole site before and after.
Two properties must hold for every page: where the rendered bytes differ, the fingerprint differs
(a key never misses an input, so a rebuild never keeps a stale page); and each page kind is shown
to change by at least one case (so the first property is exercised for all of them)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.config import Config
from nanopedia.content.corpus import gather
from nanopedia.content.suggest import Suggestions
from nanopedia.model import Dates
from nanopedia.site import plan, views
from nanopedia.site.render import render

Rendered = dict[str, tuple[bytes, bytes]]
"""Page path to (fingerprint, rendered bytes)."""

DAY = datetime(2026, 1, 5, tzinfo=UTC)
DATES = {"alpha-failure": Dates(DAY, DAY), "beta-failure": Dates(DAY, DAY.replace(day=9))}
CONFIG = Config(base_url="https://nanopedia.example/")


def site(root: Path, dates: dict[str, Dates | None], config: Config = CONFIG) -> Rendered:
    """Plan every page of the corpus in `root`, as the build does, and render each."""
    catalog, problems = gather(root)
    assert problems == []
    links = catalog.links
    cards = {s.entry.id: views.card(s.entry) for s in catalog.sources}
    also = Suggestions(links)
    out: Rendered = {}
    for source in catalog.sources:
        entry, node = source.entry, links.nodes[source.entry.id]
        text = hashlib.sha256(Path(node.path).read_bytes()).hexdigest()  # as the build's file key
        path, inputs = plan.entry(node, links, cards, also.also(node), text, dates.get(entry.id))
        page = views.entry_page(entry, inputs.near, config, views.fragments(entry), inputs.dates)
        out[path] = (plan.fingerprint((path, inputs)), render(page))
    for one in plan.pages(links, cards, dates, config):
        out[one.path] = (one.fingerprint(), render(one.page(config)))
    return out


def kind(path: str) -> str:
    """The page kind a path belongs to, as the plan lays them out."""
    if path.startswith("entries/"):
        return "redirect" if path.endswith("-old.html") else "entry"
    if path.endswith(".xml") and path != "sitemap.xml":
        return "feed"
    if path.startswith("tags/") and path != "tags/index.html":
        return "tag"
    return path


def edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, 1))

    return apply


def add(root: Path) -> None:
    text = (root / "beta-failure.yaml").read_text()
    (root / "gamma-failure.yaml").write_text(text.replace("id: beta-failure", "id: gamma-failure"))


CASES: dict[str, Callable[[Path], None]] = {
    "entry added": add,
    "entry title": edit(
        "alpha-failure.yaml", "title: Alpha failure under FSDP", "title: Alpha failure, renamed"
    ),
    "entry summary": edit(
        "alpha-failure.yaml", "The alpha failure happens", "The alpha fault happens"
    ),
    "entry category": edit("alpha-failure.yaml", "category: mixed-precision", "category: numerics"),
    "entry tags": edit("alpha-failure.yaml", "tags: [fsdp, bf16]", "tags: [fsdp, bf16, nccl]"),
    "alias": edit("alpha-failure.yaml", "aliases: [alpha-old]", "aliases: [alpha-older]"),
    "tag title": edit("tags.yaml", "title: FSDP", "title: Fully sharded"),
    "tag description": edit("tags.yaml", "Fully sharded data parallel.", "Sharded parameters."),
}


@pytest.fixture(scope="module")
def before() -> Rendered:
    return site(FIXTURES / "corpus", DATES)


def changed(before: Rendered, after: Rendered) -> tuple[set[str], set[str]]:
    """(paths whose fingerprint changed, paths whose bytes changed), new and gone pages included."""
    paths = before.keys() | after.keys()
    keys = {p for p in paths if before.get(p, (b"",))[0] != after.get(p, (b"",))[0]}
    pages = {p for p in paths if before.get(p, (b"", b""))[1] != after.get(p, (b"", b""))[1]}
    return keys, pages


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_page_whose_bytes_change_gets_a_new_key(
    case: str, before: Rendered, tmp_path: Path
) -> None:
    shutil.copytree(FIXTURES / "corpus", tmp_path / "corpus")
    CASES[case](tmp_path / "corpus")
    keys, pages = changed(before, site(tmp_path / "corpus", DATES))
    assert pages, f"{case}: changed nothing"
    assert pages <= keys, f"{case}: stale keys for {sorted(pages - keys)}"


def test_new_dates_give_new_keys_to_the_pages_that_show_them(before: Rendered) -> None:
    later = {**DATES, "beta-failure": Dates(DAY, DAY.replace(day=20))}
    keys, pages = changed(before, site(FIXTURES / "corpus", later))
    assert {"entries/beta-failure.html", "feed.xml"} <= pages <= keys
    assert "entries/alpha-failure.html" not in keys  # alpha's dates are its own


def test_every_page_kind_is_changed_by_some_case(before: Rendered, tmp_path: Path) -> None:
    kinds = {kind(p) for p in before}
    seen: set[str] = set()
    for n, apply in enumerate(CASES.values()):
        root = tmp_path / str(n)
        shutil.copytree(FIXTURES / "corpus", root)
        apply(root)
        seen |= {kind(p) for p in changed(before, site(root, DATES))[1]}
    later = {**DATES, "beta-failure": Dates(DAY, DAY.replace(day=20))}
    seen |= {kind(p) for p in changed(before, site(FIXTURES / "corpus", later))[1]}
    settings_only = {p for p in views.FIXED}  # they show the settings alone: no inputs to change
    assert kinds - settings_only <= seen, sorted(kinds - settings_only - seen)
    assert {
        "entry",
        "redirect",
        "tag",
        "tags/index.html",
        "index.html",
        "feed",
        "sitemap.xml",
    } <= kinds


def test_equal_inputs_from_different_corpora_give_equal_pages(
    before: Rendered, tmp_path: Path
) -> None:
    """A change to beta alone leaves the alpha-only tag pages with their keys and bytes."""
    shutil.copytree(FIXTURES / "corpus", tmp_path / "corpus")
    edit(
        "beta-failure.yaml",
        "title: Beta failure in NCCL collectives",
        "title: Beta failure, renamed",
    )(tmp_path / "corpus")
    after = site(tmp_path / "corpus", DATES)
    for path in ("tags/fsdp.html", "tags/bf16.html", "tags/fsdp.xml"):
        if path in before:
            assert after[path] == before[path], path
    keys, pages = changed(before, after)
    assert pages <= keys and "tags/nccl.html" in keys


def test_the_sitemap_is_planned_only_with_a_base_url() -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    cards = {s.entry.id: views.card(s.entry) for s in catalog.sources}
    planned = [p.path for p in plan.pages(catalog.links, cards, {}, Config())]
    assert "sitemap.xml" not in planned and "index.html" in planned
    assert not any(p.endswith(".xml") for p in planned)  # and no feeds: nothing is dated
    with_url = [p.path for p in plan.pages(catalog.links, cards, {}, CONFIG)]
    assert with_url == [*planned, "sitemap.xml"]


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", Path("a")])
def test_a_fingerprint_refuses_a_type_it_cannot_see_into(value: object) -> None:
    with pytest.raises(TypeError, match="cannot hold"):
        plan.fingerprint(("page.html", (value,)))


def test_a_fingerprint_tells_apart_values_whose_text_is_alike() -> None:
    values = [
        ("a", "b"),
        ("a b",),
        (("a",), "b"),
        ("a", ("b",)),
        [1],
        [1.0],
        ["1"],
        [True],
        [None],
        ["None"],
        {"a": 1},
        [("a", 1)],
        [DAY],
        [DAY.replace(second=1)],
    ]
    assert len({plan.fingerprint(v) for v in values}) == len(values)
