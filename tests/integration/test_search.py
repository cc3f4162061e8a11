"""The search index data: fields, error strings, quick answers, the serialized index and its
tokenizer, shards, incremental rebuilds, determinism and inline safety. That the serialized
index is MiniSearch's own is proven in JavaScript: tests/js/search_index.test.js."""

from __future__ import annotations

import json
import re
import shutil
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import FIXTURES, gathered_entries

from nanopedia.content.corpus import gather
from nanopedia.incremental.context import Request
from nanopedia.incremental.pipeline import build
from nanopedia.site import search

HOSTILE_TITLE = 'Hostile </script><img src=x onerror="window.pwned=1"> title'


def _data(script: bytes, global_name: str) -> object:
    text = script.decode()
    prefix = f"window.{global_name}="
    assert text.startswith(prefix) and text.endswith(";\n")
    return json.loads(text[len(prefix) : -2])


_JS_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")


def _index_shard(script: bytes, number: int) -> object:
    """The object an index shard script gives `JSON.parse` (its JavaScript string decoded)."""
    text = script.decode()
    head = f"(window.{search.INDEX_GLOBAL}=window.{search.INDEX_GLOBAL}||[])[{number}]="
    assert text.startswith(head + "JSON.parse('") and text.endswith("');\n")
    literal = text[len(head) + len("JSON.parse('") : -len("');\n")]
    assert "'" not in _JS_ESCAPE.sub("", literal)  # every quote is escaped
    raw = _JS_ESCAPE.sub(lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 5 else m[1], literal)
    return json.loads(raw)


def test_documents_hold_plain_text_and_exact_error_strings() -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    key, text = search.document(catalog.by_id["alpha-failure"].entry)
    fields = dict(zip(search.KEY_FIELDS + search.TEXT_FIELDS, key + text, strict=True))
    assert fields["id"] == "alpha-failure"
    assert fields["title"] == "Alpha failure under FSDP"
    assert fields["tags"] == ["fsdp", "bf16"]
    assert fields["aliases"] == ["alpha-old"]

    # The decisive fingerprint's example without its rank prefix; the backticked symptom is the
    # same text, so it is not mentioned again.
    assert fields["errors"] == ["RuntimeError: expected scalar type BFloat16 but found Float"]
    assert fields["mentions"] == []
    # Markdown is reduced to what a reader sees: the link text stays, its target does not.
    assert fields["summary"] == (
        "The alpha failure happens when bf16 weights meet fp32 inputs. See beta."
    )
    assert fields["symptoms"] == ["RuntimeError: expected scalar type BFloat16 but found Float"]
    assert fields["causes"] == ["Model code casts to self.dtype"]


def test_repo_entry_documents_the_flat_param_error() -> None:
    catalog, _ = gathered_entries()
    key, _ = search.document(catalog.by_id["fsdp-uniform-dtype"].entry)
    errors = key[search.KEY_FIELDS.index("errors")]
    assert isinstance(errors, list)
    assert any("Must flatten tensors with uniform dtype" in e for e in errors)


def test_an_entry_owns_its_title_quotes_and_decisive_lines_and_mentions_the_rest() -> None:
    """#32, #34: `errors` are the lines that make a pasted error this entry's (the messages its
    title quotes, its decisive examples); the collateral watchdog lines and symptom quotes that
    other failures print too are only `mentions`."""
    catalog, _ = gathered_entries()
    key, _ = search.document(catalog.by_id["nccl-watchdog-timeout"].entry)
    fields = dict(zip(search.KEY_FIELDS, key, strict=True))
    errors, mentions = fields["errors"], fields["mentions"]
    assert isinstance(errors, list) and isinstance(mentions, list)
    assert errors[0] == "Watchdog caught collective operation timeout"
    assert any(
        m.startswith("Watchdog caught collective operation timeout: WorkNCCL") for m in mentions
    )
    assert not set(errors) & set(mentions)
    assert search.title_quotes('x "one two" `three four` "auto" `nan`') == ["one two", "three four"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("[rank3]: RuntimeError: boom", "RuntimeError: boom"),
        ("[default0]:[rank0]: RuntimeError: boom", "RuntimeError: boom"),
        ("2025-03-30 08:24:00,123 - ERROR - RuntimeError: boom", "RuntimeError: boom"),
        (
            "ERROR 04-01 23:46:56 [engine.py:160] torch.OutOfMemoryError: boom",
            "torch.OutOfMemoryError: boom",
        ),
        ("E0330 08:24:00.123456 4242 socket.cpp:7] [c10d] boom", "boom"),
        (
            "[Sun Mar 30 08:24:00 2025] Out of memory: Killed process 7899",
            "Out of memory: Killed process 7899",
        ),
        ("Mar 30 08:24:00 node3 kernel: NVRM: Xid", "node3 kernel: NVRM: Xid"),
        ("ERROR: Could not build wheels", "Could not build wheels"),
        ("404 Client Error", "404 Client Error"),
        ("Error: x", "Error: x"),
    ],
)
def test_log_prefixes_are_stripped(line: str, error: str) -> None:
    """The prefix pattern `search.js` also reads from search/index.js (and compiles as a
    JavaScript RegExp: the browser tests paste lines with each kind)."""
    assert search._LOG_PREFIX.sub("", line) == error


