// The search box and the results page as a reader uses them, theme/static/search.js run with
// the DOM of tests/js/dom.js on the search files the build writes for the documents of
// search_docs.js: what a result shows (title and words marked, quick answer, the field that
// matched, cut around the match), the options and their links, the keys, and how the page loads
// the index (the first scan, then the whole index, and what it says when a script is missing).
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { searchFiles, openPage, doc, LIBRARY } = require('./search_site.js');
const { run } = require('./page.js');
const { DOCS, TAGS, LONG_SUMMARY } = require('./search_docs.js');

const FILES = searchFiles(DOCS, TAGS);
const UNQUOTED = 'No entry quotes this error exactly; closest matches:';

/* A results page for `query` with everything loaded. */
function results(query, files = FILES) {
  const p = openPage(files, { results: true, query });
  p.flush();
  return p;
}

/* The header box with `text` typed and everything loaded. */
function box(text, files = FILES) {
  const p = openPage(files);
  p.input.dispatch('focus');
  p.type(text);
  p.flush();
  return p;
}

test('a result shows its title, its quick answer and the field that matched, words marked', () => {
  const p = results('fragmentation');
  assert.strictEqual(p.status.textContent, '1 entry found for “fragmentation”');
  assert.deepStrictEqual(p.shown(), [{
    kind: 'search-entry', href: 'entries/cuda-oom.html', title: 'CUDA out of memory',
    answer: 'The caching allocator could not find a free block of the size asked for.',
    label: 'Summary',
    text: '… ind a free block of the size asked for. [Fragmentation] leaves free memory in pieces ' +
      'too small for the request, so the total free memory the message reports can exceed the request wh …',
    code: false
  }]);
});

test('an error string shows as code under the label Error', () => {
  const [first] = results('memory').shown();
  assert.deepStrictEqual(first, {
    kind: 'search-entry', href: 'entries/cuda-oom.html', title: 'CUDA out of [memory]',
    answer: 'The caching allocator could not find a free block of the size asked for.',
    label: 'Error', text: 'torch.OutOfMemoryError: CUDA out of [memory]. Tried to allocate 2.00 GiB', code: true
  });
});

test('the field shown is the one that matches most of the query\'s words, then by the order of fields', () => {
  const shown = results('killed host').shown();
  assert.deepStrictEqual(shown.map((s) => [s.href, s.label, s.text]), [
    ['entries/dataloader-killed.html', 'Summary', 'The kernel [killed] a worker that ran out of [host] memory.'],
    ['entries/exit-minus-nine.html', 'Summary', 'The kernel [killed] a rank that ran out of [host] memory.']
  ]);
  const cause = results('casts dtype').shown()[0];
  assert.deepStrictEqual([cause.label, cause.text], ['Cause', 'Model code [casts] to self.[dtype]']);
});

test('a word and its longer forms count once toward the field shown', () => {
  /* `time` marks `timeout` and `timeouts`, one query word: the error string does not match
     more words than the symptom for holding two of its forms. */
  const files = searchFiles([doc('grouped', 'Grouped', { errors: ['timeout after timeouts'], symptoms: ['it hangs and then times out'] })]);
  const [first] = results('hangs time', files).shown();
  assert.deepStrictEqual([first.label, first.text], ['Symptom', 'it [hangs] and then [times] out']);
});

test('a field without a matched word is not shown', () => {
  const [first] = results('loss-nan-old').shown();
  assert.deepStrictEqual([first.href, first.label, first.text], ['entries/nan-loss.html', 'Former id', '[loss]-[nan]-[old]']);
});

test('a long field is cut around its first matched word, with an ellipsis on each cut side', () => {
  const words = LONG_SUMMARY.split(' ');
  const start = results(words[1]).shown()[0].text;
  assert.ok(start.startsWith(`${words[0]} [${words[1]}]`) && start.endsWith(' …') && !start.startsWith('…'), start);
  const end = results(words[words.length - 1]).shown()[0].text;
  assert.ok(end.startsWith('… ') && end.endsWith(`[${words[words.length - 1].slice(0, -1)}].`) && !end.endsWith('…'), end);
  assert.strictEqual(end.length, 2 + 180 + 2);
});

test('a pasted error line shows the error string it matched, whatever field ranks it', () => {
  const pasted = '[rank0]: RuntimeError: expected scalar type BFloat16 but found Float';
  const [first] = results(pasted).shown();
  assert.deepStrictEqual([first.href, first.label, first.code], ['entries/bf16-dtype-mismatch.html', 'Error', true]);
  assert.strictEqual(first.text, '[RuntimeError]: [expected] [scalar] [type] [BFloat16] but [found] [Float]');
});

test('a pasted error that no entry quotes says so above the closest matches, and in the status line', () => {
  const p = results('RuntimeError: the flux capacitor of the launcher overheated at step 12');
  assert.strictEqual(p.list.childNodes[0].className, 'search-note');
  assert.strictEqual(p.list.childNodes[0].textContent, UNQUOTED);
  assert.strictEqual(p.list.childNodes[0].getAttribute('aria-hidden'), 'true');
  assert.ok(p.shown().length > 0);
  assert.match(p.status.textContent, new RegExp(`^${UNQUOTED} \\d+ entr(y|ies) found for “RuntimeError`));
  for (const quoted of ['RuntimeError: expected scalar type BFloat16 but found Float', 'memory']) {
    const q = results(quoted);
    assert.notStrictEqual(q.list.childNodes[0].className, 'search-note', quoted);
    assert.ok(!q.status.textContent.startsWith(UNQUOTED), quoted);
  }
});

