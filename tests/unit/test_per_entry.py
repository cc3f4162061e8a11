"""An entry read again from its file when its cached form is gone (`per_entry.reload`): the same
entry while the file holds the bytes the build keyed, else a located refusal to build on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from nanopedia.errors import NanopediaError
from nanopedia.incremental.per_entry import entry_key, reload


def test_an_entry_is_read_again_while_its_file_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "alpha-failure.yaml"
    shutil.copy(FIXTURES / "corpus" / "alpha-failure.yaml", path)
    entry = reload(str(path), entry_key(path))
    assert (entry.id, entry.title) == ("alpha-failure", "Alpha failure under FSDP")


def test_an_entry_changed_since_it_was_keyed_stops_the_build(tmp_path: Path) -> None:
    path = tmp_path / "alpha-failure.yaml"
    shutil.copy(FIXTURES / "corpus" / "alpha-failure.yaml", path)
    key = entry_key(path)
    path.write_text(path.read_text().replace("Alpha failure under FSDP", "Alpha, edited"))
    with pytest.raises(NanopediaError) as caught:
        reload(str(path), key)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: error[E042]: the entry changed while the site was being built\n"
        "    hint: build again"
    ]
