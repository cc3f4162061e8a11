"""Text without markdown syntax skips the parser and gives exactly markdown-it's HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nanopedia.site import markdown
from nanopedia.site.markdown import PageEnv

PARSER = markdown.Markdown(remember=False).parser


def check(text: str) -> None:
    block = PARSER.render(text, {"page": PageEnv()})
    inline = PARSER.renderInline(text, {"page": PageEnv()})
    assert markdown.render(text, PageEnv()) == block
    assert markdown.render_inline(text, PageEnv()) == inline


@settings(max_examples=3000, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list("aZé1 ,.;'\"?()/\u00a0\u3000\u2028\x85\t\n") + list("!#$%&*+-:<=>@[\\]^_`{}~|")
        ),
        max_size=20,
    )
)
def test_generated_text(text: str) -> None:
    check(text)


@pytest.mark.parametrize(
    "text",
    [
        "Plain words",
        'Say "hi" (twice), then stop.',
        "Ünïcode ok",
        "a  b",
        "x/y",
        "I) no list",
        "A. not a list",
        "Loss is NaN at step 10",
        "e\u00a0",
        "\u3000lead",
        "ab\x85cd",
    ],
)
def test_examples(text: str) -> None:
    check(text)


def test_bench_corpus_fields(bench_corpus: Path) -> None:
    plain = 0
    with bench_corpus.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if n == 200:
                break
            raw = json.loads(line)
            texts = [raw["quick_answer"], raw["mechanism"], *raw["confirmation_checklist"]]
            texts += [s[k] for s in raw["symptoms"] for k in ("symptom", "why")]
            texts += [q[k] for q in raw["faq"] for k in ("q", "a")]
            for text in texts:
                plain += markdown.is_plain(text)
                check(text)
    assert plain


def test_repeated_text_renders_as_the_first_time() -> None:
    """Remembered HTML is reused only where nothing but the text decides it."""
    md = markdown.Markdown()
    page = PageEnv(markdown=md)
    assert markdown.render("# Title", page) != markdown.render("# Title", page)  # -2 suffix
    for base in ("", "../entries/"):
        fresh = PARSER.render("see [x](entry:a) *b*", {"page": PageEnv(base)})
        assert markdown.render("see [x](entry:a) *b*", PageEnv(base, markdown=md)) == fresh
        assert markdown.render("see [x](entry:a) *b*", PageEnv(base, markdown=md)) == fresh