test('a query no entry matches says no entry found and shows no note', () => {
  const p = results('zzzz qqqq xxxx yyyy wwww');
  assert.strictEqual(p.status.textContent, '0 entries found for “zzzz qqqq xxxx yyyy wwww”');
  assert.strictEqual(p.list.childNodes.length, 0);
});

test('tags are suggested for a few words that each start a tag\'s slug or name, or for #tag', () => {
  const tags = (q) => results(q).shown().filter((s) => s.kind === 'search-tag').map((s) => [s.text, s.href]);
  assert.deepStrictEqual(tags('memory'), [['#Memory (1 entry)', 'tags/memory.html']]);
  assert.deepStrictEqual(tags('#dist'), [['#Distributed training (1 entry)', 'tags/distributed.html']]);
  assert.deepStrictEqual(tags('distributed train'), [['#Distributed training (1 entry)', 'tags/distributed.html']]);
  assert.deepStrictEqual(tags('nccl'), [['#NCCL (2 entries)', 'tags/nccl.html']]);
  assert.deepStrictEqual(tags('distributed training tag words'), []);
  assert.deepStrictEqual(tags('training'), [['#Distributed training (1 entry)', 'tags/distributed.html']]);
  assert.deepStrictEqual(tags('raining'), []);
  assert.deepStrictEqual(tags('#'), []);
  /* Only a leading # marks a tag: one between words separates them as any punctuation does. */
  assert.deepStrictEqual(tags('distributed #train'), [['#Distributed training (1 entry)', 'tags/distributed.html']]);
});

test('the results page suggests up to five tags, the box three', () => {
  const many = Array.from({ length: 7 }, (_, i) => [`topic-${i}`, `Topic ${i}`, 1]);
  const files = searchFiles([doc('only', 'Only entry')], many);
  const count = (p) => p.shown().filter((s) => s.kind === 'search-tag').length;
  assert.strictEqual(count(results('topic', files)), 5);
  assert.strictEqual(count(box('topic', files)), 3);
});

test('the box shows eight results, then a link to all of them on the results page', () => {
  const docs = Array.from({ length: 10 }, (_, i) => doc(`entry-${i}`, `Shared word ${i}`));
  const files = searchFiles(docs);
  const shown = box('shared', files).shown();
  assert.strictEqual(shown.filter((s) => s.kind === 'search-entry').length, 8);
  assert.deepStrictEqual(shown[shown.length - 1],
    { kind: 'search-all', text: 'All 10 results for “shared”', href: 'search.html?q=shared' });
  const few = box('killed host', FILES).shown();
  assert.deepStrictEqual(few[few.length - 1],
    { kind: 'search-all', text: 'Open the results page for “killed host”', href: 'search.html?q=killed%20host' });
});

test('the results page shows twelve results at once, the rest (up to a hundred) in the next task', () => {
  const docs = Array.from({ length: 120 }, (_, i) => doc(`entry-${String(i).padStart(3, '0')}`, `Shared word ${i}`));
  const files = searchFiles(docs);
  const p = openPage(files, { results: true, query: 'shared' });
  p.flush();
  assert.strictEqual(p.status.textContent, '120 entries found for “shared”');
  assert.strictEqual(p.shown().length, 100);
  const q = openPage(files, { results: true, query: 'shared', onPage: Object.keys(files) });
  assert.strictEqual(q.shown().length, 12);
  assert.deepStrictEqual(q.list.querySelectorAll('[role=option]').map((a) => a.id).slice(0, 3),
    ['search-results-0', 'search-results-1', 'search-results-2']);
  q.flush();
  assert.strictEqual(q.shown().length, 100);
  assert.strictEqual(q.list.querySelectorAll('[role=option]')[99].id, 'search-results-99');
});

test('a newer query drops the rest of the results of an older one', () => {
  const docs = Array.from({ length: 30 }, (_, i) => doc(`entry-${String(i).padStart(2, '0')}`, `Shared word ${i}`));
  const files = searchFiles(docs);
  const p = openPage(files, { results: true, query: 'shared', onPage: Object.keys(files) });
  p.type('word 7');
  p.flush();
  assert.deepStrictEqual(p.shown().map((s) => s.href), ['entries/entry-07.html']);
});

test('links encode the id and the query', () => {
  const files = searchFiles([doc('a&b', 'Odd id')]);
  assert.strictEqual(results('odd', files).shown()[0].href, 'entries/a%26b.html');
  assert.strictEqual(box('odd & #x', files).shown().pop().href, 'search.html?q=odd%20%26%20%23x');
});

test('arrow keys move the selection round the options, and the box names the selected one', () => {
  const p = box('killed host');
  const options = p.list.querySelectorAll('[role=option]');
  assert.strictEqual(options.length, 3);
  const selected = () => options.map((o) => o.getAttribute('aria-selected'));
  assert.deepStrictEqual(selected(), ['false', 'false', 'false']);
  assert.strictEqual(p.key('ArrowDown').defaultPrevented, true);
  assert.deepStrictEqual(selected(), ['true', 'false', 'false']);
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), options[0].id);
  p.key('ArrowUp');
  assert.deepStrictEqual(selected(), ['false', 'false', 'true']);
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), options[2].id);
  p.key('ArrowDown');
  assert.deepStrictEqual(selected(), ['true', 'false', 'false']);
});

test('Enter opens the selected option, else (in the box) the results page', () => {
  const p = box('killed host');
  const event = p.key('Enter');
  assert.strictEqual(event.defaultPrevented, true);
  assert.strictEqual(p.window.location.href, 'search.html?q=killed%20host');
  assert.deepStrictEqual(p.document.clicked, []);
  p.key('ArrowDown');
  p.key('ArrowDown');
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['entries/exit-minus-nine.html']);
});

