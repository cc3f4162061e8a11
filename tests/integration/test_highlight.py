"""Per-line highlighting of Python gives exactly the HTML of lexing the whole block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments import format as pygments_format
from pygments import lex

from nanopedia.site import highlight

ROOT = Path(__file__).resolve().parents[2]


def whole_block(source: str) -> str:
    lexer = highlight._lexer("python")
    return pygments_format(highlight._canonical(lex(source, lexer)), highlight._FORMATTER)


def _repo_blocks() -> list[str]:
    blocks = []
    for path in sorted((ROOT / "entries").glob("*.yaml")) + sorted(ROOT.glob("tests/**/*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("code_examples"), list):
            blocks += [
                x["code"]
                for x in data["code_examples"]
                if isinstance(x, dict) and isinstance(x.get("code"), str)
            ]
    return blocks


def test_every_code_block_of_the_entries() -> None:
    blocks = _repo_blocks()
    assert blocks
    for source in blocks:
        assert highlight.code(source, "python") == whole_block(source), source


def test_every_code_block_of_the_bench_corpus(bench_corpus: Path) -> None:
    with bench_corpus.open(encoding="utf-8") as lines:
        for line in lines:
            for example in json.loads(line)["code_examples"]:
                assert highlight.code(example["code"], "python") == whole_block(example["code"])


TRICKY = [
    "def",
    "class",
    "import",
    "from",
    "as",
    "lazy",
    "match",
    "case",
    "_",
    "None",
    "raise",
    "x",
    "os.path",
    "f'",
    'f"',
    "rf'",
    "t'",
    "b'",
    "'",
    '"',
    "'''",
    '"""',
    "{",
    "}",
    "{{",
    "}}",
    "=",
    "!r",
    ":",
    "(",
    ")",
    "[",
    "]",
    ",",
    ".",
    "\\",
    "#",
    "#!",
    "@",
    "%s",
    "1",
    "1.5e3",
    " ",
    "    ",
    "\t",
    "\n",
    "\n",
    "\n",
    "\r\n",
    "\x0c",
    "\ufeff",
    "é",
    "self",
    "print",
    "__init__",
    "yield from",
    "lambda",
]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), max_size=30))
def test_generated_snippets(parts: list[str]) -> None:
    source = "".join(parts)
    assert highlight.Highlighter().code(source, "python") == whole_block(source)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(TRICKY), max_size=8).map("".join), max_size=8))
def test_lines_shared_between_blocks(lines: list[str]) -> None:
    """A line cached from one block is right in another (no state leaks through the cache)."""
    shared = highlight.Highlighter()
    for cut in range(len(lines) + 1):
        source = "\n".join(lines[cut:] + lines[:cut])
        assert shared.code(source, "python") == whole_block(source)


@pytest.mark.parametrize(
    "source",
    [
        "import a,\n    b\n",
        "import a\n, b\n",
        "import a\nas b\n",
        "from a\n import b\n",
        "raise X from e\n    import os\n",
        "def\n  f(): pass\n",
        "class \\\n C: pass\n",
        "f'{x\n}'\n",
        "f'{x=\n}'\n",
        "f'{\"}\"\n}'\n",
        "case _\n  _\n",
        "match\n  _\n",
        "lazy\nfrom a import b\n",
        "x = 1 \\\n + 2\n",
        "#!/usr/bin/env python\n#!x\n",
        "'''a\nb'''\n",
        '   \n"""doc"""\n',
        "s = 'abc\\\ndef'\n",
        "s = 'abc\nx = 1\n",
        "import torch\nimport os, datetime\nimport torch.distributed as dist\n\nx = 1\n",
    ],
)
def test_lines_that_carry_state(source: str) -> None:
    assert highlight.Highlighter().code(source, "python") == whole_block(source)


SAMPLES = {
    "python": "@dataclass\nclass A(B):\n    def f(self, x: int = 1) -> None:\n"
    "        '''Doc.'''\n        return x ** 2 if x not in {1, 2.5} else f'{x!r}'\n",
    "pytb": 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
    "    f()\nRuntimeError: boom\n",
    "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n",
    "console": "$ torchrun --nproc-per-node 8 train.py\nNCCL WARN timeout\n",
    "bash": 'export NCCL_DEBUG=INFO  # log\nfor i in 1 2; do echo "$i"; done\n',
    "json": '{"fp16": {"enabled": true, "loss_scale": 0}}\n',
    "yaml": "mixed_precision: bf16  # x\nsteps: [1, 2]\n",
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_every_class_emitted_has_a_rule(language: str) -> None:
    """A span carries one class, and pygments.css colours it in at least one scheme (classes
    drawn like the text in both get no span at all)."""
    css = "\n".join(highlight.styles().values())
    classes = re.findall(r'<span class="([^"]*)">', highlight.code(SAMPLES[language], language))
    assert classes, language
    for cls in classes:
        assert re.fullmatch(r"[a-z0-9]+", cls), (language, cls)
        assert re.search(rf"\.{cls}[,{{)]", css), f"{language}: no rule for .{cls}"


def test_symbol_operators_are_text_and_word_operators_keep_their_colour() -> None:
    html = highlight.code("x = a.b ** 2 if a not in b else c\n", "python")
    assert html.startswith("x = a.b ** ")
    assert '<span class="ow">not</span> <span class="ow">in</span>' in html
