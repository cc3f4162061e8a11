"""Git dates on pages and in `entries.json`, and the Atom feeds, on small real builds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES

from generator.build import build
from generator.gitdates import Dates

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
    return [(e.findtext(f"{ATOM}id"), e.findtext(f"{ATOM}title"), e.findtext(f"{ATOM}updated"),
             e.find(f"{ATOM}link").get("href")) for e in root.iter(f"{ATOM}entry")]


def test_feeds_list_new_and_updated_entries_newest_first(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(FIXTURES / "corpus", out, CONFIG, use_cache=False, jobs=1, dates=DATES)
    root = ET.parse(out / "feed.xml").getroot()
    assert root.findtext(f"{ATOM}updated") == "2024-03-01T12:00:00Z"
    base = "https://nanopedia.example/"
    assert root.find(f"{ATOM}link[@rel='self']").get("href") == f"{base}feed.xml"
    assert entries_of(out / "feed.xml") == [
        ("urn:nanopedia:entry:alpha-failure", "Updated: Alpha failure under FSDP",
         "2024-03-01T12:00:00Z", f"{base}entries/alpha-failure.html"),
        ("urn:nanopedia:entry:beta-failure", "New entry: Beta failure in NCCL collectives",
         "2024-02-01T00:00:00Z", f"{base}entries/beta-failure.html"),
    ]
    assert [e[0] for e in entries_of(out / "tags" / "bf16.xml")] == [
        "urn:nanopedia:entry:alpha-failure"
    ]
    summary = ET.parse(out / "feed.xml").getroot().find(f"{ATOM}entry/{ATOM}summary")
    assert summary.get("type") == "html"
    assert f'<a href="{base}entries/beta-failure.html">beta</a>' in summary.text

    record = json.loads((out / "entries.json").read_text())["entries"][0]
    assert record["dates"] == {"first_published": "2024-01-01T00:00:00Z",
                               "last_updated": "2024-03-01T12:00:00Z"}
    page = (out / "entries" / "alpha-failure.html").read_text()
    assert ('First published <time datetime="2024-01-01T00:00:00Z">2024-01-01</time>, last '
            'updated <time datetime="2024-03-01T12:00:00Z">2024-03-01</time>') in page
    assert 'type="application/atom+xml"' in page


def test_outside_git_there_are_no_dates(tmp_corpus: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    out = tmp_path / "site"
    build(tmp_corpus, out, None, use_cache=False, jobs=1)
    assert entries_of(out / "feed.xml") == []
    assert ET.parse(out / "feed.xml").getroot().findtext(f"{ATOM}updated") == \
        "1970-01-01T00:00:00Z"
    assert json.loads((out / "entries.json").read_text())["entries"][0]["dates"] is None
    assert 'class="dates"' not in (out / "entries" / "alpha-failure.html").read_text()

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(tmp_corpus, out, None, use_cache=False, jobs=1)
    assert [e[2] for e in entries_of(out / "feed.xml")] == ["2023-11-14T22:13:20Z"] * 2
    assert [e[3] for e in entries_of(out / "tags" / "fsdp.xml")] == [
        "../entries/alpha-failure.html"
    ]


def test_plan_orders_by_update_then_id_and_keeps_the_newest(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from generator import feed
    from generator.catalog import Links
    from generator.config import Config
    from generator.model import Tag

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