test('on the results page Enter selects the first result', () => {
  const p = results('killed host');
  p.key('Enter');
  assert.strictEqual(p.window.location.href, '');
  assert.strictEqual(p.list.querySelectorAll('[role=option]')[0].getAttribute('aria-selected'), 'true');
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['entries/dataloader-killed.html']);
});

test('Escape closes the box\'s list, then empties the box', () => {
  const p = box('killed host');
  assert.strictEqual(p.list.hidden, false);
  assert.strictEqual(p.input.getAttribute('aria-expanded'), 'true');
  p.key('ArrowDown');
  assert.strictEqual(p.key('Escape').defaultPrevented, true);
  assert.strictEqual(p.list.hidden, true);
  assert.strictEqual(p.input.getAttribute('aria-expanded'), 'false');
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), null);
  assert.strictEqual(p.input.value, 'killed host');
  p.key('Escape');
  assert.strictEqual(p.input.value, '');
  assert.strictEqual(p.list.childNodes.length, 0);
  assert.strictEqual(p.status.textContent, '');
});

test('on the results page Escape empties the box and keeps the list open', () => {
  const p = results('killed host');
  p.key('Escape');
  assert.strictEqual(p.input.value, '');
  assert.strictEqual(p.list.childNodes.length, 0);
  assert.strictEqual(p.list.hidden, false);
});

test('arrow keys reopen a closed list, from its first option', () => {
  const p = box('killed host');
  p.key('ArrowDown');
  p.key('ArrowDown');
  p.key('Escape');
  p.key('ArrowDown');
  assert.strictEqual(p.list.hidden, false);
  assert.strictEqual(p.list.querySelectorAll('[aria-selected=true]')[0], p.list.querySelectorAll('[role=option]')[0]);
});

test('the box\'s list closes when the focus leaves the form, not when it moves inside', () => {
  const p = box('killed host');
  p.form.dispatch('focusout', { relatedTarget: p.list.querySelectorAll('[role=option]')[0] });
  assert.strictEqual(p.list.hidden, false);
  p.form.dispatch('focusout', { relatedTarget: null });
  assert.strictEqual(p.list.hidden, true);
  p.input.dispatch('focus');
  assert.strictEqual(p.list.hidden, false, 'the focus back on a box with results reopens them');
});

test('the focus coming back to an open list keeps the option selected in it', () => {
  const p = box('killed host');
  p.key('ArrowDown');
  const selected = p.input.getAttribute('aria-activedescendant');
  p.input.dispatch('focus');
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), selected);
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked, [p.list.querySelectorAll('[role=option]')[0]]);
});

test('the form is never submitted and a press on the list keeps the focus in the box', () => {
  const p = box('killed host');
  assert.strictEqual(p.form.dispatch('submit').defaultPrevented, true);
  assert.strictEqual(p.list.dispatch('mousedown').defaultPrevented, true);
  assert.strictEqual(p.form.hidden, false);
});

test('an emptied box clears its list and status; the same text typed again draws nothing new', () => {
  const p = box('killed host');
  const before = p.list.childNodes[0];
  p.type(' killed host ');
  assert.strictEqual(p.list.childNodes[0], before);
  assert.strictEqual(p.status.textContent, '2 entries found for “killed host”');
  p.type('  ');
  p.flush();
  assert.strictEqual(p.list.childNodes.length, 0);
  assert.strictEqual(p.status.textContent, '');
  assert.strictEqual(p.list.hidden, true);
});

test('the index loads on the first use: the first scan answers, then the whole index', () => {
  const p = openPage(FILES);
  assert.strictEqual(p.form.hidden, false);
  assert.strictEqual(p.form.getAttribute('data-index-state'), null);
  assert.deepStrictEqual(p.document.requested, []);
  p.input.dispatch('focus');
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'loading');
  assert.deepStrictEqual(p.document.requested, ['search/index.js']);
  p.type('memory');
  assert.strictEqual(p.status.textContent, 'Loading the search index…');
  p.tasks.shift()();
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'quick');
  assert.strictEqual(p.status.textContent, '1 entry found for “memory”');
  assert.deepStrictEqual(p.shown()[0].answer, null, 'the answers come later');
  p.flush();
  assert.deepStrictEqual(p.document.requested, ['search/index.js', 'search/answers.js', LIBRARY,
    'search/terms-0.js', 'search/text-0.js']);
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
  assert.strictEqual(p.shown()[0].answer, 'The caching allocator could not find a free block of the size asked for.');
});

test('when the whole index comes, a long list with nothing selected shows its first results at once and the rest next', () => {
  const many = searchFiles(Array.from({ length: 20 }, (_, i) => doc(`entry-${String(i).padStart(2, '0')}`, `Memory fault ${i}`)));
  const p = openPage(many, { results: true, query: 'memory' });
  const seen = [];
  while (p.tasks.length) {
    p.tasks.shift()();
    seen.push([p.form.getAttribute('data-index-state'), p.list.querySelectorAll('[role=option]').length]);
  }
  assert.deepStrictEqual(seen.find(([state]) => state === 'complete'), ['complete', 12]);
  assert.deepStrictEqual(seen[seen.length - 1], ['complete', 20]);
});

test('the selected result stays selected when the whole index comes', () => {
  const p = openPage(FILES, { focused: true });
  p.type('killed');
  p.tasks.shift()();
  p.key('ArrowDown');
  p.key('ArrowDown');
  const href = p.list.querySelectorAll('[aria-selected=true]')[0].href;
  p.flush();
  const selected = p.list.querySelectorAll('[aria-selected=true]');
  assert.deepStrictEqual(selected.map((a) => a.href), [href]);
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), selected[0].id);
  assert.strictEqual(p.list.hidden, false);
});

