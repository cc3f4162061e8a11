// What the browser worker tells the diagnosis page besides the answer, where the CLI has no
// twin: progress, the pattern about to run (so the page can stop a worker that hangs), a
// fingerprint JavaScript cannot compile, a pattern over its time, the time budget, a file that
// cannot be read. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { python } = require('./python.js');
require('./worker.js');

/* The data of contract.export_data for one entry whose fingerprints are `fps`. */
function exported(fps) {
  return python(`
import json, sys
from pathlib import Path
from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import contract
from nanopedia.model import Fingerprint
src, _ = load_entry(Path("tests/fixtures/corpus/alpha-failure.yaml"))
fps = [Fingerprint(must_match=["x"], must_not_match=["y"], **fp) for fp in json.load(sys.stdin)]
print(json.dumps(contract.export_data([src.entry.model_copy(update={"fingerprints": fps})])))
`, fps);
}

/* An exact error, and a pattern without a literal the prefilter could look for (it runs on
   every buffer). */
const DATA = exported([
  { id: 'boom', pattern: 'BOOM', indicates: 'decisive' },
  { id: 'slow', pattern: 'x[a-z]*y', indicates: 'supporting' }
]);
const BOOM = exported([{ id: 'boom', pattern: 'BOOM', indicates: 'decisive' }]);

/* Every message the worker posts for one job, up to its last ('done' or 'error'). */
function run(message) {
  return new Promise((resolve) => {
    const posted = [];
    const scope = {
      postMessage(msg) {
        posted.push(msg);
        if (msg.type === 'done' || msg.type === 'error') resolve(posted);
      }
    };
    globalThis.NanopediaDiagnoseWorker(scope);
    scope.onmessage({ data: { budgetMs: 60000, ...message } });
  });
}

const file = (name, text) => ({ name, path: name, blob: new Blob([text]) });

test('progress says the bytes read of all files, after each buffer, per file', async () => {
  const data = { ...DATA, buffer_bytes: 8 };
  const posted = await run({ data, files: [file('a.log', 'one\ntwo\nBOOM\n'), file('b.log', 'BOOM\n')] });
  const progress = posted.filter((m) => m.type === 'progress').map((m) => [m.file, m.done, m.total]);
  assert.deepStrictEqual(progress, [['a.log', 8, 18], ['a.log', 13, 18], ['b.log', 18, 18]]);
  const done = posted[posted.length - 1];
  assert.strictEqual(done.type, 'done');
  assert.deepStrictEqual(done.result.matches.map((m) => m.evidence.map((e) => [e.file, e.line])),
    [[['a.log', 3], ['b.log', 1]]]);
});

test('progress through a gzip log counts its compressed bytes, up to the file\'s size', async () => {
  const zlib = require('node:zlib');
  const text = Array.from({ length: 4000 }, (_, i) => `line ${i} ${'q'.repeat(i % 50)}`).join('\n') + '\nBOOM\n';
  const packed = zlib.gzipSync(Buffer.from(text));
  const posted = await run({ data: { ...DATA, buffer_bytes: 4096 }, files: [file('a.log.gz', packed)] });
  const done = posted.filter((m) => m.type === 'progress').map((m) => m.done);
  assert.ok(done.length > 2, `${done.length} progress messages`);
  assert.ok(done.every((n, i) => n > 0 && n <= packed.length && (i === 0 || n >= done[i - 1])), String(done));
  assert.strictEqual(done[done.length - 1], packed.length);
});

test('the page is told each pattern before it runs, and when none runs', async () => {
  const posted = await run({ data: DATA, files: [file('a.log', 'BOOM xay\n')] });
  const probes = posted.filter((m) => m.type === 'probe').map((m) => [m.entry, m.id, m.file]);
  assert.deepStrictEqual(probes, [['alpha-failure', 'boom', 'a.log'], ['alpha-failure', 'slow', 'a.log'], [null, null, 'a.log']]);
});

test('the page hears of no pattern where the prefilter rules every one out', async () => {
  const posted = await run({ data: BOOM, files: [file('a.log', 'nothing here\n')] });
  assert.deepStrictEqual(posted.filter((m) => m.type === 'probe'), []);
  assert.deepStrictEqual(posted[posted.length - 1].result.matches, []);
});

