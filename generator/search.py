"""The search index: what `theme/static/search.js` searches, as scripts that set globals.

Browsers refuse `fetch` from `file://`, so the data ships as JavaScript loaded by `<script>` tags.
The browser indexes it with the vendored MiniSearch the first time a reader uses a search box.
Measured in Chromium at 10,000 benchmark entries (11.6 MB of text; `bench/search_bench.py`):
indexing every field at once took 2 to 3 s, the short fields that rank highest (title, error
strings, tags, aliases) about 0.5 s. A serialized MiniSearch index (12.6 MB more, to load besides
the text shown in results) took 1 to 1.5 s to load and would tie this file to MiniSearch's
private format and tokenizer. So the index is sharded by field and by entry:

- `search/index.js` sets `window.NANOPEDIA_SEARCH`: the short fields of every entry, the tags and
  the names of the text shards. It is indexed first and answers the first query.
- `search/text-<n>.js` each set one slot of `window.NANOPEDIA_SEARCH_TEXT`: summary, symptoms and
  root causes of `SHARD_SIZE` entries. They load after the first results; the full index then
  replaces the first one, without blocking the page for long.

Documents are positional arrays (field names are sent once) of plain text: markdown is reduced to
the words a reader sees, so `**bf16**` is found by `bf16`. Error strings get a field of their own,
boosted in ranking: the log lines fingerprints must match and the backticked text of symptoms,
which is how authors quote exact messages.

The output is deterministic (entries by id, sorted keys) and safe to inline in an HTML `<script>`
element: `<`, `>`, `&` and the JavaScript line separators are written as `\\u` escapes, so entry
text such as `</script>` cannot end the element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from .catalog import Catalog, Links
from .joined import Joined, identity
from .markdown import is_plain
from .model import Entry

#: Bumped when the layout of the data changes.
FORMAT_VERSION = 1
#: Globals the scripts assign; `search.js` reads them.
GLOBAL = "NANOPEDIA_SEARCH"
TEXT_GLOBAL = "NANOPEDIA_SEARCH_TEXT"
#: Folder of the index scripts inside the site, and the first script's name.
FOLDER = "search"
INDEX_FILE = f"{FOLDER}/index.js"
#: Fields of `search/index.js`, in array order: short, highly ranked, indexed first.
KEY_FIELDS = ("id", "title", "tags", "errors", "aliases")
#: Fields of the text shards, in array order: long prose, indexed once the first results show.
TEXT_FIELDS = ("summary", "symptoms", "causes")
#: Entries per text shard: about 1 MB of script for the benchmark corpus, parsed in tens of ms.
SHARD_SIZE = 1000

Document = tuple[list[object], list[object]]
"""One entry's search data: its values for `KEY_FIELDS`, then for `TEXT_FIELDS`."""

#: A parser (never a renderer) for reducing markdown to its text; rendering lives in markdown.py.
_PARSER = MarkdownIt("js-default")
#: A log prefix that names a rank or a timestamp rather than the error: `[rank0]: `, `[default3]:`.
_LOG_PREFIX = re.compile(r"^\s*(?:\[[^\]]{1,40}\]:?\s*)+")
_SPACE = re.compile(r"\s+")
_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def _inline_text(tokens: Iterable[Token], code: list[str]) -> Iterator[str]:
    """The visible text of inline tokens; backticked spans are also collected into `code`."""
    for tok in tokens:
        if tok.type in ("text", "code_inline"):
            yield tok.content
            if tok.type == "code_inline":
                code.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            yield " "
        elif tok.children:
            yield from _inline_text(tok.children, code)


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def plain_text(markdown: str) -> str:
    """Block markdown reduced to the words a reader sees, on one line (code blocks included)."""
    if is_plain(markdown):  # renders as itself: no need to parse it (most short fields)
        return _one_line(markdown)
    parts: list[str] = []
    for tok in _PARSER.parse(markdown):
        if tok.type == "inline":
            parts.append("".join(_inline_text(tok.children or (), [])))
        elif tok.type in ("fence", "code_block"):
            parts.append(tok.content)
    return _one_line(" ".join(parts))


