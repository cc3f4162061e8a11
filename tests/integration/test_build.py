"""`nanopedia build` on small real sites: golden output, hostile text, errors, determinism and
atomic replacement.

The golden site is regenerated with `pytest --update-golden`, never by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.errors import NanopediaError
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.model import Dates
from nanopedia.site import exports, views

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=\")")
"""A script element without a `src`: no page may have one (the CSP would block it anyway)."""
GOLDEN = ROOT / "tests" / "golden" / "built-site"
THEME = ROOT / "theme"
SITE_CONFIG = FIXTURES / "build-config" / "nanopedia.toml"
DATES = {
    "alpha-failure": Dates(datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)),
    "beta-failure": Dates(datetime(2024, 2, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC)),
}
"""Fixed git dates: the fixtures' real history would change the golden site with every commit."""


def tree(root: Path) -> dict[str, bytes]:
    """Every file below `root` by relative path, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def start_tags(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every element a browser would create, with its attributes (as the parser sees them)."""
    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Collect().feed(html)
    return found


def site(
    entries: Path,
    out: Path,
    jobs: int = 1,
    dates: dict[str, Dates] | None = None,
    parallel_min: int = 200,
) -> dict[str, bytes]:
    """A cold build with the golden settings, as files."""
    build(
        Request(
            entries,
            out,
            SITE_CONFIG,
            use_cache=False,
            jobs=jobs,
            dates=dates,
            parallel_min=parallel_min,
        )
    )
    return tree(out)


def test_golden_site(tmp_path: Path, update_golden: bool) -> None:
    got = site(FIXTURES / "corpus", tmp_path / "site", dates=DATES)
    got = {p: b for p, b in got.items() if not p.startswith("static/vendor/")}
    # Assets copied from theme/static must arrive unchanged; only generated files are golden.
    copied = {p for p in got if p.startswith("static/") and (THEME / p).is_file()}
    for path in sorted(copied):
        assert got.pop(path) == (THEME / path).read_bytes(), f"{path} is not a copy of the theme's"
    assert copied, "the site has no theme assets"
    if update_golden:
        for old in GOLDEN.rglob("*"):
            if old.is_file():
                old.unlink()
        for path, data in got.items():
            (GOLDEN / path).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / path).write_bytes(data)
        pytest.skip("golden site rewritten")
    want = tree(GOLDEN)
    assert sorted(got) == sorted(want)
    for path in want:
        assert got[path].decode() == want[path].decode(), f"{path} differs from {GOLDEN}"


def test_pages_and_links(tmp_path: Path) -> None:
    files = site(FIXTURES / "corpus", tmp_path / "site")
    for tag in ("fsdp", "bf16", "nccl", "index"):
        assert f"tags/{tag}.html" in files
    alpha = files["entries/alpha-failure.html"].decode()
    assert alpha.count("<h1") == 1
    assert 'href="#cause-cast"' in alpha and 'id="cause-cast"' in alpha
    assert '<a href="beta-failure.html">beta</a>' in alpha  # in-text entry link
    references = alpha.split('<ol class="references">')[1].split("</ol>")[0]
    outside = re.findall(r'<a href="https?://[^"]*"([^>]*)>', references)
    assert outside and all(rel == ' rel="noopener noreferrer"' for rel in outside)
    beta = files["entries/beta-failure.html"].decode()
    assert 'id="referenced-by"' in beta and "../entries/alpha-failure.html" in beta
    redirect = files["entries/alpha-old.html"].decode()
    assert 'http-equiv="refresh" content="0; url=alpha-failure.html"' in redirect
    assert INLINE_SCRIPT.search(redirect) is None
    assert "https://nanopedia.example/entries/alpha-failure.html" in files["sitemap.xml"].decode()
    for path, data in files.items():
        if path.endswith(".html"):
            hrefs = re.findall(r'(?:href|src)="([^"]+)"', data.decode())
            for href in hrefs:
                if href.startswith(("https://", "#")):
                    continue
                target = href.split("#")[0]
                assert target.endswith((".html", ".css", ".js", ".xml")), (path, href)
                where = (tmp_path / "site" / path).parent / target
                assert where.resolve().is_file(), (path, href)


