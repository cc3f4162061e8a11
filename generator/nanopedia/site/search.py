"""The search index: what `theme/static/search.js` searches, as scripts that set globals.

Browsers refuse `fetch` from `file://`, so the data ships as JavaScript loaded by `<script>` tags
the first time a reader uses a search box. It must answer the first keystroke at once and search
everything within a second, at 10,000 entries from `file://` (`bench/search_bench.py`). Indexing
every field in the page took 2 to 3 s there; parsing MiniSearch's own serialization of the same
index a fraction of that (`search.js` loads it as `MiniSearch.loadJS` does, but leaves each
term's postings as parsed until a query reaches the term). So the build writes the index,
sharded by entry:

- `search/index.js` sets `window.NANOPEDIA_SEARCH`: what the first keystroke needs of every
  entry (title, error strings, former ids, id), the tags, the names of the shards, and the
  pattern of log prefixes (`LOG_PREFIX`) that pasted lines and error strings are compared
  without. A scan of it answers while the shards load, so it is kept small: each entry is one string
  (`RECORD_FIELDS` apart by tabs, list items by line breaks), which the page joins into one text
  to scan; the id is written as what its title does not already say (`compact_id`); the entries'
  tags wait for the text shards (the tags themselves are suggested at once). At 10,000 entries
  the same data as nested arrays, with ids and tags, was 2 MB that V8 took 70 ms to parse.
- `search/answers.js` sets `window.NANOPEDIA_SEARCH_ANSWERS`: every entry's quick answer (the
  first sentence of its summary), in the same order. Loaded once the first results show, not
  with `index.js`, so they need not wait for it (at 10,000 entries it is larger than `index.js`).
- `search/terms-<n>.js` each set one slot of `window.NANOPEDIA_SEARCH_INDEX`: the serialized
  MiniSearch index of `SHARD_SIZE` entries, every field. Shards are searched one by one and their
  hits merged by score (each scored with its own shard's term statistics, which differ little
  between shards of a thousand entries), so an edit recomputes the index of its own shard only.
- `search/text-<n>.js` each set one slot of `window.NANOPEDIA_SEARCH_TEXT`: tags, summary,
  symptoms and root causes of the same entries (`SHARD_FIELDS`), the text results show, one
  string per entry like `index.js`.

The serialization must be exactly what MiniSearch would build from the same documents with the
options of `search.js` (its default tokenizer, `processTerm` lowercasing and dropping
`STOP_WORDS`): `tests/js/search_index.test.js` proves it. `_SEPARATOR` is MiniSearch's token
separator (line breaks, Unicode punctuation and separators) spelled out for Python's `re`, which
has no Unicode classes; a test checks it against `unicodedata`. (A character that a later
Unicode version than Python's made punctuation splits words in the browser's queries only.)

Documents are plain text: markdown is reduced to the words a reader sees, so `**bf16**` is
found by `bf16`. Error strings get two fields of their own, boosted in ranking. `errors` holds
the lines that say the failure is this entry's: the messages its title quotes and the examples
of its decisive fingerprints. `mentions` holds the lines it only quotes: its other fingerprints'
examples (a symptom many failures share, a collateral line) and the backticked text of its
symptoms, which is how authors quote messages, often another entry's. A pasted line that an
entry's `errors` hold puts that entry above one that only mentions it (`search.js`, `owners`).

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

from nanopedia.content.catalog import Catalog, Links
from nanopedia.model import Entry
from nanopedia.site.joined import Joined, identity
from nanopedia.site.markdown import is_plain

#: Bumped when the layout of the data changes.
FORMAT_VERSION = 4
#: Globals the scripts assign; `search.js` reads them.
GLOBAL = "NANOPEDIA_SEARCH"
TEXT_GLOBAL = "NANOPEDIA_SEARCH_TEXT"
INDEX_GLOBAL = "NANOPEDIA_SEARCH_INDEX"
ANSWERS_GLOBAL = "NANOPEDIA_SEARCH_ANSWERS"
#: Folder of the index scripts inside the site, and the first script's name.
FOLDER = "search"
INDEX_FILE = f"{FOLDER}/index.js"
ANSWERS_FILE = f"{FOLDER}/answers.js"
#: Fields of a `Document`'s first part: short, highly ranked, in `search/index.js`.
KEY_FIELDS = ("id", "title", "tags", "errors", "mentions", "aliases")
#: Fields of its second part: long prose, in the text shards.
TEXT_FIELDS = ("summary", "symptoms", "causes")
#: An entry's record in `search/index.js`: the fields the first scan searches, most highly
#: ranked first (a hit there ends the scan of the entry), then the compact id, which it skips.
RECORD_FIELDS = ("title", "errors", "mentions", "aliases", "id")
#: An entry's record in its text shard.
SHARD_FIELDS = ("tags", "summary", "symptoms", "causes")
#: Fields of the records that hold lists (the items one per line).
LIST_FIELDS = ("errors", "mentions", "aliases", "tags", "symptoms", "causes")
#: Fields of the serialized index, in MiniSearch's field-id order (`search.js` reads them).
INDEXED_FIELDS = ("title", "errors", "mentions", "aliases", "tags", "symptoms", "causes", "summary")
#: Words too common to rank by: dropped from documents and queries alike (`search.js` reads them).
STOP_WORDS = frozenset(
    "a an and are as at be but by for from has have in into is it its of on or than that the "
    "then there these this to was were when which while with".split()
)
#: Entries per shard: about 1 MB of script each for the benchmark corpus, parsed in tens of ms.
SHARD_SIZE = 1000
#: The longest quick answer shown under a result's title.
ANSWER_MAX = 240

Document = tuple[list[object], list[object]]
"""One entry's search data: its values for `KEY_FIELDS`, then for `TEXT_FIELDS`."""
Postings = tuple[tuple[int, ...], dict[str, tuple[int, ...]]]
"""One entry's part of the index: the number of distinct tokens of each of `INDEXED_FIELDS`
(MiniSearch's field length), and each term's (field id, count) pairs, flattened."""

