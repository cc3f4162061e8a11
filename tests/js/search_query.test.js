// What a search finds, and in which order, as theme/static/search.js answers it on a page: from
// the whole index (MiniSearch over the index shards) and from the first scan of the short
// fields (search/index.js alone, while the shards load). The site is built by the build's own
// code (generator/nanopedia/site/search.py) from the documents of search_docs.js; the pages run with the
// DOM of tests/js/dom.js. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { searchFiles, openPage, doc } = require('./search_site.js');
const { DOCS, TAGS } = require('./search_docs.js');

const FILES = searchFiles(DOCS, TAGS);

/* The ids a page finds for a query, as an array of this realm (null before the index loads). */
function finder(p) {
  return (text) => {
    const ids = p.window.NanopediaSearchIds(text);
    return ids && [...ids];
  };
}

/* A results page with the whole index loaded, and one with only its first scan. */
function complete() {
  const p = openPage(FILES, { results: true });
  p.type('x');
  p.flush();
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'complete');
  return finder(p);
}

function quick() {
  const p = openPage(FILES, { results: true });
  p.type('x');
  p.tasks.shift()();  // search/index.js loads; the shards and the library never come
  assert.strictEqual(p.form.getAttribute('data-index-state'), 'quick');
  return finder(p);
}

const full = complete();
const scan = quick();

test('a three-letter word is never matched with a typo: nan does not find man', () => {
  assert.deepStrictEqual(full('nan'), ['nan-loss']);
  assert.deepStrictEqual(full('man'), ['man-page']);
});

for (const [query, found, why] of [
  ['memorx', ['cuda-oom', 'dataloader-killed', 'exit-minus-nine'], 'one letter changed in a word of six'],
  ['fragmentaiton', ['cuda-oom'], 'two letters swapped in a word of eight or more'],
  ['watchdgo', ['nan-loss', 'nccl-timeout'], 'two letters swapped in a word of eight'],
  ['wachdog', ['nan-loss', 'nccl-timeout'], 'one letter left out'],
  ['lanucher', ['man-page'], 'two letters swapped in a word of eight']
]) {
  test(`a typo is forgiven where the word is long enough: ${query} (${why})`, () => {
    assert.deepStrictEqual(full(query).slice().sort(), found);
  });
}

for (const [query, why] of [
  ['memroy', 'two letters swapped in a word of six: two edits'],
  ['nanxy', 'two letters added to a word of three']
]) {
  test(`a typo that costs more than the word allows finds nothing: ${query} (${why})`, () => {
    assert.deepStrictEqual(full(query), []);
  });
}

test('a word of two letters or more matches as a prefix, one letter does not', () => {
  assert.deepStrictEqual(full('fragm'), ['cuda-oom']);
  assert.deepStrictEqual(full('bf'), ['bf16-dtype-mismatch']);
  assert.deepStrictEqual(full('l'), []);
});

test('a word longer than forty letters matches only exactly or as a prefix, never with a typo', () => {
  const word = 'a'.repeat(41);
  const files = searchFiles([doc('long-word', 'Long word', { summary: `${word}b ${'c'.repeat(40)}` })]);
  const p = openPage(files, { results: true, query: 'x' });
  p.flush();
  const ids = finder(p);
  assert.deepStrictEqual(ids(word), ['long-word'], 'a prefix of a longer word');
  assert.deepStrictEqual(ids(`${word}x`), [], 'one letter changed in a word of 42');
  assert.deepStrictEqual(ids(`${'c'.repeat(39)}d`), ['long-word'], 'one letter changed in a word of 40');
});

test('every word must match; where no entry has them all, any word may', () => {
  assert.deepStrictEqual(full('killed host memory').sort(), ['dataloader-killed', 'exit-minus-nine']);
  assert.deepStrictEqual(full('fsdp launcher').sort(), ['bf16-dtype-mismatch', 'man-page']);
  assert.deepStrictEqual(scan('killed dataloader').sort(), ['dataloader-killed']);
  assert.deepStrictEqual(scan('fsdp launcher').sort(), ['bf16-dtype-mismatch', 'man-page']);
});

test('a hit in the title ranks above a hit in the summary', () => {
  assert.deepStrictEqual(full('memory')[0], 'cuda-oom');
  assert.deepStrictEqual(full('collective'), ['nccl-timeout', 'nan-loss']);
});

test('the first scan ranks by the field a word is in: a title above a former id', () => {
  assert.deepStrictEqual(scan('loss'), ['nan-loss', 'exit-minus-eleven']);
});