def test_index_files_are_sharded_and_point_at_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog, _ = gather(FIXTURES / "corpus")
    monkeypatch.setattr(search, "SHARD_SIZE", 1)
    files = dict(search.catalog_index(catalog))
    assert sorted(files) == [
        "search/answers.js",
        "search/index.js",
        "search/terms-0.js",
        "search/terms-1.js",
        "search/text-0.js",
        "search/text-1.js",
    ]
    assert _data(files["search/answers.js"], search.ANSWERS_GLOBAL) == [
        "The alpha failure happens when bf16 weights meet fp32 inputs.",
        "The beta failure is a watchdog timeout after one rank stops issuing collectives.",
    ]
    head = _data(files["search/index.js"], search.GLOBAL)
    assert isinstance(head, dict)
    assert head["fields"] == list(search.RECORD_FIELDS)
    assert head["prefix"] == search.LOG_PREFIX
    # Title, errors, mentions, former ids, the id after what the title's slug says of it.
    assert head["docs"][0].split("\t") == [
        "Alpha failure under FSDP",
        "RuntimeError: expected scalar type BFloat16 but found Float",
        "",
        "alpha-old",
        "13:",
    ]
    assert head["docs"][1].split("\t")[0] == "Beta failure in NCCL collectives"
    assert head["index"] == {
        "fields": list(search.INDEXED_FIELDS),
        "shards": ["terms-0.js", "terms-1.js"],
        "stop": sorted(search.STOP_WORDS),
    }
    second = _index_shard(files["search/terms-1.js"], 1)
    assert isinstance(second, dict)
    assert second["documentIds"] == {"0": "beta-failure"}
    # In the error it mentions (field 2), its symptom (5) and summary (7), once each.
    assert ["watchdog", {"2": {"0": 1}, "5": {"0": 1}, "7": {"0": 1}}] in second["index"]
    assert head["text"] == {
        "fields": list(search.SHARD_FIELDS),
        "shard_size": 1,
        "shards": ["text-0.js", "text-1.js"],
    }
    assert ["nccl", "NCCL", 1] in head["tags"]
    second = files["search/text-1.js"].decode()
    head_text = "(window.NANOPEDIA_SEARCH_TEXT=window.NANOPEDIA_SEARCH_TEXT||[])[1]="
    assert second.startswith(head_text) and second.endswith(";\n")
    [beta] = json.loads(second[len(head_text) : -2])
    tags, summary, symptoms, causes = beta.split("\t")
    assert tags == "nccl"
    assert summary.startswith("The beta failure is a watchdog timeout")


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
    assert head["docs"][0].split("\t")[0] == HOSTILE_TITLE


def test_compact_ids_keep_what_the_title_does_not_say() -> None:
    assert search.compact_id("cuda-oom-02", "CUDA OOM (bf16)") == "9:02"
    assert search.compact_id("cuda-oom", "CUDA OOM") == "8:"
    assert search.compact_id("nccl-hang", "Hang in NCCL") == "0:nccl-hang"
    # Only ASCII titles: their lower case is the same in the browser.
    assert search.compact_id("istanbul", "\u0130stanbul") == "0:istanbul"
    assert search.title_slug("A  b.C--d") == "a-b-c-d"


def test_records_are_one_line_fields_apart_by_tabs() -> None:
    doc: search.Document = (
        ["id-1", "Two\tlines\nhere", ["t"], ["e  1", ""], ["m"], []],
        ["Summary.", ["s"], ["c1", "c2"]],
    )
    key, text, answer = (json.loads(r) for r in search.records(doc))
    assert key == "Two lines here\te 1\tm\t\t0:id-1"
    assert text == "t\tSummary.\ts\tc1\nc2"
    assert answer == "Summary."