test('a closed list stays closed when the whole index comes', () => {
  const p = openPage(FILES, { focused: true, onPage: ['search/answers.js'] });
  p.type('killed');
  p.tasks.shift()();
  p.key('Escape');
  p.flush();
  assert.strictEqual(p.list.hidden, true);
  assert.ok(p.shown().length > 1);
});

test('a page with every script on it (the single-file bundle) searches the whole index at once', () => {
  const p = openPage(FILES, { results: true, query: 'memory', onPage: Object.keys(FILES) });
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
  p.flush();
  assert.deepStrictEqual(p.document.requested, []);
});

test('scripts already on the page are not asked for again', () => {
  const onPage = ['search/index.js', LIBRARY];
  const p = openPage(FILES, { results: true, query: 'memory', onPage });
  p.flush();
  assert.deepStrictEqual(p.document.requested, ['search/answers.js', 'search/terms-0.js', 'search/text-0.js']);
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
});

test('a script search-boot.js asked for already is waited for, not asked for twice', () => {
  const p = openPage(FILES);
  const script = p.document.createElement('script');
  script.src = 'search/index.js';
  p.document.head.appendChild(script);
  p.input.dispatch('focus');
  p.type('memory');
  p.flush();
  assert.deepStrictEqual(p.document.requested.filter((s) => s === 'search/index.js'), ['search/index.js']);
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
});

test('a missing index says that search is unavailable and why', () => {
  const files = { ...FILES };
  delete files['search/index.js'];
  const p = openPage(files);
  p.type('memory');
  p.flush();
  assert.strictEqual(p.status.textContent, 'Search is unavailable: could not load search/index.js');
});

test('without its shards the first scan keeps answering and the index never claims to be complete', () => {
  const files = { ...FILES };
  delete files['search/terms-0.js'];
  const p = openPage(files, { results: true, query: 'memory' });
  p.flush();
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'quick');
  assert.strictEqual(p.status.textContent, '1 entry found for “memory”');
  assert.strictEqual(p.shown()[0].answer, 'The caching allocator could not find a free block of the size asked for.');
});

test('the results page reads its query from ?q=, or from the fragment in the single-file bundle', () => {
  const p = openPage(FILES, { results: true, query: 'killed host' });
  assert.strictEqual(p.input.value, 'killed host');
  const bundle = openPage(FILES, { results: true, hash: '#/search.html?q=killed%20host' });
  assert.strictEqual(bundle.input.value, 'killed host');
  bundle.flush();
  assert.strictEqual(bundle.status.textContent, '2 entries found for “killed host”');
  const none = openPage(FILES, { results: true, hash: '#/search.html' });
  assert.strictEqual(none.input.value, '');
  none.flush();
  assert.strictEqual(none.status.textContent, '');
  assert.deepStrictEqual(none.document.requested, []);
});

test('a page the single-file router adds has its forms wired once', () => {
  const p = openPage(FILES);
  p.document.dispatch('nanopedia:page');
  p.input.dispatch('focus');
  p.type('memory');
  p.flush();
  assert.strictEqual(p.document.requested.filter((s) => s === 'search/index.js').length, 1);
  assert.strictEqual(p.list.querySelectorAll('[role=option]').length, 5);
});

test('each option is the link itself, out of the tab order, in a presentational item', () => {
  const p = box('killed host');
  const options = p.list.querySelectorAll('[role=option]');
  assert.deepStrictEqual(options.map((a) => [a.tagName, a.tabIndex, a.parentNode.tagName, a.parentNode.getAttribute('role'), a.id]),
    [['A', -1, 'LI', 'none', 'search-suggestions-0'], ['A', -1, 'LI', 'none', 'search-suggestions-1'],
      ['A', -1, 'LI', 'none', 'search-suggestions-2']]);
});

test('a failed load is tried again on the next query', () => {
  const files = { ...FILES };
  delete files['search/index.js'];
  const p = openPage(files);
  p.type('memory');
  p.flush();
  p.type('memory leak');
  p.flush();
  assert.deepStrictEqual(p.document.requested, ['search/index.js', 'search/index.js']);
  assert.strictEqual(p.status.textContent, 'Search is unavailable: could not load search/index.js');
});

test('queries typed while the index loads ask for it once and the last one is answered', () => {
  const p = openPage(FILES);
  p.type('memory');
  p.type('killed');
  p.type('killed host');
  p.flush();
  assert.deepStrictEqual(p.document.requested.filter((s) => s === 'search/index.js'), ['search/index.js']);
  assert.strictEqual(p.status.textContent, '2 entries found for “killed host”');
});

test('answers already on the page are shown at once and not asked for', () => {
  const p = openPage(FILES, { results: true, query: 'memory', onPage: ['search/index.js', 'search/answers.js'] });
  p.tasks.shift()();
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'quick');
  assert.strictEqual(p.shown()[0].answer, 'The caching allocator could not find a free block of the size asked for.');
  p.flush();
  assert.ok(!p.document.requested.includes('search/answers.js'));
});

test('an index shard on the page without its text shard does not make the index complete', () => {
  const p = openPage(FILES, { results: true, query: 'memory', onPage: ['search/index.js', LIBRARY, 'search/terms-0.js'] });
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'quick');
  p.flush();
  assert.deepStrictEqual(p.document.requested, ['search/answers.js', 'search/text-0.js']);
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
});