test('the done message carries the answer, the time it took and what was left out', async () => {
  const [done] = (await run({ data: DATA, files: [file('a.log', 'BOOM\n')] })).slice(-1);
  assert.strictEqual(done.result.matches[0].id, 'alpha-failure');
  assert.strictEqual(done.result.matches[0].url, 'entries/alpha-failure.html');
  assert.deepStrictEqual(done.result.skipped, []);
  assert.deepStrictEqual(done.result.slow, []);
  assert.ok(done.result.seconds >= 0 && done.result.seconds < 60, done.result.seconds);
});

test('a fingerprint JavaScript cannot compile is skipped and named, the others still run', async () => {
  const data = JSON.parse(JSON.stringify(DATA));
  data.fingerprints[1].program = 'x(';
  const [done] = (await run({ data, files: [file('a.log', 'BOOM xay\n')] })).slice(-1);
  assert.deepStrictEqual(done.result.skipped.map((s) => s.split(':')[0]), ['alpha-failure/slow']);
  assert.match(done.result.skipped[0], /Invalid regular expression/);
  assert.deepStrictEqual(done.result.matches[0].evidence.map((e) => e.fingerprint), ['boom']);
});

test('fingerprints the page found too slow before are left out from the start', async () => {
  const slow = [{ entry: 'alpha-failure', id: 'slow', title: 'Alpha', file: 'a.log', seconds: 9 }];
  const posted = await run({ data: DATA, slow, files: [file('a.log', 'BOOM xay\n')] });
  const done = posted[posted.length - 1];
  assert.deepStrictEqual(posted.filter((m) => m.type === 'probe').map((m) => m.id), ['boom', null]);
  assert.deepStrictEqual(done.result.slow, slow);
  assert.deepStrictEqual(done.result.matches[0].evidence.map((e) => e.fingerprint), ['boom']);
});

test('a pattern past its time is left out with what it found, named with the file and its time; torchrun\'s and the launcher\'s never are', async () => {
  /* A millionth of a millisecond: every fingerprint is past it, torchrun's block never is. */
  const root = 'Root Cause (first observed failure):\n  rank      : 3 (local_rank: 3)\n';
  const text = 'BOOM\nglobal_ranks=[0, 1]\n' + ('x' + 'a'.repeat(20000) + 'y\n').repeat(3) + root;
  const posted = await run({ data: DATA, patternMs: 1e-6, files: [file('a.log', text), file('b.log', 'xay BOOM\n')] });
  const done = posted[posted.length - 1];
  assert.deepStrictEqual(done.result.slow.map((s) => [s.entry, s.id, s.title, s.file]).sort(),
    [['alpha-failure', 'boom', 'Alpha failure under FSDP', 'a.log'], ['alpha-failure', 'slow', 'Alpha failure under FSDP', 'a.log']]);
  assert.ok(done.result.slow.every((s) => s.seconds > 0));
  assert.deepStrictEqual(done.result.matches, []);
  assert.strictEqual(done.result.root_cause_rank, 3);
  assert.deepStrictEqual(posted.filter((m) => m.type === 'probe' && m.file === 'b.log').map((m) => m.id), [null]);
});

test('a pattern that turns slow on a later file is left out with what it found in the earlier ones', async () => {
  /* `x[a-z]*y` runs in no time over a.log and tries every x of b.log to its end. */
  const posted = await run({ data: DATA, patternMs: 50, files: [file('a.log', 'BOOM xay\n'), file('b.log', 'x'.repeat(12000) + '\n')] });
  const done = posted[posted.length - 1].result;
  assert.deepStrictEqual(done.slow.map((s) => s.id), ['slow']);
  assert.ok(done.slow[0].seconds > 0.05 && done.slow[0].seconds < done.seconds + 0.001, `${done.slow[0].seconds} s`);
  assert.deepStrictEqual(done.matches.map((m) => m.evidence.map((e) => e.fingerprint)), [['boom']]);
});

test('jobs that share their data start afresh: what one found too slow runs again in the next', async () => {
  const scope = {};
  globalThis.NanopediaDiagnoseWorker(scope);
  const job = scope.jobs(DATA);
  const result = (message) => new Promise((resolve) => {
    job({ budgetMs: 60000, ...message }, (msg) => { if (msg.type === 'done') resolve(msg.result); });
  });
  const first = await result({ patternMs: 1e-6, files: [file('a.log', 'BOOM xay\n')] });
  assert.deepStrictEqual(first.slow.map((s) => s.id).sort(), ['boom', 'slow']);
  const second = await result({ files: [file('a.log', 'BOOM xay\n')] });
  assert.deepStrictEqual(second.slow, []);
  assert.deepStrictEqual(second.matches[0].evidence.map((e) => e.fingerprint), ['boom', 'slow']);
});