def test_separator_is_unicode_punctuation_and_separators() -> None:
    """MiniSearch splits on `[\\n\\r\\p{Z}\\p{P}]+`: the spelled-out class is that set."""
    chars = "".join(map(chr, range(sys.maxunicode + 1)))
    found = set("".join(search._SEPARATOR.findall(chars)))
    wanted = {c for c in chars if unicodedata.category(c)[0] in "PZ"} | {"\n", "\r"}
    assert found == wanted


def test_postings_count_tokens_as_minisearch_does() -> None:
    doc: search.Document = (
        ["x-1", "The Dtype, the DTYPE: dtype!", [], ["A of"], [], []],
        ["", ["naïve—“quoted”\tword"], []],
    )
    lengths, terms = search.postings(doc)
    at = {name: i for i, name in enumerate(search.INDEXED_FIELDS)}
    # Distinct tokens, stop words and the empty token after the final "!" included.
    assert lengths[at["title"]] == len({"The", "Dtype", "the", "DTYPE", "dtype", ""})
    assert lengths[at["summary"]] == 1  # an empty field is one empty token
    assert terms["dtype"] == (at["title"], 3)
    assert "the" not in terms and "of" not in terms and "a" not in terms
    # A tab is no separator; the em dash and curly quotes are.
    assert terms["naïve"] == terms["quoted"] == terms["\tword"] == (at["symptoms"], 1)


def test_serialized_means_are_minisearch_running_means() -> None:
    fields = len(search.INDEXED_FIELDS)
    entries: list[search.Postings] = [((1,) * fields, {}), ((2,) * fields, {}), ((4,) * fields, {})]
    data = search.serialized(["a", "b", "c"], entries)
    mean = 0.0
    for n, length in enumerate((1, 2, 4)):
        mean = (mean * n + length) / (n + 1)
    assert data["averageFieldLength"] == [mean] * fields and mean != int(mean)
    whole = search.serialized(["a"], entries[:1])
    assert whole["averageFieldLength"] == [1] * fields
    assert all(isinstance(v, int) for v in whole["averageFieldLength"])  # written 1, not 1.0


def test_answer_is_the_first_sentence() -> None:
    assert search.answer("Cast the model. Then retry.") == "Cast the model."
    assert search.answer("Use torch.compile once. More.") == "Use torch.compile once."
    assert search.answer("No stop at all") == "No stop at all"
    long = search.answer("word " * 100)
    assert len(long) <= search.ANSWER_MAX + 2 and long.endswith("word …")


def test_index_shard_script_is_safe_and_decodes_to_the_index() -> None:
    hostile = "</script><b>'quote' \\ back \u2028 & \"dq\""
    doc: search.Document = (["h", hostile, [], [hostile], [hostile], []], ["", [], []])
    script = search.terms_script(3, ["h"], [search.postings(doc)])
    for unsafe in ("<", ">", "&", "\u2028", "\u2029"):
        assert unsafe not in script.decode()
    assert _index_shard(script, 3) == json.loads(
        json.dumps(search.serialized(["h"], [search.postings(doc)]))
    )


def test_an_edit_rebuilds_its_index_shard_as_a_cold_build_would(
    tmp_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shards of one entry: the edit recomputes its own shard only, from this build's postings
    and the cached ones of the last build; without that cache, from the entry cache."""
    monkeypatch.setattr(search, "SHARD_SIZE", 1)
    made: list[int] = []
    script = search.terms_script

    def counted(number: int, ids: Sequence[str], entries: Sequence[search.Postings]) -> bytes:
        made.append(number)
        return script(number, ids, entries)

    monkeypatch.setattr(search, "terms_script", counted)
    site, cache = tmp_path / "site", tmp_path / "cache"
    build(Request(tmp_corpus, site, cache_root=cache))
    assert sorted(made) == [0, 1]
    beta = tmp_corpus / "beta-failure.yaml"
    beta.write_text(beta.read_text().replace("Beta failure in NCCL", "Beta failure in Gloo"))
    for lose in (False, True):
        if lose:
            beta.write_text(beta.read_text().replace("in Gloo", "in MPI"))
            for slot in cache.rglob("search-terms"):
                shutil.rmtree(slot)
        made.clear()
        build(Request(tmp_corpus, site, cache_root=cache))
        assert made == [1]  # alpha's shard is kept
        cold = dict(search.catalog_index(gather(tmp_corpus)[0]))
        for name in ("terms-0.js", "terms-1.js", "index.js", "text-1.js", "answers.js"):
            assert (site / "search" / name).read_bytes() == cold[f"search/{name}"], name
    assert b'"mpi"' in (site / "search" / "terms-1.js").read_bytes()