test('scripts another loader put on the page meanwhile complete the index without being asked for', () => {
  const p = openPage(FILES, { results: true, query: 'memory', onPage: ['search/index.js', 'search/answers.js'] });
  for (const path of [LIBRARY, 'search/terms-0.js', 'search/text-0.js']) run(p.window, FILES[path]);
  p.flush();
  assert.deepStrictEqual(p.document.requested, []);
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
});

test('the first scan marks the words of the query in what it shows', () => {
  const p = openPage(FILES, { results: true, query: 'killed dataloader' });
  p.tasks.shift()();
  assert.deepStrictEqual(p.shown().map((s) => [s.title, s.label, s.text]), [
    ['[DataLoader] worker [killed]: "Caught ... in [DataLoader] worker process"', 'Error',
      'RuntimeError: [DataLoader] worker (pid 4242) is [killed] by signal: [Killed].']
  ]);
});

test('a pasted line that only a title quotes shows the field that matched, not the title', () => {
  const files = searchFiles([doc('titled', 'Titled failure: "NCCL communicator was aborted on rank 3"',
    { summary: 'The communicator was aborted.' })]);
  const [first] = results('NCCL communicator was aborted on rank 3', files).shown();
  assert.deepStrictEqual([first.href, first.label], ['entries/titled.html', 'Summary']);
});

test('a page still loading wires its forms once the document is parsed', () => {
  const p = openPage(FILES, { loading: true });
  assert.strictEqual(p.form.hidden, true);
  p.document.dispatch('DOMContentLoaded');
  assert.strictEqual(p.form.hidden, false);
});

test('a box that has the focus when the script comes starts loading, and answers what was typed', () => {
  const p = openPage(FILES, { focused: true, value: 'memory' });
  assert.deepStrictEqual(p.document.requested, ['search/index.js']);
  p.flush();
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
  const idle = openPage(FILES, { value: 'memory' });
  assert.deepStrictEqual(idle.document.requested, []);
});

test('a results page without a query shows an empty open list and loads nothing', () => {
  const p = openPage(FILES, { results: true });
  p.flush();
  assert.strictEqual(p.list.hidden, false);
  assert.strictEqual(p.input.getAttribute('aria-expanded'), null);
  assert.deepStrictEqual(p.document.requested, []);
});

test('the selected option is scrolled into view, no further than needed', () => {
  const p = box('killed host');
  p.key('ArrowDown');
  p.key('ArrowDown');
  const options = p.list.querySelectorAll('[role=option]');
  assert.deepStrictEqual(p.document.scrolled.map(([el, how]) => [el.id, { ...how }]),
    [[options[0].id, { block: 'nearest' }], [options[1].id, { block: 'nearest' }]]);
});

test('arrow keys on an empty list select nothing; other keys do what they do', () => {
  const p = results('zzzzqqq');
  p.key('ArrowDown');
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), null);
  assert.strictEqual(p.key('a').defaultPrevented, false);
  assert.strictEqual(p.key('Tab').defaultPrevented, false);
});

test('a new query clears the selection', () => {
  const p = box('killed host');
  p.key('ArrowDown');
  p.type('memory');
  p.flush();
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), null);
  assert.deepStrictEqual(p.list.querySelectorAll('[aria-selected=true]'), []);
  p.key('ArrowDown');
  assert.strictEqual(p.list.querySelectorAll('[aria-selected=true]')[0], p.list.querySelectorAll('[role=option]')[0]);
});

test('exactly eight results in the box link to the results page, not to all of them', () => {
  const files = searchFiles(Array.from({ length: 8 }, (_, i) => doc(`entry-${i}`, `Shared word ${i}`)));
  const shown = box('shared', files).shown();
  assert.strictEqual(shown.length, 9);
  assert.strictEqual(shown[8].text, 'Open the results page for “shared”');
});

test('a query of sixteen characters or more that no entry quotes gets the note; a shorter one does not', () => {
  assert.strictEqual(results('memory fragments').list.childNodes[0].className, 'search-note');
  assert.strictEqual(results('memory fragment').list.childNodes[0].className, 'search-entry');
});

test('an error string of sixteen characters is one a pasted line can quote', () => {
  const files = searchFiles([doc('short-error', 'Short error', { errors: ['CUDA error: boom'] }),
    doc('other', 'Other', { summary: 'cuda error boom boom' })]);
  const p = results('CUDA error: boom', files);
  assert.strictEqual(p.list.childNodes[0].className, 'search-entry');
  assert.deepStrictEqual(p.shown().map((s) => s.href)[0], 'entries/short-error.html');
});

test('of two error strings a pasted line quotes equally, the first is shown', () => {
  const files = searchFiles([doc('two-errors', 'Two errors', { errors: ['abc error: alpha one', 'abc error: gamma two'] })]);
  const [first] = results('abc error: alpha one abc error: gamma two', files).shown();
  assert.strictEqual(first.text, '[abc] [error]: [alpha] [one]');
});

test('the owner of a pasted line comes first even when the words of the line find only another entry', () => {
  const files = searchFiles([
    doc('owner', 'Owner', { errors: ['Fatal Python error: Segmentation fault'] }),
    doc('wordy', 'Wordy', { summary: 'fatal python error segmentation fault core dumped' })
  ]);
  const p = results('Fatal Python error: Segmentation fault (core dumped)', files);
  assert.deepStrictEqual(p.shown().map((s) => [s.href, s.text]), [
    ['entries/owner.html', '[Fatal] [Python] [error]: [Segmentation] [fault]'],
    ['entries/wordy.html', '[fatal] [python] [error] [segmentation] [fault] [core] [dumped]']
  ]);
});