test('the first scan counts a hit in an error string as one in the title, and a shorter title breaks ties', () => {
  assert.deepStrictEqual(scan('killed'), ['exit-minus-nine', 'dataloader-killed']);
  assert.deepStrictEqual(scan('worker'), ['exit-minus-eleven', 'exit-minus-nine', 'dataloader-killed']);
  assert.deepStrictEqual(scan('timeout'), ['nan-loss', 'nccl-timeout']);
});

test('the first scan finds former ids, and searches no field twice for one word', () => {
  assert.deepStrictEqual(scan('loss-nan-old'), ['nan-loss']);
  assert.deepStrictEqual(scan('nan loss'), ['nan-loss']);
});

test('the first scan drops stop words and words it has seen from the query', () => {
  assert.deepStrictEqual(scan('the'), []);
  assert.deepStrictEqual(scan('the memory memory'), ['cuda-oom']);
});

test('a pasted error line puts the entry that owns it first, above one that mentions it', () => {
  const line = '[rank3]:[E1205 10:00:00.123 ProcessGroupNCCL.cpp:1234] Watchdog caught collective ' +
    'operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.';
  for (const ids of [full, scan]) {
    assert.deepStrictEqual(ids(line).slice(0, 2), ['nccl-timeout', 'nan-loss']);
  }
});

test('a pasted line matches an error string without its log prefix, paths and addresses', () => {
  const line = '2024-05-01 12:00:00,123 ERROR torch.OutOfMemoryError: CUDA out of memory. ' +
    'Tried to allocate 2.00 GiB';
  assert.strictEqual(full(line)[0], 'cuda-oom');
  const other = 'ChildFailedError: failed (exitcode: -9) local_rank: 0 (pid: 100) of binary: /opt/conda/bin/python3';
  assert.strictEqual(full(other)[0], 'exit-minus-nine');
});

test('a pasted line that holds the parts of an elided title quote is that entry\'s', () => {
  assert.strictEqual(full('Caught RuntimeError in DataLoader worker process 3.')[0], 'dataloader-killed');
  assert.strictEqual(scan('caught ValueError in dataloader worker process 0')[0], 'dataloader-killed');
});

test('with its numbers set aside, a pasted line is owned by the error with more of its numbers', () => {
  /* Neither exit code matches exactly: pid and rank differ; -9 is the one the line has. */
  const line = 'ChildFailedError: failed (exitcode: -9) local_rank: 3 (pid: 777) of binary: /usr/bin/python';
  assert.deepStrictEqual(full(line).slice(0, 2), ['exit-minus-nine', 'exit-minus-eleven']);
  const eleven = line.replace('-9', '-11');
  assert.deepStrictEqual(full(eleven).slice(0, 2), ['exit-minus-eleven', 'exit-minus-nine']);
});

test('an exact match of a pasted line outranks a match with its numbers set aside', () => {
  const exact = 'ChildFailedError: failed (exitcode: -11) local_rank: 0 (pid: 100) of binary: /usr/bin/python';
  assert.deepStrictEqual(full(exact).slice(0, 2), ['exit-minus-eleven', 'exit-minus-nine']);
});

test('a query shorter than sixteen characters is no pasted line, whatever it holds', () => {
  /* `found float` is in one entry's title words: it owns nothing, the index ranks it. */
  assert.deepStrictEqual(full('cuda out of mem'), ['cuda-oom']);
});

test('only the first 4096 characters of a query are searched', () => {
  const pasted = 'memory ' + 'x'.repeat(4089) + ' launcher';
  assert.deepStrictEqual(full(pasted), ['cuda-oom', 'dataloader-killed', 'exit-minus-nine']);
});

test('words that name Object\'s own properties are ordinary words', () => {
  for (const ids of [full, scan]) {
    for (const word of ['constructor', '__proto__', 'hasOwnProperty', 'toString']) {
      assert.deepStrictEqual(ids(word), [], word);
    }
  }
});

test('the ids of results are decoded from their compact form', () => {
  assert.deepStrictEqual(full('launcher'), ['man-page']);
  assert.deepStrictEqual(scan('launcher'), ['man-page']);
  assert.deepStrictEqual(full('timing'), ['nccl-timeout']);
});

test('a word of four letters forgives one typo', () => {
  assert.deepStrictEqual(full('nanx'), ['nan-loss']);
});

test('a pasted line is compared without its spacing and case, addresses set aside', () => {
  const line = '  [rank1]:   RuntimeError:\tDataLoader   worker (pid 4242) is KILLED by signal: Killed.  ';
  assert.strictEqual(full(line)[0], 'dataloader-killed');
  const files = searchFiles([
    doc('illegal-address', 'Illegal memory access', { errors: ['CUDA error: an illegal memory access at 0x7f3a9c000000 on device 0000:3b:00.0'] }),
    doc('other-address', 'Other device', { errors: ['CUDA error: an illegal memory access at 0x7f3a9c000000 on device 0000:3b:00.1 was seen'] })
  ]);
  const p = openPage(files, { results: true, query: 'x' });
  p.flush();
  const ids = finder(p);
  assert.deepStrictEqual(ids('CUDA error: an illegal memory access at 0x0000dead0000 on device 0000:af:00.0'),
    ['illegal-address', 'other-address']);
});

