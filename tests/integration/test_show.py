"""`nanopedia show ID`: an entry as plain text fitted to the terminal, on every shipped entry."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, ROOT

from nanopedia.content.files import entry_names
from nanopedia.site.terminal import blocks

IDS = [name.removesuffix(".yaml") for name in entry_names(ROOT / "entries")]
#: Markdown that must not reach the terminal: code-span backticks, emphasis, link brackets.
RAW = re.compile(r"`|\*\*\w|\w\*\*|(?<![\w*/])\*[A-Za-z][^*]*[A-Za-z]\*(?![\w*])|\]\(")


@pytest.mark.parametrize("width", [60, 80])
def test_every_entry_fits_and_shows_no_markdown(cli, width: int) -> None:
    for entry_id in IDS:
        run = cli("show", "--width", str(width), entry_id)
        assert run.code == 0, run.err
        lines = run.out.splitlines()
        assert lines[0].startswith(f"{entry_id}: ")
        for heading in ("Quick answer", "Root causes", "Fix", "How to confirm"):
            assert heading in lines, (entry_id, heading)
        wide = [line for line in lines if len(line) > width]
        assert wide == [], (entry_id, wide[:2])
        literal = "``" in (ROOT / "entries" / f"{entry_id}.yaml").read_text()  # a code span's `
        raw = [line for line in lines if RAW.search(line.replace("`", "") if literal else line)]
        assert raw == [], (entry_id, raw[:2])


def test_causes_carry_domain_and_action_and_fix_steps_name_their_causes(cli) -> None:
    out = cli("show", "--width", "120", "cuda-out-of-memory").out
    assert (
        "  2. Fragmentation in the caching allocator (reserved but unallocated is large) "
        "[workload, fix-config]" in out
    )
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in out
    assert "     for: Fragmentation in the caching allocator" in out
    assert "read:" not in out  # no base URL configured here


def test_the_link_follows_the_base_url(cli) -> None:
    out = cli("show", "--base-url", "https://np.example/", "cuda-out-of-memory").out
    assert out.rstrip().endswith("read: https://np.example/entries/cuda-out-of-memory.html")


def test_an_unknown_id_is_e050_with_a_did_you_mean(cli) -> None:
    run = cli("show", "cuda-out-of-memroy")
    assert run.code == 2
    assert "error[E050]: no entry 'cuda-out-of-memroy'" in run.err
    assert "did you mean 'cuda-out-of-memory'?" in run.err


#: Markdown of an entry's text: the plain lines `show` prints for it at 40 columns, indented.
BLOCKS = {
    "ordered list": ("1. one\n2. two\n", ["  1. one", "  2. two"]),
    "ordered list from 3": ("3. three\n4. four\n", ["  3. three", "  4. four"]),
    "ordered list from 0": ("0. zero\n1. one\n", ["  0. zero", "  1. one"]),
    "nested bullets": ("- a\n  - b\n- c\n", ["  - a", "     - b", "  - c"]),
    "numbers in bullets": (
        "- a\n\n  1. x\n  2. y\n- b\n",
        ["  - a", "     1. x", "     2. y", "  - b"],
    ),
    "an item's second paragraph": (
        "- item one\n\n  more text\n",
        ["  - item one", "     more text"],
    ),
    "soft line break": ("line one\nline two\n", ["  line one line two"]),
    "paragraphs": ("first\n\nsecond\n", ["  first", "", "  second"]),
    "link to a page": (
        "See [the docs](https://x.example/a) now.",
        ["  See the docs <https://x.example/a>", "  now."],
    ),
    "link to an entry": ("a [link](entry:other) b", ["  a link b"]),
    "link whose text is its address": (
        "See <https://x.example/a> now.",
        ["  See https://x.example/a now."],
    ),
    "plain http link": ("a [b](http://x.example/) c", ["  a b <http://x.example/> c"]),
    "hard line break": ("line one  \nline two\n", ["  line one", "  line two"]),
    "emphasis and code": ("**bold** and *it* and `code`", ["  bold and it and code"]),
    "fenced code": ("```\ncode  here\n  indented\n```\n", ["      code  here", "        indented"]),
    "indented code": ("para\n\n    block code\n", ["  para", "      block code"]),
}


@pytest.mark.parametrize("text, lines", BLOCKS.values(), ids=BLOCKS)
def test_markdown_blocks_become_plain_lines(text: str, lines: list[str]) -> None:
    assert blocks(text, 40, "  ") == lines


def test_an_entry_reads_as_its_sections_in_order(cli) -> None:
    """The fixture entry whole, as a terminal shows it: its title, each section under its
    heading, indented under it, a blank line between, the page's address last."""
    run = cli(
        "show",
        "--entries",
        str(FIXTURES / "corpus"),
        "--width",
        "60",
        "--base-url",
        "https://np.example/",
        "alpha-failure",
    )
    assert run.code == 0 and run.err == ""
    assert run.out == (
        "alpha-failure: Alpha failure under FSDP\n"
        "\n"
        "Quick answer\n"
        "  The alpha failure happens when bf16 weights meet fp32\n"
        "  inputs. See beta.\n"
        "\n"
        "Root causes\n"
        "  1. Model code casts to self.dtype [workload, fix-code]\n"
        "\n"
        "Fix\n"
        "  1. Cast from the activation dtype\n"
        "     for: Model code casts to self.dtype\n"
        "     Use x.dtype, not self.dtype.\n"
        "\n"
        "How to confirm\n"
        "  - Print the dtype of inputs and weights.\n"
        "\n"
        "read: https://np.example/entries/alpha-failure.html\n"
    )