test('three words that each start a name of one tag suggest it; four suggest none', () => {
  const tags = (q) => results(q).shown().filter((s) => s.kind === 'search-tag').map((s) => s.href);
  assert.deepStrictEqual(tags('dist train distr'), ['tags/distributed.html']);
  assert.deepStrictEqual(tags('dist train distr d'), []);
});

test('results drawn again when the index comes are drawn whole, so the selection past the first twelve stays', () => {
  const docs = Array.from({ length: 30 }, (_, i) => doc(`entry-${String(i).padStart(2, '0')}`, `Shared word ${i}`));
  const files = searchFiles(docs);
  const p = openPage(files, { results: true, query: 'shared' });
  p.tasks.shift()();
  while (p.shown().length < 30) p.tasks.shift()();
  for (let i = 0; i < 15; i++) p.key('ArrowDown');
  const href = p.list.querySelectorAll('[aria-selected=true]')[0].href;
  while (p.form.getAttribute('data-index-state') !== 'complete') p.tasks.shift()();
  assert.strictEqual(p.shown().length, 30, 'every result at once');
  assert.deepStrictEqual(p.list.querySelectorAll('[aria-selected=true]').map((a) => a.href), [href]);
});

test('a form no longer on the page is not drawn again when the index comes', () => {
  const p = openPage(FILES, { focused: true });
  p.type('killed');
  p.tasks.shift()();
  const before = p.list.childNodes.slice();
  p.form.remove();
  p.flush();
  assert.deepStrictEqual(p.list.childNodes, before);
});

test('a form without a status line still shows its results', () => {
  const p = openPage(FILES, { results: true, query: 'memory', status: false });
  p.flush();
  assert.strictEqual(p.shown().length, 4);
  assert.strictEqual(p.status.textContent, '');
});

test('the page says the search script is loaded, so search-boot.js does not load it again', () => {
  assert.strictEqual(openPage(FILES).window.NanopediaSearchLoaded, true);
});

test('a tag that matched shows under the label Tags', () => {
  const files = searchFiles([doc('tagged', 'Tagged entry', { tags: ['deepspeed', 'zero3'] })]);
  const [first] = results('zero3', files).shown();
  assert.deepStrictEqual([first.label, first.text, first.code], ['Tags', '[zero3]', false]);
});

test('paths (Windows ones too) and addresses in a pasted line do not stop it from being quoted', () => {
  const files = searchFiles([
    doc('windows-path', 'Windows path', { errors: ['FileNotFoundError: No such file: C:\\Users\\ci\\data\\train.bin'] }),
    doc('address', 'Address', { errors: ['an illegal memory access at 0x7f3a9c000000 on device 0000:3b:00.0'] }),
    doc('noise', 'Noise', { summary: 'no such file illegal memory access device' })
  ]);
  for (const [pasted, owner] of [
    ['FileNotFoundError: No such file: D:\\runs\\exp7\\shard-0001.bin', 'windows-path'],
    ['FileNotFoundError: No such file: /mnt/data/train.bin', 'windows-path'],
    ['an illegal memory access at 0x0000dead0000 on device 0000:af:00.1', 'address']
  ]) {
    const p = results(pasted, files);
    assert.strictEqual(p.list.childNodes[0].className, 'search-entry', pasted);
    assert.strictEqual(p.shown()[0].href, `entries/${owner}.html`, pasted);
  }
});

test('a title quote elided with a real ellipsis splits as one with three dots', () => {
  const files = searchFiles([doc('ellipsis', 'Worker: "Caught … in DataLoader worker process"',
    { errors: ['Caught … in DataLoader worker process'] })]);
  const p = results('Caught RuntimeError in DataLoader worker process 3.', files);
  assert.strictEqual(p.list.childNodes[0].className, 'search-entry');
  assert.strictEqual(p.shown()[0].text, '[Caught] … in [DataLoader] [worker] [process]');
});

test('the matched field is a line of its own kind: label, a space, then the text', () => {
  const p = results('memory');
  const line = p.list.querySelectorAll('.search-label')[0].parentNode;
  assert.deepStrictEqual([line.tagName, line.className, line.textContent],
    ['SPAN', 'search-field search-field-errors', 'Error torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB']);
  const entry = p.list.querySelectorAll('[role=option]')[0];
  assert.deepStrictEqual(entry.childNodes.map((n) => [n.tagName, n.className]),
    [['SPAN', 'search-title'], ['SPAN', 'search-answer'], ['SPAN', 'search-field search-field-errors']]);
});

test('the note above unquoted results is presentational and hidden from assistive technology', () => {
  const note = results('RuntimeError: the flux capacitor of the launcher overheated').list.childNodes[0];
  assert.deepStrictEqual([note.tagName, note.getAttribute('role'), note.getAttribute('aria-hidden')], ['LI', 'none', 'true']);
});

test('before anything is loaded the page has no ids to give', () => {
  assert.strictEqual(openPage(FILES).window.NanopediaSearchIds('memory'), null);
});

test('an error string elided without spaces is split at the ellipsis', () => {
  const files = searchFiles([doc('elided', 'Elided', { errors: ['RuntimeError: shape mismatch...at dim 1'] }),
    doc('noise', 'Noise', { summary: 'runtimeerror shape error mismatch dim' })]);
  const quoted = (q) => results(q, files).list.childNodes[0].className === 'search-entry';
  assert.strictEqual(quoted('RuntimeError: shape mismatch between x and y at dim 1'), true);
  assert.strictEqual(quoted('RuntimeError: shape error at dim 1'), false);
  assert.strictEqual(quoted('RuntimeError: shape mismatch in dim 1'), false);
});