test('past the time budget the worker stops and says which fingerprint was slowest', async () => {
  const posted = await run({ data: DATA, budgetMs: -1, files: [file('a.log', 'BOOM xay\n'), file('b.log', 'BOOM\n')] });
  const error = posted[posted.length - 1];
  assert.strictEqual(error.type, 'error');
  assert.strictEqual(error.timeout, true);
  assert.match(error.message, /^diagnosis stopped after \d+\.\d s, its time budget, while reading a\.log \(0\.0 MB of its text read\); the slowest fingerprint on the last buffer was 'alpha-failure\/(boom|slow)'\. Raise the time budget to read the whole log\.$/);
});

test('past the time budget the slowest fingerprint named is the one that took longest, not the first or the fastest', async () => {
  /* `x[a-z]*y` tries every x of the line to its end: thousands of times the work of BOOM. */
  const posted = await run({ data: DATA, budgetMs: -1, files: [file('a.log', 'BOOM ' + 'x'.repeat(3000) + '\n')] });
  assert.match(posted[posted.length - 1].message, /the slowest fingerprint on the last buffer was 'alpha-failure\/slow'\./);
});

test('the time a job took and the time a stopped one ran are its own, in seconds', async () => {
  const timed = async (message) => {
    const before = performance.now();
    const last = (await run(message)).pop();
    return [last, (performance.now() - before) / 1000];
  };
  const [done, took] = await timed({ data: BOOM, files: [file('a.log', 'BOOM\n')] });
  assert.ok(done.result.seconds >= 0 && done.result.seconds <= took, `${done.result.seconds} s of ${took} s`);
  const [stopped, ran] = await timed({ data: BOOM, budgetMs: -1, files: [file('a.log', 'BOOM\n')] });
  const said = Number(/^diagnosis stopped after (\d+\.\d) s,/.exec(stopped.message)[1]);
  assert.ok(said <= ran + 0.05, `${said} s of ${ran} s`);
});

test('past the time budget on a buffer no pattern ran over, no fingerprint is named', async () => {
  const posted = await run({ data: BOOM, budgetMs: -1, files: [file('a.log', 'nothing\n')] });
  assert.match(posted[posted.length - 1].message, /while reading a\.log \(0\.0 MB of its text read\); the slowest fingerprint on the last buffer was none found\./);
});

test('a file that cannot be read is named with the reason', async () => {
  const broken = { name: 'gone.log', path: 'gone.log', blob: { size: 1, slice() { return { arrayBuffer: () => Promise.reject(new Error('it was moved')) }; } } };
  const posted = await run({ data: DATA, files: [file('a.log', 'BOOM\n'), broken] });
  const error = posted[posted.length - 1];
  assert.deepStrictEqual([error.type, error.message, error.timeout], ['error', 'cannot read gone.log: it was moved', false]);
  const odd = { name: 'odd.log', path: 'odd.log', blob: { size: 1, slice() { return { arrayBuffer: () => Promise.reject('no reason') }; } } };
  assert.strictEqual((await run({ data: DATA, files: [odd] })).pop().message, 'cannot read odd.log: no reason');
});

test('a damaged gzip log is an error that names the file', async () => {
  const posted = await run({ data: DATA, files: [file('a.log.gz', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]))] });
  const error = posted[posted.length - 1];
  assert.strictEqual(error.type, 'error');
  assert.match(error.message, /^cannot read a\.log\.gz: /);
});

test('a line longer than the longest line kept is cut into pieces, each of that one line', async () => {
  const data = { ...BOOM, buffer_bytes: 16, max_line_bytes: 32 };
  const text = 'BOOM' + 'x'.repeat(60) + 'BOOM' + 'y'.repeat(30) + '\nBOOM\n';
  const done = (await run({ data, files: [file('a.log', text)] })).pop();
  assert.deepStrictEqual(done.result.matches[0].evidence.map((e) => [e.line, e.text.slice(0, 6)]),
    [[1, 'BOOMxx'], [1, 'BOOMyy'], [2, 'BOOM']]);
  assert.deepStrictEqual(done.result.files, [{ file: 'a.log', lines: 2, bytes: text.length }]);
});

