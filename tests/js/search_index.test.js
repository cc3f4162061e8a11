// The search index the build serializes (generator/nanopedia/site/search.py) is exactly what MiniSearch builds
// in the browser from the same documents with the options of theme/static/search.js: every
// repository entry, the fixture corpus, and documents made to trip a tokenizer (punctuation of
// other scripts, case mappings, stop words, words that name Object's own properties, text
// that could end a <script> element, ids with an apostrophe, which the index shard's
// single-quoted literal must escape). Each shard script is run as the page runs it, so its
// string escaping is tested too. The packed records of search/index.js and the text shards
// read back, as results read them, to every field of every entry, the id decoded from its
// compact form. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { page } = require('./page.js');
const { python, root } = require('./python.js');
const MiniSearch = require(path.join(root, 'theme/static/vendor/minisearch/minisearch.js'));

const built = python(`
import json
from pathlib import Path
from types import SimpleNamespace
from nanopedia.site.joined import identity
from nanopedia.site import search
from nanopedia.content.corpus import gather

HOSTILE = [
    "Hostile </script><img src=x onerror='alert(1)'> \\\\ back\\\\slash \\"quoted\\"",
    "constructor __proto__ toString hasOwnProperty valueOf",
    "\\u0130stanbul \\u03a3\\u0391\\u03a3 stra\\u00dfe NA\\u00cfVE \\u2014",
    "\\u201csmart\\u201d \\u00abguill\\u00bb full\\u3002width\\uff0cpunct \\u00a0nbsp",
    "\\u2028line\\u2029para\\ttab \\U0001f525fire \\u2011dash",
    "The THE the a An of: in; on, (paren) [rank0]: x_y-z.w 1e-3 v2.1.0 ",
    "",
]


def hostile(n, text):
    key = [f"hostile-{n}'s", text, [f"tag-{n}", "torch.compile"], [text, text.upper()], [text[::-1]],
           []]
    return key, [text + " " + text, [text], [text[::-1]]]


def named(doc):
    return dict(zip(search.KEY_FIELDS + search.TEXT_FIELDS, doc[0] + doc[1], strict=True))


def shown(doc):
    """What a result reads of a document: every field on one line, lists without empty items."""
    one = search._one_line
    return {k: [one(x) for x in v if one(x)] if isinstance(v, list) else one(v)
            for k, v in named(doc).items()}


def records(files, docs):
    texts = sorted((k for k in files if k.startswith("search/text-")),
                   key=lambda k: int(k[len("search/text-"):-3]))
    return {"head": files[search.INDEX_FILE].decode(),
            "texts": [files[k].decode() for k in texts], "entries": [shown(d) for d in docs]}


out = {"shards": [], "records": []}
for folder in ("entries", "tests/fixtures/corpus"):
    catalog = gather(Path(folder))[0]
    files = dict(search.catalog_index(catalog))
    out.setdefault("head", files[search.INDEX_FILE].decode())
    docs = [search.document(e) for e in catalog.entries]
    out["records"].append(records(files, docs))
    for n, shard in enumerate(search.shards(len(docs))):
        out["shards"].append({"docs": [named(docs[i]) for i in shard],
                              "script": files[search.terms_file(n)].decode(), "number": n})
docs = [hostile(n, t) for n, t in enumerate(HOSTILE)]
script = search.terms_script(0, [d[0][0] for d in docs], [search.postings(d) for d in docs])
out["shards"].append({"docs": [named(d) for d in docs], "script": script.decode(), "number": 0})
made = [search.records(d) for d in docs]
names = [[identity(r[kind]) for r in made] for kind in range(3)]
fresh = {identity(data): data for r in made for data in r}
links = SimpleNamespace(tags={}, by_tag={})
files = {path: b"".join(j.parts()) for path, j in search.index_files(*names, fresh, links)}
out["records"].append(records(files, docs))
print(json.dumps(out))
`);

/* The page's globals after running scripts the way the browser does (a page without forms). */
function run(...scripts) {
  const document = {
    readyState: 'complete', addEventListener() {}, querySelectorAll() { return []; }
  };
  return page(scripts, { document });
}