test('a log prefix does not count toward the length of a pasted line, a path or an address does', () => {
  const files = searchFiles([doc('file', 'Missing file', { summary: 'missing file illegal op data train' })]);
  const note = (q) => results(q, files).list.childNodes[0].className === 'search-note';
  assert.strictEqual(note('[rank0]: missing file'), false, 'missing file: 12 characters');
  assert.strictEqual(note('missing file: /data/train.bin'), true, 'missing file: /…, 16 characters');
  assert.strictEqual(note('illegal op at 0x7f3a9c000000'), true, 'illegal op at 0x…, 17 characters');
});

test('a PCI bus id without its function number is an address too', () => {
  const files = searchFiles([doc('bus', 'Bus', { errors: ['Xid 79 on GPU at PCI:0000:3b:00 fell off the bus'] }),
    doc('noise', 'Noise', { summary: 'xid gpu pci fell off the bus' })]);
  assert.strictEqual(results('Xid 79 on GPU at PCI:0000:af:00 fell off the bus', files).shown()[0].href, 'entries/bus.html');
  assert.strictEqual(results('Xid 79 on GPU at PCI:0000:af:00 fell off the bus', files).list.childNodes[0].className, 'search-entry');
});

test('an index shard that never came keeps the index from completing, whichever of a shard\'s two scripts it is', () => {
  const text = openPage(FILES, { results: true, query: 'memory', onPage: ['search/index.js', LIBRARY, 'search/text-0.js'] });
  assert.strictEqual(text.form.getAttribute('data-index-state'), 'quick');
  const docs = Array.from({ length: 1002 }, (_, i) => doc(`entry-${String(i).padStart(4, '0')}`, `Entry ${i}`));
  const files = searchFiles(docs);
  const half = openPage(files, { results: true, query: 'entry',
    onPage: ['search/index.js', LIBRARY, 'search/terms-0.js', 'search/text-0.js'] });
  assert.strictEqual(half.form.getAttribute('data-index-state'), 'quick');
  half.flush();
  assert.deepStrictEqual(half.document.requested, ['search/answers.js', 'search/terms-1.js', 'search/text-1.js']);
  assert.strictEqual(half.form.getAttribute('data-index-state'), 'complete');
});

test('a title the pasted line holds whole is its entry\'s, like its error strings', () => {
  const p = results('Man page of the launcher');
  assert.strictEqual(p.list.childNodes[0].className, 'search-entry');
  assert.strictEqual(p.shown()[0].href, 'entries/man-page.html');
});

test('an error string shorter than sixteen characters is no pasted line\'s', () => {
  const files = searchFiles([doc('short', 'Short', { errors: ['bad value'] })]);
  assert.strictEqual(results('RuntimeError: bad value in tensor x', files).list.childNodes[0].className, 'search-note');
});

test('a pasted line that starts an error string or lies within a part of one is quoted', () => {
  for (const q of ['RuntimeError: expected scalar type', 'in DataLoader worker process']) {
    const p = results(q);
    assert.strictEqual(p.list.childNodes[0].className, 'search-entry', q);
  }
  assert.strictEqual(results('in DataLoader worker process').shown()[0].href, 'entries/dataloader-killed.html');
});

test('an entry ranks by the best of its error strings a pasted line quotes, and shows that one', () => {
  const files = searchFiles([
    doc('short-first', 'A', { errors: ['Watchdog timeout: rank 3 stopped', 'Watchdog timeout: rank 3 stopped joining collectives'] }),
    doc('short-last', 'B', { errors: ['Watchdog timeout: rank 3 stopped joining collectives', 'Watchdog timeout: rank 3 stopped'] }),
    doc('within', 'C', { errors: ['Watchdog timeout: rank 3 stopped joining'] })
  ]);
  const shown = results('Watchdog timeout: rank 3 stopped', files).shown();
  assert.deepStrictEqual(shown.map((s) => [s.href, s.text]), [
    ['entries/short-first.html', '[Watchdog] [timeout]: [rank] [3] [stopped]'],
    ['entries/short-last.html', '[Watchdog] [timeout]: [rank] [3] [stopped]'],
    ['entries/within.html', '[Watchdog] [timeout]: [rank] [3] [stopped] joining']
  ]);
});

test('an owner among the index\'s hits keeps the words the index matched', () => {
  /* The first scan would mark OutOfMemoryError too: it holds `memory`. */
  const [first] = results('of memory. Tried to allocate 2.00 GiB').shown();
  assert.deepStrictEqual([first.href, first.text],
    ['entries/cuda-oom.html', 'torch.OutOfMemoryError: CUDA out of [memory]. [Tried] to [allocate] [2].[00] [GiB]']);
});

test('hits from every shard are ranked together', () => {
  /* `lemur` is in every summary of the first shard (worth little there) and in one title of
     the second. */
  const docs = Array.from({ length: 1002 }, (_, i) => doc(`entry-${String(i).padStart(4, '0')}`,
    i === 1001 ? 'Lemur' : `Entry ${i}`, { summary: i < 1000 ? 'a lemur' : '' }));
  const p = results('lemur', searchFiles(docs));
  assert.strictEqual(p.status.textContent, '1001 entries found for “lemur”');
  assert.strictEqual(p.shown()[0].href, 'entries/entry-1001.html');
});

test('a tag is suggested by the words of its title as well as its slug, and only when every word fits', () => {
  const files = searchFiles([doc('only', 'Only entry')], [['cuda-oom', 'Out of memory', 3]]);
  const tags = (q) => results(q, files).shown().filter((s) => s.kind === 'search-tag').map((s) => s.text);
  assert.deepStrictEqual(tags('out mem'), ['#Out of memory (3 entries)']);
  assert.deepStrictEqual(tags('cuda'), ['#Out of memory (3 entries)']);
  assert.deepStrictEqual(tags('out zzz'), []);
});