test('a piece of an over-long line takes no rank from a prefix after its evidence', async () => {
  const data = { ...BOOM, buffer_bytes: 16, max_line_bytes: 32 };
  const text = 'BOOM [rank2]: ' + 'x'.repeat(40) + '\n';
  const done = (await run({ data, files: [file('a.log', text)] })).pop();
  assert.deepStrictEqual(done.result.matches[0].evidence.map((e) => [e.line, e.rank]), [[1, null]]);
});

test('a file chosen in a folder takes its rank from its path there, not only its name', async () => {
  const chosen = { name: 'stdout.log', path: 'logs/3/stdout.log', blob: new Blob(['BOOM\n']) };
  const done = (await run({ data: BOOM, files: [chosen] })).pop();
  assert.deepStrictEqual(done.result.matches[0].evidence.map((e) => [e.file, e.rank]), [['stdout.log', 3]]);
});

test('a log of one byte is not taken for gzip', async () => {
  const posted = await run({ data: DATA, files: [file('a.log', '\x1f')] });
  assert.deepStrictEqual(posted.pop().result.files, [{ file: 'a.log', lines: 1, bytes: 2 }]);
});

test('timeProbe runs a program as a scan does: one hit per line, each line confirmed alone', () => {
  const scope = {};
  globalThis.NanopediaDiagnoseWorker(scope);
  const run = scope.timeProbe('a\\sb');
  assert.deepStrictEqual(run('a b\nxa\nb\na\tb a b\nzz'), [0, 9]);
  assert.deepStrictEqual(run('no\na b'), [3]);
  assert.deepStrictEqual(scope.timeProbe('^x')('x\nyx\nx'), [0, 5]);
  /* Each hit is its line's start, wherever on the line the match begins or ends. */
  assert.deepStrictEqual(run('xx a b'), [0]);
  assert.deepStrictEqual(scope.timeProbe('b$')('ab\ncd'), [0]);
  assert.deepStrictEqual(scope.timeProbe('\\s*x')('\nx'), [1]);
});

test('a pattern runs over a buffer only where the text it requires is there', async () => {
  const { PATTERNS } = require('./patterns.js');
  const data = exported(PATTERNS.map(([id, pattern, , ignore]) => ({ id, pattern, indicates: 'supporting', ignore_case: Boolean(ignore) })));
  const ran = async (text) => (await run({ data, files: [file('a.log', text + '\n')] }))
    .filter((m) => m.type === 'probe' && m.id).map((m) => m.id);
  /* Patterns without a literal of three characters or more in every alternative (outside
     groups and classes) run everywhere; the others only where all the literals of one of
     their alternatives are, in any case. */
  const always = ['space', 'not-space', 'space-in-class', 'not-space-in-class', 'dot', 'groups-not-one',
    'alternative-without-literal', 'bracket-in-class', 'escape-in-class', 'escape-in-class-then-more', 'last-character'];
  assert.deepStrictEqual(await ran('nothing to see'), always);
  for (const [text, also] of [
    ['AVERYVERYVERYLONG', ['longer-than-a-literal']],
    ['the BCD of it', ['hex']],
    ['jklm', ['nested-group']],
    ['a NOPQ', ['not-bracket-first', 'nested-group']],
    ['rst', ['plus']],
    ['yzzy', ['count']],
    ['xyz and uvw', ['star']],
    ['uv and xyz', ['star']],
    ['ghi', ['alternatives-in-group']],
    ['defg', ['optional-first-group', 'optional-letter']],
    ['r-s:t[u', ['escaped-punctuation']],
    ['bcdy', ['hex', 'inside-others-2']],
    ['xabcdz', ['hex', 'inside-others-3']],
    ['[RANK', []],
    ['[RANK]: OOPS', ['rank-prefix']],
    ['hang', ['alternation']],
    ['FIZZ BUZZ', ['ignore-case-z']],
    ['abc def', ['optional-letter']]
  ]) {
    const got = await ran(text);
    assert.deepStrictEqual(got.filter((id) => !always.includes(id)), also, text);
  }
});
