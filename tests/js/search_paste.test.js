// A log pasted into a search box, under Node: what reads as a log (lines, a log's marks), the
// offer to diagnose it first in the list, what following the offer leaves in the tab's
// sessionStorage (or says when the browser refuses to keep it), Enter, an edited paste, and a
// paste made before search.js came. The real browser and the diagnose page that takes the log
// are tests/browser/test_search_to_diagnose.py's. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { searchFiles, openPage } = require('./search_site.js');
const { DOCS, TAGS } = require('./search_docs.js');

const FILES = searchFiles(DOCS, TAGS);
const CARRIED = 'nanopedia:diagnose-log';
const OOM = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB';
const LOG = `step 10\n${OOM}\nexiting\n`;
const OFFER = (lines) => ({
  kind: 'search-diagnose', href: 'diagnose.html',
  text: `Diagnose this log (${lines} lines) on the diagnose page; it stays in this browser`
});

/* The header box (or the results page) with `text` pasted into it and everything loaded. */
function pasted(text, options = {}) {
  const p = openPage(FILES, options);
  p.input.dispatch('focus');
  p.paste(text);
  p.flush();
  return p;
}

const offered = (p) => p.shown().filter((o) => o.kind === 'search-diagnose');

test('a pasted log is offered for diagnosis first, before its results, and not for the results page', () => {
  const p = pasted(LOG);
  const shown = p.shown();
  assert.deepStrictEqual(shown[0], OFFER(3));
  assert.strictEqual(shown[1].href, 'entries/cuda-oom.html');
  assert.deepStrictEqual(shown.filter((o) => o.kind === 'search-all'), []);
  assert.strictEqual(p.list.hidden, false);
  assert.strictEqual(p.status.textContent, 'A pasted log: the first option diagnoses it. 6 entries found for ' +
    `“step 10 ${OOM} exiting”`);
});

test('the offer counts the non-blank lines of the paste, whatever ends them', () => {
  assert.deepStrictEqual(offered(pasted('a\r\n\r\n  \nb error\rc\n\td\n')), [OFFER(4)]);
});

test('fewer than three non-blank lines are a line, not a log: no offer', () => {
  for (const text of ['one error\ntwo', 'one error\n\n \t\ntwo\n', `${OOM}\n`]) {
    const p = pasted(text);
    assert.deepStrictEqual(offered(p), [], JSON.stringify(text));
    assert.ok(!p.status.textContent.startsWith('A pasted log'), JSON.stringify(text));
  }
});

/* Each of a log's marks, in any case, makes three lines a log; lines without one are not. */
for (const [mark, isLog] of [
  ['error', true], ['ERROR', true], ['an Exception', true], ['Traceback (most recent call last):', true],
  ['warn', true], ['FATAL', true], ['it failed', true], ['Aborted', true], ['Killed', true],
  ['signal 9', true], ['timeout', true], ['timed out', true], ['time out', true], ['timedout', true],
  ['[rank3]: x', true], ['at 12:34:56', true],
  ['[rank]: x', false], ['at 1:23:45', false], ['12:34', false], ['tim out', false], ['plain words', false]
]) {
  test(`three lines with "${mark}" ${isLog ? 'are' : 'are not'} a log to diagnose`, () => {
    const p = pasted(`first line\n${mark}\nlast line\n`);
    assert.deepStrictEqual(offered(p), isLog ? [OFFER(3)] : []);
  });
}

test('following the offer leaves the whole paste, lines and all, in the tab\'s sessionStorage', () => {
  const p = pasted(LOG);
  const offer = p.list.querySelector('[role=option]');
  const click = offer.dispatch('click');
  assert.deepStrictEqual([...p.stored], [[CARRIED, LOG]]);
  assert.strictEqual(click.defaultPrevented, false);
});

test('a browser that will not keep the log says so on the first choice, and opens the page on the next', () => {
  let tries = 0;
  const refusing = {
    setItem() {
      tries += 1;
      const err = new Error('full');
      err.name = 'QuotaExceededError';
      throw err;
    }
  };
  const p = pasted(LOG, { storage: refusing });
  const offer = p.list.querySelector('[role=option]');
  assert.strictEqual(offer.dispatch('click').defaultPrevented, true);
  assert.strictEqual(offer.textContent, 'This browser would not keep the log for the diagnose page ' +
    '(QuotaExceededError); choose this again to open the page, and paste the log there');
  assert.strictEqual(offer.dispatch('click').defaultPrevented, false);
  assert.strictEqual(tries, 1);
});

