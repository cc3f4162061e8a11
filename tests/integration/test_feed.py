"""Git dates on pages and in `entries.json`, and the Atom feeds, on small real builds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.config import Config, read
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.model import Dates
from nanopedia.site.feed import atom_id

ATOM = "{http://www.w3.org/2005/Atom}"
CONFIG = FIXTURES / "build-config" / "nanopedia.toml"


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


DATES = {
    "alpha-failure": Dates(day("2024-01-01T00:00:00"), day("2024-03-01T12:00:00")),
    "beta-failure": Dates(day("2024-02-01T00:00:00"), day("2024-02-01T00:00:00")),
}


def entries_of(feed: Path) -> list[tuple[str, str, str, str]]:
    root = ET.parse(feed).getroot()
    return [
        (
            e.findtext(f"{ATOM}id"),
            e.findtext(f"{ATOM}title"),
            e.findtext(f"{ATOM}updated"),
            e.find(f"{ATOM}link").get("href"),
        )
        for e in root.iter(f"{ATOM}entry")
    ]


def test_feeds_list_new_and_updated_entries_newest_first(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(Request(FIXTURES / "corpus", out, CONFIG, use_cache=False, jobs=1, dates=DATES))
    root = ET.parse(out / "feed.xml").getroot()
    assert root.findtext(f"{ATOM}updated") == "2024-03-01T12:00:00Z"
    base = "https://nanopedia.example/"
    assert root.find(f"{ATOM}link[@rel='self']").get("href") == f"{base}feed.xml"
    config = read(CONFIG)
    alpha, beta = atom_id(config, "entry:alpha-failure"), atom_id(config, "entry:beta-failure")
    assert entries_of(out / "feed.xml") == [
        (
            alpha,
            "Updated: Alpha failure under FSDP",
            "2024-03-01T12:00:00Z",
            f"{base}entries/alpha-failure.html",
        ),
        (
            beta,
            "New entry: Beta failure in NCCL collectives",
            "2024-02-01T00:00:00Z",
            f"{base}entries/beta-failure.html",
        ),
    ]
    assert [e[0] for e in entries_of(out / "tags" / "bf16.xml")] == [alpha]
    summary = ET.parse(out / "feed.xml").getroot().find(f"{ATOM}entry/{ATOM}summary")
    assert summary.get("type") == "html"
    assert f'<a href="{base}entries/beta-failure.html">beta</a>' in summary.text

    record = json.loads((out / "entries.json").read_text())["entries"][0]
    assert record["dates"] == {
        "first_published": "2024-01-01T00:00:00Z",
        "last_updated": "2024-03-01T12:00:00Z",
    }
    page = (out / "entries" / "alpha-failure.html").read_text()
    assert (
        'First published <time datetime="2024-01-01T00:00:00Z">2024-01-01</time>, last '
        'updated <time datetime="2024-03-01T12:00:00Z">2024-03-01</time>'
    ) in page
    assert 'type="application/atom+xml"' in page


def test_outside_git_there_are_no_dates(
    tmp_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    out = tmp_path / "site"
    build(Request(tmp_corpus, out, None, use_cache=False, jobs=1))
    # Every feed would be empty and dated by an invented date: there are none, and no page
    # links one.
    assert not (out / "feed.xml").exists() and not (out / "tags" / "fsdp.xml").exists()
    assert json.loads((out / "entries.json").read_text())["entries"][0]["dates"] is None
    alpha = (out / "entries" / "alpha-failure.html").read_text()
    assert 'class="dates"' not in alpha and "application/atom+xml" not in alpha
    assert "feed.xml" not in (out / "index.html").read_text()

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(Request(tmp_corpus, out, None, use_cache=False, jobs=1))
    assert [e[2] for e in entries_of(out / "feed.xml")] == ["2023-11-14T22:13:20Z"] * 2
    assert "application/atom+xml" in (out / "entries" / "alpha-failure.html").read_text()
    assert [e[3] for e in entries_of(out / "tags" / "fsdp.xml")] == [
        "../entries/alpha-failure.html"
    ]


def test_plan_orders_by_update_then_id_and_keeps_the_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nanopedia.content.catalog import Links
    from nanopedia.model import Tag
    from nanopedia.site import feed

    monkeypatch.setattr(feed, "LIMIT", 3)

    def day(n: int) -> Dates:
        when = datetime(2025, 1, n, tzinfo=UTC)
        return Dates(when, when)

    ids = ["a", "b", "c", "d", "e"]
    dates = {"a": day(2), "b": day(5), "c": day(2), "d": None, "e": day(9)}
    tag = Tag(title="T", description="A tag.")
    links = Links(dict.fromkeys(ids), {"t": tag}, {}, {}, {"t": ("a", "c", "d")})  # type: ignore[arg-type]
    site, tagged = feed.plan(links, Config(), dates)
    assert [i for i, _ in site.recent] == ["e", "b", "a"]  # a and c tie: by id; d undated
    assert [i for i, _ in tagged.recent] == ["a", "c"]
    assert tagged.path == "tags/t.xml" and site.recent[0][1] == day(9)


def feed_id(path: Path) -> str:
    return ET.parse(path).getroot().findtext(f"{ATOM}id")


def test_a_feed_is_dated_by_its_entries_never_by_the_clock(tmp_path: Path) -> None:
    """A tag feed whose entries are all undated takes the newest date of the site, not the
    epoch; builds a day apart give the same bytes."""
    out = tmp_path / "site"
    dates = {"alpha-failure": DATES["alpha-failure"]}  # beta, the only #NCCL entry: undated
    build(Request(FIXTURES / "corpus", out, CONFIG, use_cache=False, jobs=1, dates=dates))
    nccl = ET.parse(out / "tags" / "nccl.xml").getroot()
    assert entries_of(out / "tags" / "nccl.xml") == []
    assert nccl.findtext(f"{ATOM}updated") == "2024-03-01T12:00:00Z"
    assert (
        ET.parse(out / "tags" / "fsdp.xml").getroot().findtext(f"{ATOM}updated")
        == "2024-03-01T12:00:00Z"
    )
    first = (out / "feed.xml").read_bytes()
    build(Request(FIXTURES / "corpus", out, CONFIG, use_cache=False, jobs=1, dates=dates))
    assert (out / "feed.xml").read_bytes() == first


def test_feed_ids_are_unique_to_the_site_and_stable(tmp_path: Path) -> None:
    """Two sites never share a feed or entry id (a reader would merge them); one site keeps its
    ids from build to build."""
    sites = {
        "published": 'base_url = "https://nanopedia.example/"\n',
        "mirror": 'base_url = "https://mirror.example/wiki/"\n',
        "local": 'title = "Team failures"\n',
        "default": "",
    }
    ids: dict[str, tuple[str, str, str]] = {}
    for name, settings in sites.items():
        config = tmp_path / f"{name}.toml"
        config.write_text(f"[site]\n{settings}", encoding="utf-8")
        out = tmp_path / name
        build(Request(FIXTURES / "corpus", out, config, use_cache=False, jobs=1, dates=DATES))
        ids[name] = (
            feed_id(out / "feed.xml"),
            feed_id(out / "tags" / "nccl.xml"),
            entries_of(out / "feed.xml")[0][0],
        )
        assert all(i.startswith("urn:uuid:") for i in ids[name]), ids[name]
        assert len(set(ids[name])) == 3
    every = [i for triple in ids.values() for i in triple]
    assert len(set(every)) == len(every), ids
    assert "urn:nanopedia:feed" not in every
    again = tmp_path / "again"
    build(
        Request(
            FIXTURES / "corpus",
            again,
            tmp_path / "local.toml",
            use_cache=False,
            jobs=1,
            dates=DATES,
        )
    )
    assert feed_id(again / "feed.xml") == ids["local"][0]
    assert atom_id(Config(title="Team failures"), "feed:feed.xml") == ids["local"][0]
