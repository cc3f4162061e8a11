"""`nanopedia show ID`: an entry as plain text fitted to the terminal, on every shipped entry."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from nanopedia.content.files import entry_names

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