#: A parser (never a renderer) for reducing markdown to its text; rendering lives in markdown.py.
_PARSER = MarkdownIt("js-default")
#: What a log puts before an error line rather than the error: a rank (`[rank0]: `,
#: `[default3]:`), a date or time, a level, a glog header (`E0501 12:00:00.123 4242 file.cc:7]`).
#: `search.js` reads it from `search/index.js` (so it is written in the syntax Python's `re` and
#: JavaScript share) and strips it from pasted lines and error strings alike before comparing.
LOG_PREFIX = (
    r"^\s*(?:(?:\[[^\]]{1,40}\]"
    r"|\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?"
    r"|\d\d[-/]\d\d(?= \d\d?:\d\d)|\d\d?:\d\d:\d\d(?:[.,]\d+)?"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)(?= )"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d\d?(?= )"
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?![\w.])"
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]+\])[\s:|,-]*)+"
)
_LOG_PREFIX = re.compile(LOG_PREFIX, re.ASCII)
#: A quoted message in a title: "..." or `...`.
_TITLE_QUOTE = re.compile(r'"([^"]+)"|`([^`]+)`')
_SPACE = re.compile(r"\s+")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
#: The end of a summary's first sentence: a stop, then a space or the end.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
#: Unicode punctuation (P*) and separators (Z*), with CR and LF: MiniSearch's token separators.
_SEPARATOR = re.compile(
    "["
    + (
        r"\x0a\x0d\x20-\x23\x25-\x2a\x2c-\x2f\x3a\x3b\x3f\x40\x5b-\x5d\x5f\x7b\x7d\xa0\xa1\xa7\xab"
        r"\xb6\xb7\xbb\xbf\u037e\u0387\u055a-\u055f\u0589\u058a\u05be\u05c0\u05c3\u05c6"
        r"\u05f3\u05f4\u0609\u060a\u060c\u060d\u061b\u061d-\u061f\u066a-\u066d\u06d4\u0700-\u070d"
        r"\u07f7-\u07f9\u0830-\u083e\u085e\u0964\u0965\u0970\u09fd\u0a76\u0af0\u0c77\u0c84\u0df4"
        r"\u0e4f\u0e5a\u0e5b\u0f04-\u0f12\u0f14\u0f3a-\u0f3d\u0f85\u0fd0-\u0fd4\u0fd9\u0fda"
        r"\u104a-\u104f\u10fb\u1360-\u1368\u1400\u166e\u1680\u169b\u169c\u16eb-\u16ed\u1735\u1736"
        r"\u17d4-\u17d6\u17d8-\u17da\u1800-\u180a\u1944\u1945\u1a1e\u1a1f\u1aa0-\u1aa6"
        r"\u1aa8-\u1aad\u1b5a-\u1b60\u1b7d\u1b7e\u1bfc-\u1bff\u1c3b-\u1c3f\u1c7e\u1c7f"
        r"\u1cc0-\u1cc7\u1cd3\u2000-\u200a\u2010-\u2029\u202f-\u2043\u2045-\u2051\u2053-\u205f"
        r"\u207d\u207e\u208d\u208e\u2308-\u230b\u2329\u232a\u2768-\u2775\u27c5\u27c6\u27e6-\u27ef"
        r"\u2983-\u2998\u29d8-\u29db\u29fc\u29fd\u2cf9-\u2cfc\u2cfe\u2cff\u2d70\u2e00-\u2e2e"
        r"\u2e30-\u2e4f\u2e52-\u2e5d\u3000-\u3003\u3008-\u3011\u3014-\u301f\u3030\u303d\u30a0"
        r"\u30fb\ua4fe\ua4ff\ua60d-\ua60f\ua673\ua67e\ua6f2-\ua6f7\ua874-\ua877\ua8ce\ua8cf"
        r"\ua8f8-\ua8fa\ua8fc\ua92e\ua92f\ua95f\ua9c1-\ua9cd\ua9de\ua9df\uaa5c-\uaa5f\uaade\uaadf"
        r"\uaaf0\uaaf1\uabeb\ufd3e\ufd3f\ufe10-\ufe19\ufe30-\ufe52\ufe54-\ufe61\ufe63\ufe68"
        r"\ufe6a\ufe6b\uff01-\uff03\uff05-\uff0a\uff0c-\uff0f\uff1a\uff1b\uff1f\uff20\uff3b-\uff3d"
        r"\uff3f\uff5b\uff5d\uff5f-\uff65\U00010100-\U00010102\U0001039f\U000103d0\U0001056f"
        r"\U00010857\U0001091f\U0001093f\U00010a50-\U00010a58\U00010a7f\U00010af0-\U00010af6"
        r"\U00010b39-\U00010b3f\U00010b99-\U00010b9c\U00010ead\U00010f55-\U00010f59"
        r"\U00010f86-\U00010f89\U00011047-\U0001104d\U000110bb\U000110bc\U000110be-\U000110c1"
        r"\U00011140-\U00011143\U00011174\U00011175\U000111c5-\U000111c8\U000111cd\U000111db"
        r"\U000111dd-\U000111df\U00011238-\U0001123d\U000112a9\U0001144b-\U0001144f"
        r"\U0001145a\U0001145b\U0001145d\U000114c6\U000115c1-\U000115d7\U00011641-\U00011643"
        r"\U00011660-\U0001166c\U000116b9\U0001173c-\U0001173e\U0001183b\U00011944-\U00011946"
        r"\U000119e2\U00011a3f-\U00011a46\U00011a9a-\U00011a9c\U00011a9e-\U00011aa2"
        r"\U00011c41-\U00011c45\U00011c70\U00011c71\U00011ef7\U00011ef8\U00011fff"
        r"\U00012470-\U00012474\U00012ff1\U00012ff2\U00016a6e\U00016a6f\U00016af5"
        r"\U00016b37-\U00016b3b\U00016b44\U00016e97-\U00016e9a\U00016fe2\U0001bc9f"
        r"\U0001da87-\U0001da8b\U0001e95e\U0001e95f"
    )
    + "]+"
)
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