test('Enter on a pasted log follows the offer, not the results page', () => {
  const p = pasted(LOG);
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['diagnose.html']);
  assert.deepStrictEqual([...p.stored], [[CARRIED, LOG]]);
  assert.strictEqual(p.window.location.href, '');
});

test('Enter on a pasted log with a result selected opens that result', () => {
  const p = pasted(LOG);
  p.key('ArrowDown');
  p.key('ArrowDown');
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['entries/cuda-oom.html']);
  assert.deepStrictEqual([...p.stored], []);
});

test('the offer is there while the index loads, and stays when the index cannot load', () => {
  const p = openPage({});
  p.input.dispatch('focus');
  p.paste(LOG);
  assert.deepStrictEqual(p.shown(), [OFFER(3)]);
  assert.strictEqual(p.list.textContent, OFFER(3).text, 'the list holds the offer alone');
  assert.strictEqual(p.list.hidden, false);
  p.flush();
  assert.deepStrictEqual(p.shown(), [OFFER(3)]);
  assert.match(p.status.textContent, /^Search is unavailable: /);
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['diagnose.html']);
});

test('a second log pasted while the index loads replaces the first one\'s offer', () => {
  const p = openPage(FILES);
  p.input.dispatch('focus');
  p.paste(LOG);
  p.paste('one\ntwo\nthree\nfour error\n');
  assert.deepStrictEqual(p.shown(), [OFFER(4)]);
});

test('Enter on a pasted log whose offer is not drawn yet makes the offer and follows it', () => {
  const p = openPage(FILES);
  p.input.dispatch('focus');
  p.paste(LOG);
  p.list.textContent = '';
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked.map((a) => a.href), ['diagnose.html']);
  assert.deepStrictEqual([...p.stored], [[CARRIED, LOG]]);
});

test('an edited paste is no longer offered, and gets the results page\'s link again', () => {
  const p = pasted(LOG);
  p.type(p.input.value + ' more');
  p.flush();
  assert.deepStrictEqual(offered(p), []);
  assert.strictEqual(p.shown().pop().kind, 'search-all');
  assert.ok(!p.status.textContent.startsWith('A pasted log'));
  p.key('Enter');
  assert.deepStrictEqual(p.document.clicked, []);
  assert.match(p.window.location.href, /^search\.html\?q=/);
});

test('a line typed, then the same text pasted as a log over it, is offered', () => {
  const p = openPage(FILES);
  p.input.dispatch('focus');
  p.type('step 10 error here last line');
  p.flush();
  assert.deepStrictEqual(offered(p), []);
  p.paste('step 10\nerror here\nlast line');
  p.flush();
  assert.deepStrictEqual(offered(p), [OFFER(3)]);
});

test('a paste that is not a log replaces an earlier one: no offer for it', () => {
  const p = pasted(LOG);
  p.paste('just one line');
  p.flush();
  assert.deepStrictEqual(offered(p), []);
});

test('a paste kept by search-boot.js before search.js came is offered when it starts', () => {
  const value = LOG.replace(/\n/g, ' ').trim();
  const p = openPage(FILES, { pasted: LOG, value });
  assert.strictEqual(p.form.pasted, undefined);
  assert.strictEqual(p.form.onpaste, null);
  assert.deepStrictEqual(p.shown(), [OFFER(3)]);
  p.flush();
  assert.deepStrictEqual(p.shown()[0], OFFER(3));
  assert.strictEqual(p.shown()[1].href, 'entries/cuda-oom.html');
});

test('a kept paste is offered whatever white space the box holds around it', () => {
  const value = ' ' + LOG.replace(/\n/g, ' ') + ' ';
  const p = openPage(FILES, { pasted: LOG, value });
  assert.deepStrictEqual(p.shown(), [OFFER(3)]);
});

test('a kept paste that is not a log starts nothing in an unfocused box', () => {
  const p = openPage(FILES, { pasted: 'cuda', value: 'cuda' });
  assert.deepStrictEqual(p.document.requested, []);
  assert.deepStrictEqual(p.shown(), []);
});

test('a log pasted into the results page is offered there too, above its results', () => {
  const p = pasted(LOG, { results: true });
  assert.deepStrictEqual(p.shown()[0], OFFER(3));
  assert.strictEqual(p.shown()[1].href, 'entries/cuda-oom.html');
});