def inline_text(markdown: str) -> tuple[str, list[str]]:
    """Inline markdown as plain text, plus its backticked spans (how authors quote messages).

    Inline fields hold no blocks, so the cheaper inline parser is enough (a third of the time).
    """
    if is_plain(markdown):
        return _one_line(markdown), []
    code: list[str] = []
    tokens = _PARSER.parseInline(markdown)
    text = "".join(_inline_text(tokens[0].children or () if tokens else (), code))
    return _one_line(text), [_one_line(c) for c in code]


def _unique(items: Iterable[str]) -> list[str]:
    """Non-empty items in first-seen order without repeats."""
    return list(dict.fromkeys(item for item in items if item))


def document(entry: Entry) -> Document:
    """One entry's search data; depends on the entry alone, so the build caches it.

    Errors are the exact messages the entry documents: the log lines its fingerprints must match
    (without rank or timestamp prefixes), then the backticked text of its symptoms.
    """
    symptoms = [inline_text(s.text) for s in entry.symptoms]
    logged = [_LOG_PREFIX.sub("", line) for fp in entry.fingerprints for line in fp.must_match]
    quoted = [code for _, spans in symptoms for code in spans]
    key: list[object] = [
        entry.id,
        entry.title,
        list(entry.tags),
        _unique([_one_line(line) for line in logged] + quoted),
        list(entry.aliases),
    ]
    text: list[object] = [
        plain_text(entry.summary),
        _unique(text for text, _ in symptoms),
        _unique(c.title for c in entry.root_causes),
    ]
    return key, text


def script_json(data: object) -> str:
    """Deterministic JSON that is also safe inside an HTML `<script>` element."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _UNSAFE_RE.sub(lambda m: _UNSAFE[m.group()], text)


def shard_file(number: int) -> str:
    """Site path of text shard `number`."""
    return f"{FOLDER}/text-{number}.js"


def records(doc: Document) -> tuple[bytes, bytes]:
    """An entry's record in `search/index.js` and in its text shard (cached per entry)."""
    return script_json(doc[0]).encode(), script_json(doc[1]).encode()


def index_files(keys: Sequence[str], texts: Sequence[str], fresh: Mapping[str, bytes],
                links: Links) -> Iterator[tuple[str, Joined]]:
    """The index scripts from every entry's two `records` (named, in the id order of `links`;
    `fresh` has the bytes of those made in this build)."""
    shards = [texts[i : i + SHARD_SIZE] for i in range(0, len(texts), SHARD_SIZE)]
    rest = {
        "fields": list(KEY_FIELDS),
        "tags": [[slug, t.title, len(links.by_tag[slug])] for slug, t in links.tags.items()],
        "text": {
            "fields": list(TEXT_FIELDS),
            "shard_size": SHARD_SIZE,
            "shards": [shard_file(n).removeprefix(f"{FOLDER}/") for n in range(len(shards))],
        },
        "version": FORMAT_VERSION,
    }
    # "docs" sorts first among the keys, so the object is its records between a head and a tail
    yield INDEX_FILE, Joined(f'window.{GLOBAL}={{"docs":['.encode(), keys, fresh,
                             f"],{script_json(rest)[1:]};\n".encode())
    for n, shard in enumerate(shards):
        head = f"(window.{TEXT_GLOBAL}=window.{TEXT_GLOBAL}||[])[{n}]=["
        yield shard_file(n), Joined(head.encode(), shard, fresh, b"];\n")


def catalog_index(catalog: Catalog) -> Iterator[tuple[str, bytes]]:
    """The index scripts of a catalog, computing every document (uncached)."""
    pairs = [records(document(e)) for e in catalog.entries]
    keys, texts = [identity(k) for k, _ in pairs], [identity(t) for _, t in pairs]
    fresh = dict(zip(keys + texts, [k for k, _ in pairs] + [t for _, t in pairs], strict=True))
    files = index_files(keys, texts, fresh, catalog.links)
    return ((path, b"".join(made.parts())) for path, made in files)