def test_export_is_versioned_and_complete(tmp_path: Path) -> None:
    import json

    data = json.loads(site(FIXTURES / "corpus", tmp_path / "site")["entries.json"])
    assert data["version"] == exports.EXPORT_VERSION
    assert [e["id"] for e in data["entries"]] == ["alpha-failure", "beta-failure"]
    assert data["entries"][0]["root_causes"][0]["id"] == "cast"


HOSTILE = """\
id: hostile-entry
title: "Evil </script><script>alert(1)</script> {{ 7*7 }}"
summary: |
  A summary with <script>alert('x')</script> and <img src=x onerror=alert(1)> and {{ 7*7 }} and
  {% raw %}{{ config }}{% endraw %}.
category: data
tags: [nccl]
root_causes:
  - id: raw
    title: "<b onmouseover=alert(1)>bold</b>"
    domain: workload
    action: fix-code
    explanation: |
      | cell | other |
      | --- | --- |
      | <script>alert(2)</script> | <iframe src="https://evil.example"></iframe> |

      ![pixel](https://tracker.example/pixel.png)
symptoms:
  - text: "<svg onload=alert(1)> `{{ 7*7 }}`"
    cause: raw
mechanism: |
  # A heading named quick-answer

  ## Symptoms

  <div markdown>

  `<script` and <script

  -     <div markdown><script>alert(3)</script>
affected_systems:
  - name: "<script>x</script>"
confirm:
  - "<a href='javascript:alert(1)'>click</a>"
fix:
  - title: "{{ 7*7 }} `x.to(torch.bfloat16)` <b>not bold</b> [no link](javascript:alert(1))"
    detail: "[ok](https://example.org) <details open ontoggle=alert(1)>"
prevention:
  - "&lt;script&gt; stays text"
references:
  - title: "</script>"
    url: https://example.org/a
    kind: docs
"""


def test_hostile_content_is_text(tmp_corpus: Path, tmp_path: Path) -> None:
    (tmp_corpus / "hostile-entry.yaml").write_text(HOSTILE)
    files = site(tmp_corpus, tmp_path / "site")
    page = files["entries/hostile-entry.html"].decode()
    elements = start_tags(page)
    assert {tag for tag, _ in elements}.isdisjoint({"iframe", "svg", "img", "b", "details"})
    # The only scripts are the site's own files (the search box's loader, the entry page's).
    assert [a for t, a in elements if t == "script"] == [
        [("src", "../static/search-boot.js"), ("defer", None)],
        [("src", "../static/entry.js"), ("defer", None)],
    ]
    for tag, attrs in elements:
        assert not [name for name, _ in attrs if name.startswith("on")], (tag, attrs)
        assert not any(v and "javascript:" in v.lower() for n, v in attrs if n == "href")
    assert "{{ 7*7 }}" in page and ">49<" not in page
    # A title's code spans are code (in the quick answer's link and the heading); the rest is text.
    assert (
        page.count(
            "<code>x.to(torch.bfloat16)</code> &lt;b&gt;not bold&lt;/b&gt; "
            "[no link](javascript:alert(1))"
        )
        == 2
    )
    assert "&lt;/script&gt;&lt;script&gt;" in page
    assert 'href="https://tracker.example/pixel.png"' in page  # an image becomes a link
    assert 'id="md-a-heading-named-quick-answer"' in page and 'id="md-symptoms"' in page
    assert page.count('id="quick-answer"') == 1 and page.count('id="symptoms"') == 1
    assert "<div markdown" not in page and "<pre><code>&lt;div markdown&gt;&lt;script&gt;" in page
    for path, data in files.items():
        if path.endswith(".html"):
            assert INLINE_SCRIPT.search(data.decode()) is None, path


