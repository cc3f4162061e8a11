// A site's search under Node: the search scripts the build writes (generator/nanopedia/site/search.py)
// for some documents, and pages that run theme/static/search.js on them with the DOM of
// tests/js/dom.js, as the header box or the results page does. Shared by the Node tests; not a
// test file itself.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { Document, build } = require('./dom.js');
const { page, run } = require('./page.js');
const { python, root } = require('./python.js');

const SEARCH_JS = fs.readFileSync(path.join(root, 'theme/static/search.js'), 'utf8');
const LIBRARY = 'static/vendor/minisearch/minisearch.js';
const MINISEARCH = fs.readFileSync(path.join(root, 'theme', LIBRARY), 'utf8');

/* The search files of a site whose entries are `docs` (search.document's [key fields, text
   fields] as objects by field name, in id order) and whose tags are `tags` ([slug, title,
   entries]), by their path in the site. */
function searchFiles(docs, tags = []) {
  const files = python(`
import json, sys
from types import SimpleNamespace
from nanopedia.site import search
from nanopedia.site.joined import identity

given = json.load(sys.stdin)
docs = [([d[k] for k in search.KEY_FIELDS], [d[k] for k in search.TEXT_FIELDS]) for d in given["docs"]]
made = [search.records(d) for d in docs]
names = [[identity(r[kind]) for r in made] for kind in range(3)]
fresh = {identity(data): data for r in made for data in r}
links = SimpleNamespace(tags={t[0]: SimpleNamespace(title=t[1]) for t in given["tags"]},
                        by_tag={t[0]: [None] * t[2] for t in given["tags"]})
out = {p: b"".join(j.parts()).decode() for p, j in search.index_files(*names, fresh, links)}
ids = [d[0][0] for d in docs]
for n, shard in enumerate(search.shards(len(docs))):
    out[search.terms_file(n)] = search.terms_script(
        n, ids[shard.start:shard.stop], [search.postings(docs[i]) for i in shard]).decode()
print(json.dumps(out))
`, { docs, tags });
  return { ...files, [LIBRARY]: MINISEARCH };
}

/* A document of search.document's fields; `fields` overrides the empty defaults. */
function doc(id, title, fields = {}) {
  return {
    id, title, tags: [], errors: [], mentions: [], aliases: [], summary: '', symptoms: [],
    causes: [], ...fields
  };
}

/*
 * A page with a search form: the header box, or the results page (`results: true`) at
 * `?q=<query>` (or with the location's fragment `hash`). `files`: the site's search files, served when search.js asks for them (as
 * tasks: `flush` runs them); `onPage`: paths whose scripts the page has already run (the
 * single-file bundle has them all); `focused`: the box has the focus when search.js starts (as
 * search-boot.js loads it on the first focus); `value`: what the box holds then; `loading`: the
 * document is still being parsed; `status: false`, a form without a status line; `pasted`: a
 * paste search-boot.js kept before search.js came (form.pasted); `storage`: the tab's
 * sessionStorage (by default one that keeps what it is given, in `stored`).
 */
function openPage(files, {
  results = false, query = '', hash = '', onPage = [], focused = false, value = '', loading = false,
  status = true, pasted = undefined, storage = undefined
} = {}) {
  const tasks = [];
  let window = null;
  const document = new Document({
    files, queue: (fn) => tasks.push(fn), run: (code) => run(window, code)
  });
  const input = build(document, 'input', { id: 'q', class: 'search-input', role: 'combobox' });
  const list = build(document, 'ul', { id: results ? 'search-results' : 'search-suggestions', role: 'listbox' });
  list.hidden = !results;
  const line = build(document, 'p', { class: 'search-status', role: 'status' });
  const form = build(document, 'form', {
    'data-search': true, 'data-page': results, 'data-library': LIBRARY,
    'data-index': 'search/index.js', 'data-answers': 'search/answers.js',
    'data-entry': 'entries/{id}.html', 'data-tag': 'tags/{id}.html', 'data-results': 'search.html',
    'data-diagnose': 'diagnose.html'
  }, input, list, ...(status ? [line] : []));
  form.hidden = true;
  if (pasted !== undefined) {
    form.pasted = pasted;
    form.onpaste = () => {};
  }
  const stored = new Map();
  const sessionStorage = storage || { setItem: (k, v) => stored.set(k, String(v)) };
  document.body.appendChild(form);
  if (focused) document.activeElement = input;
  if (loading) document.readyState = 'loading';
  input.value = value;
  const location = { hash, search: results && query ? `?q=${encodeURIComponent(query)}` : '', href: '' };
  window = page([], {
    document, location, URLSearchParams, sessionStorage, setTimeout: (fn) => tasks.push(fn)
  });
  for (const p of onPage) run(window, files[p]);
  run(window, SEARCH_JS);

  /* Runs the page's tasks (script loads, deferred results) until none is left. */
  function flush() {
    for (let n = 0; tasks.length; n++) {
      if (n > 1000) throw new Error('the page keeps making tasks');
      tasks.shift()();
    }
  }

  /* Types `text` into the box (as one input event). */
  function type(text) {
    input.value = text;
    input.dispatch('input');
  }

  function key(name) {
    return input.dispatch('keydown', { key: name });
  }

  /* Pastes `text` over what the box holds, as a browser does: the paste event, then the input
     event with the box's new value (a text input keeps the lines joined by spaces). */
  function paste(text) {
    input.dispatch('paste', { clipboardData: { getData: (kind) => (kind === 'text/plain' ? text : '') } });
    type(text.replace(/\r\n|\r|\n/g, ' '));
  }

  /* The options shown: each entry's title, answer, field label and text, and its link, with
     marked words in [brackets]; a tag or the link to all results as its text. */
  function shown() {
    const marked = (el) => el.childNodes.map((n) => (n.tagName === 'MARK' ? `[${n.textContent}]` : n.textContent)).join('');
    return list.querySelectorAll('[role=option]').map((a) => {
      const kind = a.parentNode.className;
      if (kind !== 'search-entry') return { kind, text: a.textContent, href: a.href };
      const title = a.querySelector('.search-title');
      const answer = a.querySelector('.search-answer');
      const line = a.querySelector('.search-label');
      return {
        kind, href: a.href, title: marked(title), answer: answer ? answer.textContent : null,
        label: line ? line.textContent : null,
        text: line ? marked(line.parentNode.childNodes[2]) : null,
        code: line ? line.parentNode.childNodes[2].tagName === 'CODE' : null
      };
    });
  }

  return { window, document, form, input, list, status: line, flush, type, key, paste, shown, tasks, stored };
}

module.exports = { searchFiles, openPage, doc, LIBRARY };
