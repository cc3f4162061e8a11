"""The search index data: fields, error strings, shards, determinism and inline safety."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from generator import search
from generator.corpus import gather

HOSTILE_TITLE = 'Hostile </script><img src=x onerror="window.pwned=1"> title'


def _data(script: bytes, global_name: str) -> object:
    text = script.decode()
    prefix = f"window.{global_name}="
    assert text.startswith(prefix) and text.endswith(";\n")
    return json.loads(text[len(prefix) : -2])


def test_documents_hold_plain_text_and_exact_error_strings() -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    key, text = search.document(catalog.by_id["alpha-failure"].entry)
    fields = dict(zip(search.KEY_FIELDS + search.TEXT_FIELDS, key + text, strict=True))
    assert fields["id"] == "alpha-failure"
    assert fields["title"] == "Alpha failure under FSDP"
    assert fields["tags"] == ["fsdp", "bf16"]
    assert fields["aliases"] == ["alpha-old"]
    # The fingerprint's example without its rank prefix, then the backticked symptom (same text).
    assert fields["errors"] == ["RuntimeError: expected scalar type BFloat16 but found Float"]
    # Markdown is reduced to what a reader sees: the link text stays, its target does not.
    assert fields["summary"] == (
        "The alpha failure happens when bf16 weights meet fp32 inputs. See beta."
    )
    assert fields["symptoms"] == ["RuntimeError: expected scalar type BFloat16 but found Float"]
    assert fields["causes"] == ["Model code casts to self.dtype"]


def test_repo_entry_documents_the_flat_param_error() -> None:
    catalog, _ = gather(ROOT / "entries")
    key, _ = search.document(catalog.by_id["fsdp-uniform-dtype"].entry)
    errors = key[search.KEY_FIELDS.index("errors")]
    assert isinstance(errors, list)
    assert any("Must flatten tensors with uniform dtype" in e for e in errors)


def test_index_files_are_sharded_and_point_at_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    monkeypatch.setattr(search, "SHARD_SIZE", 1)
    files = dict(search.catalog_index(catalog))
    assert sorted(files) == ["search/index.js", "search/text-0.js", "search/text-1.js"]
    head = _data(files["search/index.js"], search.GLOBAL)
    assert isinstance(head, dict)
    assert head["fields"] == list(search.KEY_FIELDS)
    assert [d[0] for d in head["docs"]] == ["alpha-failure", "beta-failure"]
    assert head["text"] == {
        "fields": list(search.TEXT_FIELDS),
        "shard_size": 1,
        "shards": ["text-0.js", "text-1.js"],
    }
    assert ["nccl", "NCCL", 1] in head["tags"]
    second = files["search/text-1.js"].decode()
    assert second.startswith("(window.NANOPEDIA_SEARCH_TEXT=window.NANOPEDIA_SEARCH_TEXT||[])[1]=")


def test_index_is_deterministic_and_safe_to_inline(tmp_corpus: Path) -> None:
    alpha = tmp_corpus / "alpha-failure.yaml"
    alpha.write_text(
        alpha.read_text().replace("title: Alpha failure under FSDP", f"title: '{HOSTILE_TITLE}'")
    )
    catalog, problems = gather(tmp_corpus)
    assert problems == []
    first = b"".join(b for _, b in search.catalog_index(catalog))
    again = b"".join(b for _, b in search.catalog_index(gather(tmp_corpus)[0]))
    assert first == again
    text = first.decode()
    for unsafe in ("<", ">", "&", "\u2028", "\u2029"):
        assert unsafe not in text
    files = dict(search.catalog_index(catalog))
    head = _data(files["search/index.js"], search.GLOBAL)
    assert isinstance(head, dict)
    assert head["docs"][0][1] == HOSTILE_TITLE