test('the first scan marks words in every item of a list, not across two of them', () => {
  const files = searchFiles([doc('two-errors', 'Two errors', { errors: ['first failure in worker', 'runtime failure second'] })]);
  const p = openPage(files, { results: true, query: 'runtime worker' });
  p.tasks.shift()();
  assert.deepStrictEqual(p.shown().map((s) => s.text), ['first failure in [worker]']);
  const q = openPage(files, { results: true, query: 'runtime' });
  q.tasks.shift()();
  assert.deepStrictEqual(q.shown().map((s) => s.text), ['[runtime] failure second']);
});

test('emptying the results page\'s box leaves no option selected', () => {
  const p = results('killed host');
  p.key('Enter');
  assert.ok(p.input.getAttribute('aria-activedescendant'));
  p.key('Escape');
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), null);
  p.key('ArrowDown');
  assert.strictEqual(p.input.getAttribute('aria-activedescendant'), null);
});

test('an empty box loads nothing and says nothing; a query is searched without its outer spaces', () => {
  const p = openPage(FILES);
  p.type('   ');
  p.flush();
  assert.deepStrictEqual(p.document.requested, []);
  assert.strictEqual(p.status.textContent, '');
  p.type('  memory ');
  p.flush();
  assert.strictEqual(p.status.textContent, '3 entries found for “memory”');
  assert.strictEqual(p.shown().pop().href, 'search.html?q=memory');
});

test('Enter before any result goes to the results page; in an empty box it goes nowhere', () => {
  const p = openPage(FILES);
  p.type(' memory ');
  p.key('Enter');
  assert.strictEqual(p.window.location.href, 'search.html?q=memory');
  const q = openPage(FILES);
  q.type('  ');
  q.key('Enter');
  assert.strictEqual(q.window.location.href, '');
  assert.deepStrictEqual(q.document.clicked, []);
});

test('arrow keys and the focus do not open an empty list', () => {
  const p = openPage(FILES);
  p.input.dispatch('focus');
  p.flush();
  assert.strictEqual(p.list.hidden, true);
  p.key('ArrowDown');
  assert.strictEqual(p.list.hidden, true);
  assert.notStrictEqual(p.input.getAttribute('aria-expanded'), 'true');
});

test('the results page keeps its list when the focus leaves it', () => {
  const p = results('killed host');
  p.form.dispatch('focusout', { relatedTarget: null });
  assert.strictEqual(p.list.hidden, false);
});

test('the box of a page other than the results page takes no query from the address', () => {
  const p = openPage(FILES, { hash: '#/tags/x.html?q=memory' });
  assert.strictEqual(p.input.value, '');
  p.flush();
  assert.deepStrictEqual(p.document.requested, []);
});

test('a box that has the focus when the script comes starts loading the index, even empty', () => {
  const p = openPage(FILES, { focused: true });
  assert.deepStrictEqual(p.document.requested, ['search/index.js']);
  assert.strictEqual(p.status.textContent, '');
});

test('a form the page had already is wired once, one the single-file router adds is wired too', () => {
  const p = box('killed host');
  p.document.dispatch('nanopedia:page');
  p.key('ArrowDown');
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked, [p.list.querySelectorAll('[role=option]')[0]]);
  const added = p.form.cloneForm();
  p.document.body.appendChild(added);
  assert.strictEqual(added.hidden, true);
  p.document.dispatch('nanopedia:page');
  assert.strictEqual(added.hidden, false);
});

test('the first selection stays selected when the whole index comes', () => {
  const p = openPage(FILES, { focused: true });
  p.type('killed');
  p.tasks.shift()();
  p.key('ArrowDown');
  const href = p.list.querySelectorAll('[aria-selected=true]')[0].href;
  p.flush();
  assert.deepStrictEqual(p.list.querySelectorAll('[aria-selected=true]').map((a) => a.href), [href]);
});

test('tags come once, after every result, whether results come at once or in two tasks', () => {
  for (const count of [12, 20]) {
    const docs = Array.from({ length: count }, (_, i) => doc(`entry-${String(i).padStart(2, '0')}`, `Shared word ${i}`));
    const files = searchFiles(docs, [['shared', 'Shared', count]]);
    const p = openPage(files, { results: true, query: 'shared', onPage: Object.keys(files) });
    p.flush();
    const kinds = p.shown().map((o) => o.kind);
    assert.deepStrictEqual(kinds, [...Array(count).fill('search-entry'), 'search-tag'], `${count} results`);
  }
});

test('an error string with a path quotes any pasted path in its place', () => {
  const files = searchFiles([doc('lib', 'Lib', { errors: ['OSError: cannot load /usr/lib/x86_64/libcuda.so: bad ELF'] }),
    doc('noise', 'Noise', { summary: 'oserror cannot load bad elf' })]);
  const p = results('OSError: cannot load /opt/drivers/libcuda.so.1: bad ELF', files);
  assert.strictEqual(p.list.childNodes[0].className, 'search-entry');
});

test('a pasted line is quoted whatever its spacing and case', () => {
  const line = '  [rank1]:   RuntimeError:\tDataLoader   worker (pid 4242) is KILLED by signal: Killed.  ';
  const p = results(line);
  assert.strictEqual(p.list.childNodes[0].className, 'search-entry');
  assert.strictEqual(p.shown()[0].href, 'entries/dataloader-killed.html');
});

test('the first scan marks a word of the title alone', () => {
  const p = openPage(FILES, { results: true, query: 'segfaults' });
  p.tasks.shift()();
  assert.strictEqual(p.shown()[0].title, 'Worker [segfaults]');
});
