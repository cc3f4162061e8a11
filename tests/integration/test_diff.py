"""`nanopedia diff`: the PR summary, on a scripted git history in a temp repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitscript import Repo

BASE_FILES = {
    "entries/tags.yaml": "bf16: {title: bf16}\nfsdp: {title: FSDP}\nnccl: {title: NCCL}\n",
    "entries/alpha.yaml": """\
id: alpha
title: Alpha failure
summary: Old summary.
tags: [fsdp, bf16]
fingerprints:
  - id: scalar-type
    pattern: expected scalar type
""",
    "entries/beta.yaml": "id: beta\ntitle: Beta failure\ntags: [nccl]\n",
    "entries/gamma.yaml": "id: gamma\ntitle: Gamma failure\ntags: [nccl]\n",
    "entries/delta.yaml": "id: delta\ntitle: Delta failure\ntags: [fsdp]\nmechanism: Same.\n",
    "entries/README.md": "not an entry\n",
}


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """Base commit, then one commit that edits, adds, removes and renames entries."""
    repo = Repo(tmp_path / "repo")
    for name, text in BASE_FILES.items():
        repo.write(name, text)
    repo.commit("base", "2024-01-01T00:00:00Z")
    repo.write(
        "entries/alpha.yaml",
        """\
id: alpha
title: Alpha failure
summary: New summary.
tags: [fsdp, nccl]
fingerprints:
  - id: scalar-type
    pattern: expected scalar type
  - id: new-fp
    pattern: something else
""",
    )
    (repo.root / "entries/gamma.yaml").unlink()
    (repo.root / "entries/delta.yaml").unlink()
    repo.write(
        "entries/epsilon.yaml",
        "id: epsilon\ntitle: Epsilon failure\naliases: [delta]\ntags: [fsdp]\nmechanism: Same.\n",
    )
    repo.write(
        "entries/zeta.yaml",
        "id: zeta\ntitle: 'Zeta *bold* [x](https://e.com) <b>'\n"
        "tags: [bf16, amp]\nfingerprints:\n  - id: z1\n    pattern: zz\n",
    )
    repo.write("entries/broken.yaml", "id: broken\ntitle: [unclosed\n")
    repo.write("entries/tags.yaml", BASE_FILES["entries/tags.yaml"] + "amp: {title: AMP}\n")
    repo.commit("change", "2024-01-02T00:00:00Z")
    monkeypatch.chdir(repo.root)
    return repo


EXPECTED = """\
<!-- nanopedia-diff -->
### Nanopedia: 2 added, 1 renamed, 1 removed, 1 changed

Entries at `HEAD` compared with `HEAD~1`.

**Added**

- `broken` (does not parse: run `nanopedia check`)
- `zeta` Zeta \\*bold\\* \\[x\\](https\u2060://e.com) \\<b\\>
  - tags: `bf16`, `amp`
  - fingerprints: `z1`

**Renamed**

- `delta` → `epsilon` Epsilon failure (the old id redirects)
  - sections: `title`

**Removed**

- `gamma` Gamma failure: no entry took its id as an alias, so links to it will break

**Changed**

- `alpha` Alpha failure
  - sections: `summary`, `tags`, `fingerprints`
  - tags added `nccl`; removed `bf16`
  - new fingerprints: `new-fp`

**Tag registry**: added `amp`
"""


def test_diff_summarizes_a_change(history: Repo, cli) -> None:
    result = cli("diff", "HEAD~1")
    assert (result.code, result.err) == (0, "")
    assert result.out == EXPECTED


def test_diff_with_explicit_head_and_no_changes(history: Repo, cli) -> None:
    result = cli("diff", "HEAD", "HEAD")
    assert result.out == (
        "<!-- nanopedia-diff -->\n### Nanopedia: no entry changes\n\n"
        "Entries at `HEAD` compared with `HEAD`.\n"
    )
    result = cli("diff", "HEAD", "HEAD~1")
    assert "### Nanopedia: 2 added, 3 removed, 1 changed" in result.out
    assert "- `epsilon` Epsilon failure: no entry took its id as an alias" in result.out


def test_diff_reads_git_not_the_working_tree(history: Repo, cli) -> None:
    (history.root / "entries/beta.yaml").write_text("id: beta\ntitle: Edited, not committed\n")
    assert "beta" not in cli("diff", "HEAD~1").out


def test_diff_refuses_an_unknown_revision(history: Repo, cli) -> None:
    result = cli("diff", "no-such-branch")
    assert result.code == 2
    assert "error[E050]: 'no-such-branch' is not a commit in this repository" in result.err