test('a pasted part of an error string is owned by the entries that quote it, their own before mentions', () => {
  const part = 'caught collective operation timeout: worknccl(seqnum=7';
  assert.deepStrictEqual(full(part).slice(0, 2), ['nccl-timeout', 'nan-loss']);
  assert.deepStrictEqual(scan(part).slice(0, 2), ['nccl-timeout', 'nan-loss']);
});

test('of two entries that own a pasted line, the closer in length comes first', () => {
  const files = searchFiles([
    doc('long-quote', 'Long', { errors: ['RuntimeError: CUDA error: device-side assert triggered while copying the gradients'] }),
    doc('short-quote', 'Short', { errors: ['RuntimeError: CUDA error: device-side assert triggered'] })
  ]);
  const p = openPage(files, { results: true, query: 'x' });
  p.flush();
  const ids = finder(p);
  assert.deepStrictEqual(ids('RuntimeError: CUDA error: device-side assert triggered'), ['short-quote', 'long-quote']);
  assert.deepStrictEqual(ids('RuntimeError: CUDA error: device-side assert triggered while copying the gradients'),
    ['long-quote', 'short-quote']);
});

test('a title whose lower case is longer (İ) does not move the hits of the entries after it', () => {
  /* Three İ lower to six characters: a word that ends the first record's id is three
     characters from the next record. */
  const files = searchFiles([
    doc('a-istanbul-zq', 'İstanbul İzmir İnegöl crash'),
    doc('b-plain', 'Plain failure of the launcher')
  ]);
  const p = openPage(files, { results: true });
  p.type('x');
  p.tasks.shift()();
  const ids = finder(p);
  assert.deepStrictEqual(ids('launcher'), ['b-plain']);
  assert.deepStrictEqual(ids('crash'), ['a-istanbul-zq']);
  assert.deepStrictEqual(ids('zq'), []);
});

test('entries past the first thousand are found in their own shard, with their own text', () => {
  const words = { 999: 'pangolin', 1000: 'zebra', 1001: 'okapi' };
  const docs = Array.from({ length: 1002 }, (_, i) => doc(`entry-${String(i).padStart(4, '0')}`, `Entry ${i}`,
    { summary: `Summary of ${words[i] || 'nothing'}.` }));
  const files = searchFiles(docs);
  assert.ok(files['search/terms-1.js'] && files['search/text-1.js']);
  const p = openPage(files, { results: true, query: 'okapi' });
  p.flush();
  assert.deepStrictEqual(p.shown().map((s) => [s.href, s.text]), [['entries/entry-1001.html', 'Summary of [okapi].']]);
  assert.deepStrictEqual(finder(p)('pangolin'), ['entry-0999']);
  assert.deepStrictEqual(finder(p)('zebra'), ['entry-1000']);
});

test('the first scan finds a word at the very start of the index', () => {
  assert.deepStrictEqual(scan('expected'), ['bf16-dtype-mismatch']);
});

test('the first scan skips an id, where words do not count, and reads on in the next entry', () => {
  const files = searchFiles([
    doc('alpha-gizmo', 'Alpha thing', { aliases: ['old-x'] }),
    doc('beta', 'Gizmo broke'),
    doc('zz-last-entry', 'Final one')
  ]);
  const p = openPage(files, { results: true });
  p.type('x');
  p.tasks.shift()();
  const ids = finder(p);
  assert.deepStrictEqual(ids('gizmo'), ['beta']);
  assert.deepStrictEqual(ids('entry'), []);
  assert.deepStrictEqual(ids('x'), ['alpha-gizmo']);
});

test('the first scan keeps the entries\' order between equal scores', () => {
  const files = searchFiles([doc('e0', 'Aaa one'), doc('e1', 'Bbb one')]);
  const p = openPage(files, { results: true });
  p.type('x');
  p.tasks.shift()();
  assert.deepStrictEqual(finder(p)('bbb aaa'), ['e0', 'e1']);
});

test('the first scan counts a word typed twice once', () => {
  const files = searchFiles([doc('a', 'Gizmo one', { aliases: ['widget-a'] }), doc('b', 'Widget two', { aliases: ['gizmo-b'] })]);
  const p = openPage(files, { results: true });
  p.type('x');
  p.tasks.shift()();
  assert.deepStrictEqual(finder(p)('widget widget gizmo'), ['a', 'b']);
});
