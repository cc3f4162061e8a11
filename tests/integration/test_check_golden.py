"""Golden cases for `nanopedia check`, kept as data in tests/golden/check_errors.txt.

Each case edits the fixture corpus and states the exact output; a failing case names its own line
in the data file. Regenerate nothing by hand: the expected text is what a contributor reads.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

CASES_FILE = ROOT / "tests" / "golden" / "check_errors.txt"


@dataclass
class Case:
    name: str
    line: int
    edits: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    expect: str = ""


def read_cases(path: Path) -> list[Case]:
    """Parse the data file: `### name`, then `== edit F` / `== file F` / `== expect` sections."""
    cases: list[Case] = []
    section: tuple[str, str] | None = None
    buffer: list[str] = []

    def flush() -> None:
        if not cases or section is None:
            return
        kind, target = section
        case = cases[-1]
        if kind == "edit":
            olds = [line[2:] for line in buffer if line.startswith("- ") or line == "-"]
            news = [line[2:] for line in buffer if line.startswith("+ ") or line == "+"]
            pairs: list[tuple[str, str]] = []
            old_block: list[str] = []
            new_block: list[str] = []
            for line in buffer:
                if line.startswith("-") and new_block:
                    pairs.append(("\n".join(old_block), "\n".join(new_block)))
                    old_block, new_block = [], []
                (old_block if line.startswith("-") else new_block).append(line[2:])
            if old_block or new_block:
                pairs.append(("\n".join(old_block), "\n".join(new_block)))
            assert olds or news
            case.edits.setdefault(target, []).extend(pairs)
        elif kind == "file":
            case.files[target] = "\n".join(buffer) + "\n"
        else:
            case.expect = "\n".join(buffer).strip("\n")

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("### "):
            flush()
            cases.append(Case(line[4:].strip(), number))
            section, buffer = None, []
        elif line.startswith("== ") and cases:
            flush()
            words = line[3:].split(maxsplit=1)
            section, buffer = (words[0], words[1] if len(words) > 1 else ""), []
        elif section is not None:
            buffer.append(line)
    flush()
    return cases


CASES = read_cases(CASES_FILE)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_check_golden(case: Case, tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    for name, pairs in case.edits.items():
        target = corpus / name
        text = target.read_text(encoding="utf-8")
        for old, new in pairs:
            assert text.count(old + "\n") == 1, f"{CASES_FILE}:{case.line}: '{old}' not found once"
            text = text.replace(old + "\n", new + "\n")
        target.write_text(text, encoding="utf-8")
    for name, content in case.files.items():
        (corpus / name).write_text(content, encoding="utf-8")
    monkeypatch.chdir(corpus)
    changed = sorted(set(case.edits) | set(case.files))
    entry_files = [n for n in changed if n != "tags.yaml"]
    result = cli("check", *(entry_files or ["."]))
    got = result.out.strip("\n")
    assert got == case.expect, f"{CASES_FILE}:{case.line}: case '{case.name}'"
    assert result.code == (1 if "error[" in case.expect else 0)  # warnings alone pass


def test_cases_file_parses() -> None:
    assert len(CASES) >= 20
    assert all(c.edits or c.files for c in CASES)
    assert os.path.exists(CASES_FILE)