const searchPage = run(fs.readFileSync(path.join(root, 'theme/static/search.js'), 'utf8'), built.head);
const data = searchPage.NANOPEDIA_SEARCH;
const options = searchPage.NanopediaSearchOptions(data);
searchPage.MiniSearch = MiniSearch; // what the page's loader builds on

/* Search results without what depends on the order terms were added in: the order of the
   derived terms a fuzzy query reached, and the last bits of sums of their scores. */
function comparable(results) {
  return results.map((r) => ({
    id: r.id, score: r.score.toPrecision(10), terms: [...r.terms].sort(),
    match: Object.keys(r.match).sort().map((t) => [t, [...r.match[t]].sort()])
  }));
}

/* A serialization with its terms in one order (MiniSearch writes them in its tree's order). */
function normalised(js) {
  const copy = JSON.parse(JSON.stringify(js));
  copy.index.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return copy;
}

built.records.forEach((corpus, k) => {
  test(`corpus ${k}: every record reads back to its entry`, () => {
    const window = run(fs.readFileSync(path.join(root, 'theme/static/search.js'), 'utf8'),
                       corpus.head, ...corpus.texts);
    const data = window.NANOPEDIA_SEARCH;
    assert.strictEqual(data.docs.length, corpus.entries.length);
    corpus.entries.forEach((entry, at) => {
      const read = JSON.parse(JSON.stringify(window.NanopediaSearchEntry(data, at)));
      assert.deepStrictEqual(read, entry, entry.id);
    });
  });
});

test('the repository and the fixtures give shards to compare', () => {
  assert.ok(built.shards.length >= 3);
  assert.ok(built.shards[0].docs.length > 5);
});

built.shards.forEach((shard, k) => {
  test(`shard ${k}: the build's index is MiniSearch's own`, () => {
    const loaded = run(shard.script).NANOPEDIA_SEARCH_INDEX[shard.number];
    const mini = new MiniSearch(options);
    mini.addAll(shard.docs);
    assert.deepStrictEqual(normalised(loaded), normalised(mini.toJSON()));
  });

  test(`shard ${k}: searching the loaded index gives what searching the built one does`, () => {
    const loaded = MiniSearch.loadJS(run(shard.script).NANOPEDIA_SEARCH_INDEX[shard.number],
                                     options);
    const mini = new MiniSearch(options);
    mini.addAll(shard.docs);
    const queries = shard.docs.slice(0, 5).map((doc) => doc.title).concat(['dtype', 'nccl tim']);
    for (const q of queries) {
      const opts = { prefix: true, fuzzy: 0.2, boost: { title: 4, errors: 4 } };
      assert.deepStrictEqual(comparable(loaded.search(q, opts)),
                             comparable(mini.search(q, opts)), q);
    }
  });

  test(`shard ${k}: the page's lazy loader searches exactly as MiniSearch.loadJS does`, () => {
    const js = run(shard.script).NANOPEDIA_SEARCH_INDEX[shard.number];
    const lazy = searchPage.NanopediaSearchLoad(js, options);
    const eager = MiniSearch.loadJS(js, options);
    const words = shard.docs.slice(0, 8).map((doc) => doc.title);
    const queries = words.concat(words.map((t) => t.slice(0, 5)), ['dtype', 'nccl tim', 'tmieout',
      'constructor', '__proto__', 'zzzz-not-a-term']);
    const variants = [searchPage.NanopediaSearchQuery('AND'), searchPage.NanopediaSearchQuery('OR'),
      { prefix: true, fuzzy: 0.2 }, { fields: ['title', 'errors'] }];
    let hits = 0;
    /* Twice over: the second time reads the Maps the first one made. */
    for (const round of [1, 2]) {
      for (const q of queries) {
        for (const opts of variants) {
          const got = lazy.search(q, opts);
          assert.deepStrictEqual(got, eager.search(q, opts), `${q} (round ${round})`);
          hits += got.length;
        }
      }
    }
    assert.ok(hits > 0);
    assert.strictEqual(lazy.documentCount, eager.documentCount);
    assert.strictEqual(lazy.termCount, eager.termCount);
  });
});