def test_cross_link_errors_exact_text(tmp_corpus: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    out = tmp_path / "site"
    assert cli("build", "--entries", str(tmp_corpus), "--out", str(out), "--no-cache").code == 0
    before = tree(out)
    alpha = tmp_corpus / "alpha-failure.yaml"
    text = alpha.read_text()
    alpha.write_text(
        text.replace("(entry:beta-failure)", "(entry:beta-falure)").replace(
            "related: [beta-failure]", "related: [alpha-old, gamma]"
        )
    )
    run = cli("build", "--entries", str(tmp_corpus), "--out", str(out), "--no-cache")
    path = f"{tmp_corpus}/alpha-failure.yaml"
    assert run.code == 1
    assert run.out.splitlines() == [
        f"{path}:5:1: error[E025]: link in 'summary' to entry 'beta-falure' does not exist",
        "    hint: did you mean 'beta-failure'?",
        f"{path}:50:11: error[E021]: related entry 'alpha-old' is a former id",
        "    hint: link the current id 'alpha-failure'",
        f"{path}:50:22: error[E021]: related entry 'gamma' does not exist",
        "    hint: check the spelling against entries/*.yaml",
    ]
    assert run.err == f"3 problem(s) found; {out}/ was not changed\n"
    assert tree(out) == before


def test_failure_leaves_previous_site_identical(
    tmp_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    before = site(tmp_corpus, out)

    for failure in (OSError(28, "No space left on device"), KeyboardInterrupt()):

        def fail(*args: object, failure: BaseException = failure) -> None:
            raise failure

        with monkeypatch.context() as patch:  # fails after some pages were written
            patch.setitem(views.FIXED, "404.html", fail)
            with pytest.raises(type(failure)):
                build(Request(tmp_corpus, out, SITE_CONFIG, use_cache=False, jobs=1))
        assert tree(out) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["entries", "site"]


def test_refuses_to_replace_a_folder_that_is_not_a_site(tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(NanopediaError, match="not a Nanopedia site"):
        build(Request(FIXTURES / "corpus", out, SITE_CONFIG, use_cache=False, jobs=1))
    assert (out / "notes.txt").read_text() == "keep me"


def test_cached_and_parallel_builds_match_a_cold_build(
    tmp_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cold = site(tmp_corpus, tmp_path / "cold")
    first = build(Request(tmp_corpus, tmp_path / "warm", SITE_CONFIG, cache_root=cache, jobs=1))
    assert first.reused == 0 and tree(tmp_path / "warm") == cold
    again = build(Request(tmp_corpus, tmp_path / "warm", SITE_CONFIG, cache_root=cache, jobs=1))
    assert again.up_to_date
    (tmp_path / "warm" / "index.html").write_text("edited by hand")
    repaired = build(Request(tmp_corpus, tmp_path / "warm", SITE_CONFIG, cache_root=cache, jobs=1))
    assert repaired.reused == repaired.entries and tree(tmp_path / "warm") == cold
    beta = tmp_corpus / "beta-failure.yaml"
    beta.write_text(beta.read_text().replace("Beta failure in NCCL", "Beta failure of NCCL"))
    edited = build(Request(tmp_corpus, tmp_path / "warm", SITE_CONFIG, cache_root=cache, jobs=1))
    assert edited.reused == edited.entries - 1  # all but the edited one
    assert tree(tmp_path / "warm") == site(tmp_corpus, tmp_path / "cold2")
    # worker processes even for 2 entries
    assert site(tmp_corpus, tmp_path / "parallel", jobs=2, parallel_min=0) == tree(
        tmp_path / "warm"
    )


def test_an_edit_rerenders_only_pages_whose_inputs_changed(
    tmp_corpus: Path, tmp_path: Path
) -> None:
    """Unchanged entry pages come from the previous site (the same file); a hand-edited one is
    rendered again; the result is a cold build's, byte for byte."""
    cache, warm = tmp_path / "cache", tmp_path / "warm"
    build(Request(tmp_corpus, warm, SITE_CONFIG, cache_root=cache, jobs=1, dates=DATES))
    alpha, beta = warm / "entries" / "alpha-failure.html", warm / "entries" / "beta-failure.html"
    before = alpha.stat().st_ino
    beta.write_text("edited by hand")
    path = tmp_corpus / "beta-failure.yaml"
    path.write_text(path.read_text().replace("\nconfirm:\n", "\nconfirm:\n- Edited.\n", 1))
    build(Request(tmp_corpus, warm, SITE_CONFIG, cache_root=cache, jobs=1, dates=DATES))
    assert alpha.stat().st_ino == before
    assert tree(warm) == site(tmp_corpus, tmp_path / "cold", dates=DATES)
    path.write_text(path.read_text().replace("Beta failure in NCCL", "Beta failure of NCCL"))
    build(Request(tmp_corpus, warm, SITE_CONFIG, cache_root=cache, jobs=1, dates=DATES))
    assert alpha.stat().st_ino != before  # its related link shows beta's new title
    assert tree(warm) == site(tmp_corpus, tmp_path / "cold2", dates=DATES)


def test_deterministic_across_hash_seeds_and_time_zones(tmp_path: Path) -> None:
    outs = []
    for seed, tz in (("1", "UTC"), ("4242", "Asia/Kolkata")):
        out = tmp_path / f"site-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": tz}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "nanopedia",
                "build",
                "--entries",
                str(FIXTURES / "corpus"),
                "--out",
                str(out),
                "--config",
                str(SITE_CONFIG),
                "--no-cache",
            ],
            check=True,
            env=env,
            cwd=tmp_path,
            capture_output=True,
        )
        outs.append(tree(out))
    assert outs[0] == outs[1]


def test_repository_entries_build(tmp_path: Path) -> None:
    report = build(Request(ROOT / "entries", tmp_path / "site", None, use_cache=False, jobs=1))
    assert report.entries >= 1 and (tmp_path / "site" / "tags" / "amp.html").is_file()


def test_an_entry_listed_as_related_is_not_repeated_under_referenced_by(
    tmp_corpus: Path, tmp_path: Path
) -> None:
    beta = tmp_corpus / "beta-failure.yaml"
    beta.write_text(beta.read_text() + "related: [alpha-failure]\n")
    files = site(tmp_corpus, tmp_path / "site")
    page = files["entries/beta-failure.html"].decode()
    assert 'id="related"' in page and 'id="referenced-by"' not in page
    assert page.count('href="../entries/alpha-failure.html"') == 1


def test_affected_systems_are_inline_markdown(tmp_corpus: Path, tmp_path: Path) -> None:
    """Names and versions carry code spans (`MixedPrecision`), shown as code, not backticks."""
    alpha = tmp_corpus / "alpha-failure.yaml"
    alpha.write_text(
        alpha.read_text().replace(
            '  - name: PyTorch FSDP1\n    versions: ">= 1.12"',
            "  - name: PyTorch FSDP1 (`MixedPrecision`) <b>bold</b>\n"
            "    versions: '>= 1.12, with `use_orig_params`'",
            1,
        )
    )
    page = site(tmp_corpus, tmp_path / "site")["entries/alpha-failure.html"].decode()
    systems = page[page.index('id="affected-systems"') : page.index('id="confirm"')]
    assert (
        "<strong>PyTorch FSDP1 (<code>MixedPrecision</code>) &lt;b&gt;bold&lt;/b&gt;</strong>"
        in systems
    )
    assert "&gt;= 1.12, with <code>use_orig_params</code>" in systems
    assert "`" not in systems
