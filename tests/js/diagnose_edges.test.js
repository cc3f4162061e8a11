// Edges of what the browser worker reads in a log, each where a one-character slip in the worker
// would change the answer (found by bench/mutation_js.py): the bytes that end a terminal colour
// sequence, a carriage return or a colour at the very start of a read buffer, the longest rank
// the launcher lists. Each case runs through the worker's page path and through the CLI on the
// same bytes; both must agree, and the worker's answer must hold what the case states. Run by
// `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { cliAnswers, essentials, diagnoseCase } = require('./logs.js');

const ENTRIES = { 'boom-failure': [{ id: 'boom', pattern: 'BOOM', indicates: 'decisive' }] };

const CASES = [];

/* A case: its files ({name: text}), and `expect(result, all)` on the worker's answer (`all`: its
   evidence, best candidate first); other entries or a smaller read buffer than the CLI's. */
function logCase(name, files, expect, { entries = ENTRIES, buffer_bytes = undefined } = {}) {
  CASES.push({
    name, expect, entries, buffer_bytes,
    files: Object.entries(files).map(([file, text]) => ({ name: file, bytes: Buffer.from(text) }))
  });
}

const log = (...lines) => lines.join('\n') + '\n';
const texts = (all) => all.map((e) => e.text);

// ---- Carriage returns and terminal colours ----

logCase('a colour sequence ends at any final byte from @ to ~, after parameters from 0 and intermediates to /',
  { 'a.log': log('B\x1b[0/@OOM at', 'B\x1b[~OOM tilde', 'B\x1b[1;2 /mOOM both', 'B\x1b[0?mOOM params') },
  (r, all) => assert.deepStrictEqual(texts(all), ['BOOM at', 'BOOM tilde', 'BOOM both', 'BOOM params']));

logCase('bytes just outside the ranges do not end a colour sequence',
  { 'a.log': log('B\x1b[\x7fmOOM', 'x\x1b[1\x1fm BOOM') },
  (r, all) => assert.deepStrictEqual(texts(all), ['x\x1b[1\x1fm BOOM']));

logCase('a colour sequence that opens the log is removed',
  { 'a.log': '\x1b[31mBO\x1b[0mOM\n' },
  (r, all) => assert.deepStrictEqual(texts(all), ['BOOM']));

logCase('a carriage return that opens a read buffer is a space, and so are the later ones',
  { 'a.log': '\rfoo\rBOOM\n' + 'y'.repeat(40) + '\n\rbar\rBOOM\n' },
  (r, all) => assert.deepStrictEqual(texts(all), ['foo BOOM', 'bar BOOM']),
  { buffer_bytes: 48 });

// ---- Hard-wrapped lines ----

/* Records a terminal of 80 columns cut between two of `c`: the first and last letters of
   either case and the first and last digits are each a cut inside a word or number. */
for (const c of ['A', 'Z', 'a', 'z', '0', '9']) {
  const records = [0, 1, 2, 3].map((i) => `[rank0]: step ${i} ` + c.repeat(90));
  const record = '[rank1]: RuntimeError: BOOM ' + c.repeat(70);
  logCase(`hard wrapping: pieces cut between two ${c} are joined back`,
    { 'a.log': log(...[...records, record].flatMap((r) => [r.slice(0, 80), r.slice(80)])) },
    (r, all) => assert.deepStrictEqual(texts(all), [record]));
}

/* Records cut into pieces of `width` columns. */
const pieces = (width, records) => records.flatMap((r) => r.match(new RegExp(`.{1,${width}}`, 'g')));
const RECORD = '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(70);

logCase('hard wrapping: a terminal of 60 columns, the narrowest taken for one',
  { 'a.log': log(...pieces(60, [0, 1, 2].map((i) => `[rank0]: step ${i} ` + 'x'.repeat(60)).concat([RECORD]))) },
  (r, all) => assert.deepStrictEqual(texts(all), [RECORD]));

logCase('hard wrapping: two different lines of the width are enough',
  { 'a.log': log(...pieces(80, ['[rank0]: step 0 ' + 'x'.repeat(90), RECORD])) },
  (r, all) => assert.deepStrictEqual(texts(all), [RECORD]));

logCase('hard wrapping: lines of exactly nine tenths of the width are not prose near it',
  { 'a.log': log(...pieces(80, [0, 1, 2, 3].map((i) => `[rank0]: step ${i} ` + 'x'.repeat(90))),
    ...[0, 1, 2, 3, 4, 5].map((i) => `prose ${i} ` + 'p'.repeat(64)), ...pieces(80, [RECORD])) },
  (r, all) => assert.deepStrictEqual(texts(all), [RECORD]));

const STEPS = [0, 1, 2, 3].map((i) => `[rank0]: step ${i} ` + 'x'.repeat(90));

/* A wrapped piece padded with one space, or with a space before its last character, is no
   padding: only two spaces at its end close a record early. */