def answer(summary: str) -> str:
    """The quick answer a result shows: the summary's first sentence, at most `ANSWER_MAX`
    characters (cut at a word)."""
    end = _SENTENCE_END.search(summary)
    first = summary[: end.end()] if end else summary
    if len(first) <= ANSWER_MAX:
        return first
    return first[:ANSWER_MAX].rsplit(" ", 1)[0] + " …"


def _unique(items: Iterable[str]) -> list[str]:
    """Non-empty items in first-seen order without repeats."""
    return list(dict.fromkeys(item for item in items if item))


def title_quotes(title: str) -> list[str]:
    """The messages a title quotes ("..." or `...`). A quoted single word (`auto`, `nan`) names
    a setting or a value rather than an error line, and is left to the title's own ranking."""
    quotes = (_one_line(a or b) for a, b in _TITLE_QUOTE.findall(title))
    return [q for q in quotes if " " in q]


def document(entry: Entry) -> Document:
    """One entry's search data; depends on the entry alone, so the build caches it.

    Error strings are the exact messages the entry documents, without log prefixes
    (`LOG_PREFIX`): first `errors`, the messages its title quotes and the log lines its decisive
    fingerprints must match; then `mentions`, the lines its other fingerprints must match and
    the backticked text of its symptoms.
    """
    symptoms = [inline_text(s.text) for s in entry.symptoms]

    def logged(decisive: bool) -> list[str]:
        return [
            _one_line(_LOG_PREFIX.sub("", line))
            for fp in entry.fingerprints
            if (fp.indicates == "decisive") == decisive
            for line in fp.must_match
        ]

    errors = _unique(title_quotes(entry.title) + logged(True))
    quoted = [code for _, spans in symptoms for code in spans]
    owned = set(errors)
    summary = plain_text(entry.summary)
    key: list[object] = [
        entry.id,
        entry.title,
        list(entry.tags),
        errors,
        [line for line in _unique(logged(False) + quoted) if line not in owned],
        list(entry.aliases),
    ]
    text: list[object] = [
        summary,
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


def title_slug(title: str) -> str:
    """What `search.js` makes of a title to decode a `compact_id`: lower case, every run of
    other characters than ASCII letters and digits one hyphen. Only for ASCII titles (else
    empty), whose lower case is the same in Python and JavaScript."""
    return _NOT_SLUG.sub("-", title.lower()) if title.isascii() else ""


def compact_id(entry_id: str, title: str) -> str:
    """The id as `<n>:<rest>`: its first n characters are those of `title_slug(title)`. Ids are
    often made from titles, and spelled in full they were a third of `search/index.js`."""
    slug = title_slug(title)
    shared = 0
    while shared < min(len(slug), len(entry_id)) and slug[shared] == entry_id[shared]:
        shared += 1
    return f"{shared}:{entry_id[shared:]}"


def _packed(values: Mapping[str, object], names: Sequence[str]) -> str:
    """Fields `names` of a document as one string: fields apart by a tab, list items by a line
    break (values are put on one line, so neither occurs in them; empty items are left out)."""
    return "\t".join(
        "\n".join(filter(None, map(_one_line, v))) if isinstance(v, list) else _one_line(str(v))
        for v in (values[name] for name in names)
    )


def records(doc: Document) -> tuple[bytes, bytes, bytes]:
    """An entry's record in `search/index.js`, in its text shard and in `search/answers.js`
    (cached per entry)."""
    values = dict(zip(KEY_FIELDS + TEXT_FIELDS, doc[0] + doc[1], strict=True))
    title = _one_line(str(values["title"]))
    values |= {"title": title, "id": compact_id(str(values["id"]), title)}
    return (
        script_json(_packed(values, RECORD_FIELDS)).encode(),
        script_json(_packed(values, SHARD_FIELDS)).encode(),
        script_json(answer(str(values["summary"]))).encode(),
    )


def _field_value(value: object) -> str:
    """A field as `search.js` hands it to MiniSearch: lists joined by newlines."""
    return "\n".join(value) if isinstance(value, list) else str(value)


def postings(doc: Document) -> Postings:
    """An entry's terms as MiniSearch's `add` counts them (cached per entry by the build)."""
    values = dict(zip(KEY_FIELDS + TEXT_FIELDS, doc[0] + doc[1], strict=True))
    lengths: list[int] = []
    counts: dict[str, dict[int, int]] = {}
    for field_id, name in enumerate(INDEXED_FIELDS):
        tokens = _SEPARATOR.split(_field_value(values[name]))
        lengths.append(len(set(tokens)))
        for token in tokens:
            term = token.lower()
            if term and term not in STOP_WORDS:
                fields = counts.setdefault(term, {})
                fields[field_id] = fields.get(field_id, 0) + 1
    return tuple(lengths), {
        t: tuple(x for pair in f.items() for x in pair) for t, f in counts.items()
    }


def _number(value: float) -> float | int:
    """A float as JavaScript's JSON writes it: whole numbers without a fraction."""
    return int(value) if value.is_integer() else value


def serialized(ids: Sequence[str], entries: Sequence[Postings]) -> dict[str, object]:
    """What `MiniSearch.toJSON` gives for these entries added in this order (format 2)."""
    averages = [0.0] * len(INDEXED_FIELDS)
    index: dict[str, dict[int, dict[int, int]]] = {}
    for short, (lengths, terms) in enumerate(entries):
        for field_id, length in enumerate(lengths):
            # MiniSearch's running mean, operation for operation, so the floats are the same.
            averages[field_id] = (averages[field_id] * short + length) / (short + 1)
        for term, pairs in terms.items():
            fields = index.get(term)
            if fields is None:
                index[term] = fields = {}
            for at in range(0, len(pairs), 2):
                docs = fields.get(pairs[at])
                if docs is None:
                    fields[pairs[at]] = docs = {}
                docs[short] = pairs[at + 1]
    return {
        "averageFieldLength": [_number(a) for a in averages],
        "dirtCount": 0,
        "documentCount": len(ids),
        "documentIds": dict(enumerate(ids)),
        "fieldIds": {name: i for i, name in enumerate(INDEXED_FIELDS)},
        "fieldLength": {i: list(lengths) for i, (lengths, _) in enumerate(entries)},
        "index": sorted(index.items()),
        "nextId": len(ids),
        "serializationVersion": 2,
        "storedFields": {},
    }


def terms_file(number: int) -> str:
    """Site path of index shard `number`."""
    return f"{FOLDER}/terms-{number}.js"


def terms_script(number: int, ids: Sequence[str], entries: Sequence[Postings]) -> bytes:
    """Index shard `number` as a script. V8 parses a large literal given to `JSON.parse` faster
    than the same object written as code."""
    text = (
        json.dumps(
            serialized(ids, entries), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        .replace("\\", "\\\\")
        .replace("'", "\\'")
    )
    literal = _UNSAFE_RE.sub(lambda m: _UNSAFE[m.group()], text)
    head = f"(window.{INDEX_GLOBAL}=window.{INDEX_GLOBAL}||[])[{number}]=JSON.parse('"
    return f"{head}{literal}');\n".encode()


def shards(count: int) -> list[range]:
    """The positions of the entries of each shard, for `count` entries in id order."""
    return [range(i, min(i + SHARD_SIZE, count)) for i in range(0, count, SHARD_SIZE)]


def index_files(
    keys: Sequence[str],
    texts: Sequence[str],
    answers: Sequence[str],
    fresh: Mapping[str, bytes],
    links: Links,
) -> Iterator[tuple[str, Joined]]:
    """The joined scripts (`index.js`, `answers.js`, text shards) from every entry's three
    `records` (named, in the id order of `links`; `fresh` has the bytes of those made in this
    build).
    The index shards are computed from postings: `terms_script`."""
    parts = shards(len(texts))
    rest = {
        "fields": list(RECORD_FIELDS),
        "prefix": LOG_PREFIX,
        "lists": list(LIST_FIELDS),
        "index": {
            "fields": list(INDEXED_FIELDS),
            "shards": [terms_file(n).removeprefix(f"{FOLDER}/") for n in range(len(parts))],
            "stop": sorted(STOP_WORDS),
        },
        "tags": [[slug, t.title, len(links.by_tag[slug])] for slug, t in links.tags.items()],
        "text": {
            "fields": list(SHARD_FIELDS),
            "shard_size": SHARD_SIZE,
            "shards": [shard_file(n).removeprefix(f"{FOLDER}/") for n in range(len(parts))],
        },
        "version": FORMAT_VERSION,
    }
    # "docs" sorts first among the keys, so the object is its records between a head and a tail
    yield (
        INDEX_FILE,
        Joined(
            f'window.{GLOBAL}={{"docs":['.encode(),
            keys,
            fresh,
            f"],{script_json(rest)[1:]};\n".encode(),
        ),
    )
    yield ANSWERS_FILE, Joined(f"window.{ANSWERS_GLOBAL}=[".encode(), answers, fresh, b"];\n")
    for n, shard in enumerate(parts):
        head = f"(window.{TEXT_GLOBAL}=window.{TEXT_GLOBAL}||[])[{n}]=["
        yield shard_file(n), Joined(head.encode(), texts[shard.start : shard.stop], fresh, b"];\n")


def catalog_index(catalog: Catalog) -> Iterator[tuple[str, bytes]]:
    """The index scripts of a catalog, computing every document (uncached)."""
    docs = [document(e) for e in catalog.entries]
    made = [records(d) for d in docs]
    keys, texts, answers = ([identity(r[kind]) for r in made] for kind in range(3))
    fresh = {identity(data): data for r in made for data in r}
    for path, made_file in index_files(keys, texts, answers, fresh, catalog.links):
        yield path, b"".join(made_file.parts())
    ids = [e.id for e in catalog.entries]
    for n, shard in enumerate(shards(len(docs))):
        yield (
            terms_file(n),
            terms_script(n, ids[shard.start : shard.stop], [postings(docs[i]) for i in shard]),
        )