for (const [name, record] of [
  ['ends in one space', '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(51) + ' ' + 'y'.repeat(30)],
  ['has a space before its last character', '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(50) + ' y' + 'y'.repeat(30)]
]) {
  logCase(`hard wrapping: a piece that ${name} is joined to the next`,
    { 'a.log': log(...pieces(80, [...STEPS, record])) },
    (r, all) => assert.deepStrictEqual(texts(all), [record]));
}

logCase('hard wrapping: a log that ends in a piece of the width keeps its line count',
  { 'a.log': log(...pieces(80, [...STEPS, RECORD]), 'z'.repeat(80)) },
  (r) => assert.deepStrictEqual(r.files.map((f) => f.lines), [11]));

// ---- Timestamps from the buffer before ----

logCase('a line without a timestamp takes one from anywhere in a smaller buffer before it',
  { 'a.log': log('2024-07-05 10:00:00 start', 'x'.repeat(8900), 'z'.repeat(2000), 'BOOM') },
  (r) => assert.deepStrictEqual(r.matches[0].evidence.map((e) => [e.line, e.timestamp]), [[4, '0705100000.000000000']]),
  { buffer_bytes: 10000 });

logCase('a timestamp in the buffer before but more than 16 KiB back is not taken',
  { 'a.log': log('a'.repeat(1620), '2024-07-05 10:00:00 stamp', 'c'.repeat(16300), 'd'.repeat(3000), 'BOOM') },
  (r) => assert.deepStrictEqual(r.matches[0].evidence.map((e) => [e.line, e.timestamp]), [[5, null]]),
  { buffer_bytes: 20000 });

// ---- Ranks from file names ----

logCase('a file name gives its rank in any case',
  { 'Rank3.log': log('BOOM'), 'WORKER-4.txt': log('BOOM') },
  (r, all) => assert.deepStrictEqual(all.map((e) => [e.file, e.rank]), [['Rank3.log', 3], ['WORKER-4.txt', 4]]));

// ---- Ranks the launcher lists ----

logCase('a launcher rank of six digits is a rank, one of seven is not',
  { 'a.log': log('global_ranks=[123456, 1234567, 99]', '[rank99]: BOOM') },
  (r) => assert.deepStrictEqual(r.silent_ranks, [123456]));

/* 65,537 ranks on one line, highest first, then rank 0 on another: the first 65,536 of a line
   are read, and of all the ranks read the lowest 65,536 are kept. */
const listed = Array.from({ length: 65537 }, (_, i) => 65537 - i);
logCase('the launcher\'s ranks: the first 65,536 of a line, then the lowest 65,536 of all',
  { 'a.log': log(`global_ranks=[${listed.join(', ')}]`, 'global_ranks=[0]', '[rank5]: BOOM') },
  (r) => {
    const silent = new Set(r.silent_ranks);
    assert.deepStrictEqual([silent.size, silent.has(0), silent.has(1), silent.has(2), silent.has(65536), silent.has(65537)],
      [65535, true, false, true, true, false]);
  });

// ---- torchrun's Root Cause block ----

/* torchrun lists the other failed ranks before the Root Cause block: the rank lines of a big job
   far from any heading do not crowd out the block's own. */
logCase('a Root Cause block after hundreds of other failures still names its rank',
  { 'a.log': log('BOOM', 'Failures:', ...Array.from({ length: 420 }, (_, i) => `  rank      : ${i + 10} (local_rank: 0)`),
    'Root Cause (first observed failure):', '[0]:', `  rank      : 3 (local_rank: 3)`) },
  (r) => assert.deepStrictEqual([r.root_cause_rank, r.initiating_rank], [3, 3]));

logCase('a Root Cause heading cut short before hundreds of failures does not hide the next block\'s rank',
  { 'a.log': log('BOOM', 'Root Cause (first observed failure):', ...'abcdefghij'.split(''),
    ...Array.from({ length: 420 }, (_, i) => `  rank      : ${i + 10} (local_rank: 0)`),
    'Root Cause (first observed failure):', '[0]:', `  rank      : 3 (local_rank: 3)`) },
  (r) => assert.deepStrictEqual(r.root_cause_rank, 3));

// ---- Silent ranks ----

logCase('a file whose name gives no rank adds none to the silent ranks',
  { 'rank0.log': log('[rank0]: BOOM'), 'other.log': log('fine') },
  (r) => assert.deepStrictEqual(r.silent_ranks, []));

logCase('the launcher\'s ranks count once any line names a rank, even if others name none',
  { 'a.log': log('global_ranks=[3, 2, 0, 1]', '[rank1]: BOOM', 'a', 'b', 'c', 'd', 'BOOM') },
  (r) => {
    assert.deepStrictEqual(r.matches[0].evidence.map((e) => e.rank), [1, null]);
    assert.deepStrictEqual(r.silent_ranks, [0, 2, 3]);
  });

logCase('silent ranks from file names and the launcher come in order',
  { 'a.log': log('global_ranks=[0, 1, 2]', '[rank1]: BOOM'), 'rank3.log': log('fine') },
  (r) => assert.deepStrictEqual(r.silent_ranks, [0, 2, 3]));

// ---- Candidates and the first failure ----

const HANG = { 'hang-timeout': [{ id: 'watchdog', pattern: 'Watchdog caught collective', indicates: 'supporting', collateral: true }] };

logCase('only lines that name a rank say which rank fell behind in NCCL work',
  { 'a.log': log('[rank0]: Watchdog caught collective operation timeout: last enqueued NCCL work: 20',
    'Watchdog caught collective operation timeout: last enqueued NCCL work: 5',
    '[rank1]: Watchdog caught collective operation timeout: last enqueued NCCL work: 18') },
  (r) => assert.deepStrictEqual([r.initiating.line, r.initiating_rank], [3, 1]),
  { entries: HANG });

logCase('equal earliest timestamps: a line past the cap in the first file comes before the next file',
  { 'a.log': log(...Array.from({ length: 50 }, (_, i) => `2024-07-05 10:00:05 BOOM ${i}`), '2024-07-05 10:00:01 BOOM late'),
    'b.log': log('2024-07-05 10:00:01 BOOM b') },
  (r) => assert.deepStrictEqual([r.initiating.file, r.initiating.line], ['a.log', 51]));

logCase('an entry with a benign line and a supporting one is not benign',
  { 'a.log': log('SKIP this', 'WARN that') },
  (r) => assert.deepStrictEqual(r.matches.map((m) => [m.id, m.benign, m.confidence]), [['mixed', false, 'possible']]),
  { entries: { mixed: [{ id: 'skip', pattern: 'SKIP', indicates: 'benign' }, { id: 'warn', pattern: 'WARN', indicates: 'supporting' }] } });

logCase('context beside a line of its own that no other entry shares does not place an entry first',
  { 'a.log': log('CTX here', 'SUPA here', 'SUPB1 here', 'SUPB2 here', 'SUPB3 here') },
  (r) => assert.deepStrictEqual(r.matches.map((m) => m.id), ['b-entry', 'a-entry']),
  { entries: {
    'a-entry': [{ id: 'ctx', pattern: 'CTX', indicates: 'context' }, { id: 'supa', pattern: 'SUPA', indicates: 'supporting' }],
    'b-entry': [1, 2, 3].map((n) => ({ id: `supb${n}`, pattern: `SUPB${n}`, indicates: 'supporting' }))
  } });

logCase('a context line shared with another entry does not place an entry first',
  { 'a.log': log('CTX here', 'SUPA here', 'SUPB1 here', 'SUPB2 here') },
  (r) => assert.deepStrictEqual(r.matches.map((m) => m.id), ['b-entry', 'a-entry']),
  { entries: {
    'a-entry': [{ id: 'ctx', pattern: 'CTX', indicates: 'context' }, { id: 'supa', pattern: 'SUPA', indicates: 'supporting' }],
    'b-entry': [{ id: 'ctx', pattern: 'CTX', indicates: 'supporting' }, { id: 'supb1', pattern: 'SUPB1', indicates: 'supporting' },
      { id: 'supb2', pattern: 'SUPB2', indicates: 'supporting' }]
  } });

logCase('an entry with a decisive line of its own is never placed first for its context',
  { 'a.log': log('DAA here', 'CTXA here', 'SHH here', 'DBB here', 'SB1 here', 'SB2 here') },
  (r) => assert.deepStrictEqual(r.matches.map((m) => [m.id, m.possible]), [['b-entry', false], ['a-entry', false]]),
  { entries: {
    'a-entry': [{ id: 'da', pattern: 'DAA', indicates: 'decisive' }, { id: 'ctxa', pattern: 'CTXA', indicates: 'context' },
      { id: 'sh', pattern: 'SHH', indicates: 'supporting' }],
    'b-entry': [{ id: 'db', pattern: 'DBB', indicates: 'decisive' }, { id: 'sh', pattern: 'SHH', indicates: 'supporting' },
      { id: 'sb1', pattern: 'SB1', indicates: 'supporting' }, { id: 'sb2', pattern: 'SB2', indicates: 'supporting' }]
  } });

logCase('an answer comes from the entry\'s own fingerprint, not another entry\'s of the same id',
  { 'a.log': log('BOOM') },
  (r) => assert.deepStrictEqual(r.matches.map((m) => [m.id, m.cause]), [['a-entry', 'Model code casts to self.dtype']]),
  { entries: {
    'a-entry': [{ id: 'same', pattern: 'BOOM', indicates: 'decisive', cause: 'cast' }],
    'b-entry': [{ id: 'same', pattern: 'NEVER', indicates: 'decisive', cause: 'flaky' }]
  } });

const CLI = cliAnswers(CASES);

CASES.forEach((c, i) => {
  test(c.name, async () => {
    const result = await diagnoseCase(CLI[i].data, c);
    assert.deepStrictEqual(essentials(result), essentials(CLI[i].cli), 'the CLI answers the same');
    c.expect(result, result.matches.flatMap((m) => m.evidence));
  });
});
