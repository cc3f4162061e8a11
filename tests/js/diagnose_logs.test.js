// What the browser worker reads in a log, case by case: line numbers (carriage returns, CRLF,
// terminal colours, hard-wrapped lines, buffers), timestamps (ISO and glog, the nearest earlier
// line's), ranks (prefixes, messages, file names, neighbouring lines), the first failure
// (timestamps, then file and line order), collateral lines, torchrun's Root Cause block and
// the launcher's rank list. Each case runs through the worker's page path and through the CLI
// on the same bytes: both must give the answer the case states. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const zlib = require('node:zlib');
const { cliAnswers, essentials, diagnoseCase } = require('./logs.js');

/* Entries most cases use: an exact error, and a collective timeout that is collateral (a rank
   waiting on one that died). */
const ENTRIES = {
  'boom-failure': [{ id: 'boom', pattern: 'BOOM', indicates: 'decisive' }],
  'hang-timeout': [{ id: 'watchdog', pattern: 'Watchdog caught collective', indicates: 'supporting', collateral: true }]
};

const CASES = [];

/* A case: its files ({name: text or bytes}), what the answer must hold (see `check`), and
   other entries or a smaller read buffer than the CLI's. */
function logCase(name, files, expect, { entries = ENTRIES, buffer_bytes = undefined } = {}) {
  CASES.push({
    name, expect, entries, buffer_bytes,
    files: Object.entries(files).map(([file, text]) => ({ name: file, bytes: Buffer.from(text) }))
  });
}

/* Lines of a log joined by LF, with a final one. */
const log = (...lines) => lines.join('\n') + '\n';

// ---- Line numbers and the text shown ----

logCase('a lone carriage return (a progress bar) is a space, so line numbers stay those of the file',
  { 'a.log': 'epoch 1\n10%\r50%\r100% BOOM\nBOOM again\n' },
  { evidence: [['a.log', 2, null, null], ['a.log', 3, null, null]],
    text: ['10% 50% 100% BOOM', 'BOOM again'] });

logCase('CRLF ends one line, blank CRLF lines count too',
  { 'a.log': 'start\r\nBOOM one\r\n\r\nBOOM two\r\n' },
  { evidence: [['a.log', 2, null, null], ['a.log', 4, null, null]], text: ['BOOM one', 'BOOM two'] });

logCase('a carriage return that ends the log is a space',
  { 'a.log': 'x\nBOOM\r' },
  { evidence: [['a.log', 2, null, null]], text: ['BOOM'], files: [['a.log', 2, 8]] });

logCase('terminal colours are removed before matching, intermediate bytes and all',
  { 'a.log': log('\x1b[1;31mBO\x1b[0mOM in red', '\x1b[?25lBOOM hidden cursor', 'B\x1b[1 qOOM', 'an ESC alone \x1b BOOM', '\x1b[12\x01 no final byte BOOM') },
  { evidence: [['a.log', 1, null, null], ['a.log', 2, null, null], ['a.log', 3, null, null], ['a.log', 4, null, null], ['a.log', 5, null, null]],
    text: ['BOOM in red', 'BOOM hidden cursor', 'BOOM', 'an ESC alone \x1b BOOM', '\x1b[12\x01 no final byte BOOM'] });

logCase('a colour sequence cut by the end of the log is kept as it is',
  { 'a.log': 'BOOM\n\x1b[3' },
  { evidence: [['a.log', 1, null, null]], files: [['a.log', 2, 9]] });

logCase('the text shown is stripped of Python\'s whitespace on both sides, not of others',
  { 'a.log': log('\t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0 BOOM \u2003\u3000', '\u200bBOOM\u200b') },
  { text: ['BOOM', '\u200bBOOM\u200b'] });

logCase('the text shown is cut at 2,000 characters, not bytes',
  { 'a.log': log('BOOM ' + '\u00e9'.repeat(2100)) },
  { text: ['BOOM ' + '\u00e9'.repeat(1995)] });

logCase('a log without a final newline still has its last line read',
  { 'a.log': 'one\ntwo BOOM' },
  { evidence: [['a.log', 2, null, null]], files: [['a.log', 2, 13]] });

logCase('an empty log has no lines',
  { 'a.log': '' },
  { ranking: [], files: [['a.log', 0, 0]] });

logCase('lines are counted across read buffers, and a line cut by a buffer is read whole',
  { 'a.log': log('x'.repeat(50), 'y'.repeat(50), 'BOOM ' + 'z'.repeat(60), 'w'.repeat(30), 'BOOM last') },
  { evidence: [['a.log', 3, null, null], ['a.log', 5, null, null]] },
  { buffer_bytes: 64 });

logCase('a line longer than a read buffer is carried into the next and read whole',
  { 'a.log': 'BOOM' + 'x'.repeat(100) + '\nBOOM\n' },
  { evidence: [['a.log', 1, null, null], ['a.log', 2, null, null]] },
  { buffer_bytes: 16 });

/* A record cut at 80 columns in the middle of a word, as a terminal hard-wraps it. */
const wrapped = (record) => [record.slice(0, 80), record.slice(80)];
logCase('records a terminal hard-wrapped are joined back, the line numbers kept',
  { 'a.log': log(...[0, 1, 2, 3, 4, 5].flatMap((i) => wrapped(`[rank0]: step ${i} ` + 'x'.repeat(100))),
    ...wrapped('[rank1]: RuntimeError: BOOM ' + 'y'.repeat(60)), 'BOOM alone') },
  { evidence: [['a.log', 13, 1, null], ['a.log', 15, 1, null]],
    text: ['[rank1]: RuntimeError: BOOM ' + 'y'.repeat(60), 'BOOM alone'] });

/* Lines a terminal of `width` columns wrapped: each record cut into pieces of `width`. */
const hardWrapped = (width, records) => records.flatMap((r) => r.match(new RegExp(`.{1,${width}}`, 'gu')));
const RECORDS = [0, 1, 2, 3].map((i) => `[rank0]: step ${i} ` + 'x'.repeat(90));
const JOINED = '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(60);

for (const [name, lines, joined] of [
  ['a record cut in the middle of a number is joined too',
    [...hardWrapped(80, RECORDS.map((r) => r.replace(/x+$/, '1'.repeat(90)))), ...hardWrapped(80, ['[rank1]: BOOM ' + '2'.repeat(80)])], true],
  ['lines of the width with one text only are no wrapping',
    ['z'.repeat(70), 'z'.repeat(70), ...hardWrapped(80, [JOINED])], false],
  ['text of many widths near the longest is prose, not wrapping',
    [...hardWrapped(80, RECORDS), ...Array.from({ length: 10 }, (_, i) => 'p'.repeat(73 + (i % 6)) + String(i)), ...hardWrapped(80, [JOINED])], false],
  ['two lines wider than the width say it is no wrapping',
    [...hardWrapped(80, RECORDS), 'w'.repeat(90), 'v'.repeat(95), ...hardWrapped(80, [JOINED])], false],
  ['one line wider than the width does not stop the joining',
    [...hardWrapped(80, RECORDS), ...hardWrapped(80, [JOINED]), 'w'.repeat(90)], true],
  ['pieces that end and start in different kinds of character are no wrapping',
    [...RECORDS.flatMap((r) => [r.slice(0, 79) + '-', r.slice(80)]), '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(51) + '-', 'zzz'], false],
  ['the widest of two wrapping widths is the terminal\'s',
    [...hardWrapped(60, RECORDS.slice(0, 2)), ...hardWrapped(100, RECORDS.map((r) => r + 'x'.repeat(20)).slice(2)), ...hardWrapped(100, ['[rank1]: RuntimeError: BOOM ' + 'y'.repeat(90)])], true],
  ['columns count characters, not bytes',
    [...hardWrapped(80, RECORDS.map((r) => r.replace(/x+$/, '\u00e9'.repeat(40) + 'x'.repeat(50)))),
      ...hardWrapped(80, ['[rank1]: BOOM ' + '\u00e8'.repeat(40) + 'y'.repeat(40)])], true]
]) {
  logCase(`hard wrapping: ${name}`, { 'a.log': log(...lines) }, { joined: [joined] });
}

logCase('a line as long as the width in bytes but not in characters is no wrapped piece',
  { 'a.log': log(...hardWrapped(80, RECORDS), ...hardWrapped(80, [JOINED]), '\u00e9'.repeat(10) + 'a'.repeat(60), 'BOOM here') },
  { text: [JOINED, 'BOOM here'] });

logCase('a wrapped line padded with two spaces ends its record',
  { 'a.log': log(...hardWrapped(80, RECORDS), '[rank1]: RuntimeError: BOOM ' + 'y'.repeat(50) + '  ', 'next record') },
  { text: ['[rank1]: RuntimeError: BOOM ' + 'y'.repeat(50)] });

logCase('a gzip log read in many small buffers gives the lines of its text',
  { 'a.log.gz': zlib.gzipSync(Buffer.from(log(...Array.from({ length: 3000 }, (_, i) => (i % 500 === 7 ? `[rank${i}]: BOOM at ${i}` : `line ${i} ` + 'q'.repeat(i % 90)))))) },
  { evidence: [8, 508, 1008, 1508, 2008, 2508].map((n) => ['a.log.gz', n, n - 1, null]) },
  { buffer_bytes: 1000 });

logCase('colour sequences cut by a buffer are removed on both sides of the cut',
  { 'a.log': log('x'.repeat(40), '\x1b[31mBOOM\x1b[0m ' + 'y'.repeat(40), '\x1b[1;33;40mBOOM\x1b[m') },
  { text: ['BOOM ' + 'y'.repeat(40), 'BOOM'] },
  { buffer_bytes: 48 });

// ---- Timestamps ----

for (const [line, stamp, why] of [
  ['2024-07-05 10:00:00,123 BOOM', '0705100000.123000000', 'ISO, a space and a comma'],
  ['2024-07-05T10:00:00.1234567891 BOOM', '0705100000.123456789', 'ISO, a T and nanoseconds, cut'],
  ['2024-07-05_10:00:00 BOOM', '0705100000.000000000', 'ISO, an underscore, no fraction'],
  ['E0710 18:00:32.5 4242 file.cc:7] BOOM', '0710180032.500000000', 'glog with a zero-padded month'],
  ['E710 18:00:32.123456 4242 file.cc:7] BOOM', '0710180032.123456000', 'glog as NCCL prints it: July without a leading zero'],
  ['I1005 01:02:03.000001 1 f.cc:1] BOOM', '1005010203.000001000', 'glog in October'],
  ['2024-07-05 10:00:00 then E710 18:00:32.5 BOOM', '0710180032.500000000', 'the glog stamp that starts last'],
  ['E710 18:00:32.5 then 2024-07-05 10:00:00 BOOM', '0705100000.000000000', 'the ISO stamp that starts last'],
  ['2024-07-05 10:00:00 and 2024-07-06 11:00:00 BOOM', '0706110000.000000000', 'the last of two ISO stamps'],
  ['20240705 10:00:00 BOOM', null, 'no stamp: the date has no dashes'],
  ['x2024-07-05 10:00:00 BOOM', null, 'no stamp: it does not start a word']
]) {
  logCase(`timestamp: ${why}`, { 'a.log': log(line) }, { evidence: [['a.log', 1, null, stamp]] });
}

logCase('a line without a timestamp takes that of the nearest earlier line',
  { 'a.log': log('2024-07-05 10:00:00,5 starting', '2024-07-05 10:00:01,5 step', 'Traceback (most recent call last):', 'BOOM') },
  { evidence: [['a.log', 4, null, '0705100001.500000000']] });

logCase('an earlier timestamp that starts more than 16 KiB back is not taken',
  { 'a.log': log('2024-07-05 10:00:00 start', 'x'.repeat((16 << 10) - 26), 'BOOM') },
  { evidence: [['a.log', 3, null, null]] });

logCase('an earlier timestamp that starts 16 KiB back is taken',
  { 'a.log': log('2024-07-05 10:00:00 start', 'x'.repeat((16 << 10) - 27), 'BOOM') },
  { evidence: [['a.log', 3, null, '0705100000.000000000']] });

logCase('an earlier timestamp in the buffer before is taken',
  { 'a.log': log('2024-07-05 10:00:00 start', 'x'.repeat(40), 'BOOM') },
  { evidence: [['a.log', 3, null, '0705100000.000000000']] },
  { buffer_bytes: 64 });

// ---- Ranks ----

logCase('a rank from the line\'s prefix, its message, then the file name',
  {
    'a.log': log('[rank3]: BOOM prefix', '[default2]:BOOM torchrun prefix', '  [worker_5]: BOOM any prefix word',
      'BOOM [Rank 4] message', 'BOOM Rank 6: message', 'BOOM on rank 7', 'OVERFLOW! Rank 8 BOOM',
      'BOOM for rank 9: x'),
    'b.log': log('BOOM rank 10 names none', 'BOOM [rank1234567]: too long', 'BOOM [Rank 1234567]'),
    'logs/rank11.log': log('BOOM file'),
    'logs/worker-12.txt': log('BOOM file'),
    'logs/13/stderr.log': log('BOOM folder'),
    'logs/14/stdout': log('BOOM folder'),
    'logs/15/other.log': log('BOOM not a rank folder'),
    'logs/16/./stderr.log': log('BOOM dot in the path'),
    'logs/17/stderr.': log('BOOM empty extension'),
    'logs/18/.stderr': log('BOOM hidden file'),
    'logs/1234567/stderr.log': log('BOOM too long')
  },
  { evidence: [['a.log', 1, 3, null], ['a.log', 2, 2, null], ['a.log', 3, 5, null],
    ['a.log', 4, 4, null], ['a.log', 5, 6, null], ['a.log', 6, 7, null], ['a.log', 7, 8, null],
    ['a.log', 8, 9, null], ['b.log', 1, null, null], ['b.log', 2, null, null], ['b.log', 3, null, null],
    ['logs/rank11.log', 1, 11, null], ['logs/worker-12.txt', 1, 12, null],
    ['logs/13/stderr.log', 1, 13, null], ['logs/14/stdout', 1, 14, null],
    ['logs/15/other.log', 1, null, null], ['logs/16/./stderr.log', 1, 16, null],
    ['logs/17/stderr.', 1, null, null], ['logs/18/.stderr', 1, null, null],
    ['logs/1234567/stderr.log', 1, null, null]] });

logCase('records joined on one line keep their own ranks',
  { 'a.log': log('[rank0]: fine[rank1]: BOOM', '[rank2]: BOOM[rank3]: fine'), 'b.log': log('BOOM[default4]: fine') },
  { evidence: [['a.log', 1, 1, null], ['a.log', 2, 2, null], ['b.log', 1, null, null]] });

logCase('a line naming no rank takes that of the nearest line within three that names one',
  { 'a.log': log('[rank5]: Traceback', 'frame', 'frame', 'BOOM three below', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', '[rank6]: far', 'a', 'b', 'c', 'BOOM four below') },
  { evidence: [['a.log', 4, 5, null], ['a.log', 17, null, null]] });

logCase('the nearest line after counts too, and at the same distance two ranks cancel out',
  { 'a.log': log('x', 'BOOM before', 'y', '[rank2]: after', 'z', 'z', 'z', 'z', 'z', 'z', 'z', '[rank3]: one', 'BOOM between', '[rank4]: other') },
  { evidence: [['a.log', 2, 2, null], ['a.log', 13, null, null]] });

logCase('a neighbour counts even at the first and last line of the log',
  { 'a.log': '[rank7]: first\nBOOM\n\nBOOM\n[rank8]: last\n' },
  { evidence: [['a.log', 2, 7, null], ['a.log', 4, 8, null]] });

logCase('the file\'s rank comes before a neighbour\'s',
  { 'rank1.log': log('[rank2]: x', 'BOOM') },
  { evidence: [['rank1.log', 2, 1, null]] });

// ---- The first failure ----

logCase('the first failure is the earliest timestamp when every decisive line has one',
  { 'a.log': log('2024-07-05 10:00:05 [rank1] BOOM'), 'b.log': log('2024-07-05 10:00:01 [Rank 2] BOOM') },
  { first: ['b.log', 1, 2], reason: 'earliest decisive error (timestamps)' });

logCase('a glog month without a leading zero: July comes before October',
  { 'a.log': log('E1005 10:00:00.000000 1 f.cc:1] [Rank 1] BOOM'), 'b.log': log('E710 10:00:00.000000 1 f.cc:1] [Rank 2] BOOM') },
  { first: ['b.log', 1, 2], reason: 'earliest decisive error (timestamps)' });

logCase('equal timestamps: the earlier file, then the earlier line',
  { 'a.log': log('2024-07-05 10:00:00 x', '2024-07-05 10:00:00 [Rank 1] BOOM'), 'b.log': log('2024-07-05 10:00:00 [Rank 2] BOOM') },
  { first: ['a.log', 2, 1] });

logCase('an untimed decisive line never sorts before timed ones: then the order of files and lines decides',
  { 'a.log': log('2024-07-05 10:00:09 [Rank 1] BOOM'), 'b.log': log('[Rank 2] BOOM') },
  { first: ['a.log', 1, 1], reason: 'earliest decisive error (line order)' });

logCase('a first error line without a rank takes the rank of the same error on a later line',
  { 'a.log': log('BOOM what()', 'x', 'x', 'x', 'x', '[Rank 3] BOOM again') },
  { first: ['a.log', 1, null],
    rank: 3,
    reason: 'earliest decisive error (line order); its rank from line 6, the same error on a line that names the rank' });

logCase('a first failure whose error names no rank anywhere has none',
  { 'a.log': log('BOOM') },
  { first: ['a.log', 1, null], rank: null, reason: 'earliest decisive error (line order)' });

// ---- Collateral lines ----

logCase('a collateral timeout beside a real failure weighs a tenth and is never the first failure',
  { 'a.log': log('[rank0]: Watchdog caught collective operation timeout', '[rank1]: BOOM') },
  { ranking: [['boom-failure', 10, false], ['hang-timeout', 0.3, true]],
    collateral: [false, true], first: ['a.log', 2, 1] });

logCase('collateral lines alone weigh in full and give the first failure of the best candidate',
  { 'a.log': log('[rank0]: Watchdog caught collective operation timeout', '[rank1]: Watchdog caught collective operation timeout') },
  { ranking: [['hang-timeout', 3.3, true]], collateral: [false, false],
    first: ['a.log', 1, 0], reason: 'earliest line of the best candidate' });

logCase('the rank whose last enqueued NCCL work is lowest fell behind',
  { 'a.log': log('[rank0]: Watchdog caught collective operation timeout: last enqueued NCCL work: 20',
    '[rank1]: Watchdog caught collective operation timeout: last enqueued NCCL work: 18',
    '[rank2]: Watchdog caught collective operation timeout: last enqueued NCCL work: 20') },
  { first: ['a.log', 2, 1], reason: 'lowest last enqueued NCCL work (the rank that fell behind)' });

// ---- torchrun's Root Cause block and the launcher's ranks ----

/* torchrun's summary of a failed job, after lines that name no rank. */
const ROOT = (rank) => ['', '', '', 'Root Cause (first observed failure):', '[0]:', '  time      : 2024-07-05_10:00:00',
  '  host      : node1', `  rank      : ${rank} (local_rank: ${rank})`, '  exitcode  : 1 (pid: 42)'];

logCase('torchrun\'s Root Cause block decides when no decisive line names a rank',
  { 'a.log': log('BOOM', ...ROOT(3)) },
  { rank: 3, root: 3, first: null, reason: 'torchrun Root Cause (first observed failure) block' });

logCase('the first Root Cause block counts, not the last',
  { 'a.log': log('BOOM', ...ROOT(3), ...ROOT(5)) },
  { rank: 3, root: 3 });

logCase('a rank line eight lines below the heading is the block\'s rank',
  { 'a.log': log('BOOM', '', '', '', 'Root Cause (first observed failure):', 'a', 'b', 'c', 'd', 'e', 'f', 'g', '  rank      : 3 (local_rank: 3)') },
  { rank: 3, root: 3 });

logCase('a Root Cause block alone names the rank, with no line to show for it',
  { 'a.log': log(...ROOT(2)) },
  { rank: 2, root: 2, first: null, ranking: [], reason: 'torchrun Root Cause (first observed failure) block' });

logCase('a rank line too far below the heading is not the block\'s rank',
  { 'a.log': log('BOOM', 'Root Cause (first observed failure):', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', '  rank      : 3 (local_rank: 3)') },
  { rank: null, root: null });

logCase('the evidence wins over a Root Cause block that names another rank, and the reason says so',
  { 'a.log': log('[rank1]: BOOM', ...ROOT(3)) },
  { rank: 1, root: 3, first: ['a.log', 1, 1],
    reason: "earliest decisive error (line order); torchrun's Root Cause block names rank 3, the first failure its agent observed, but rank 1's error came earlier" });

logCase('a Root Cause block that names the same rank agrees',
  { 'a.log': log('[rank3]: BOOM', ...ROOT(3)) },
  { rank: 3, reason: "earliest decisive error (line order); torchrun's Root Cause block names the same rank" });

logCase('without decisive lines the block picks the best candidate\'s line of its rank',
  { 'a.log': log('[rank0]: Watchdog caught collective operation timeout', '[rank3]: Watchdog caught collective operation timeout', ...ROOT(3)) },
  { rank: 3, first: ['a.log', 2, 3], reason: 'torchrun Root Cause (first observed failure) block' });

logCase('ranks the launcher lists that printed nothing are silent, once a line names a rank',
  { 'a.log': log('I0705 x.cc:1] global_ranks=[0, 1, 2, 3]', '[rank1]: BOOM', 'global_ranks=[7, 1234567]') },
  { silent: [0, 2, 3, 7] });

logCase('the launcher\'s ranks say nothing while no line names a rank',
  { 'a.log': log('global_ranks=[0, 1, 2, 3]', 'BOOM') },
  { silent: [] });

logCase('ranks from per-rank file names that gave no evidence are silent',
  { 'rank0.log': log('BOOM'), 'rank1.log': log('fine'), 'logs/2/stderr.log': log('fine') },
  { silent: [1, 2] });

// ---- Caps and formats ----

logCase('at most 50 lines of one fingerprint per file are kept, the first ones',
  { 'a.log': log(...Array.from({ length: 60 }, (_, i) => `[rank${i}]: BOOM`)), 'b.log': log('BOOM') },
  { count: 51, last: ['b.log', 1, null, null] });

logCase('a gzip log is read as its text',
  { 'a.log.gz': zlib.gzipSync(Buffer.from(log('x', '[rank2]: BOOM'))) },
  { evidence: [['a.log.gz', 2, 2, null]] });

// ---- Scores ----

logCase('each further distinct line of a fingerprint adds a tenth of its weight, five at most',
  { 'a.log': log('BOOM 1', 'BOOM 2', 'BOOM 3'), 'b.log': log(...[1, 2, 3, 4, 5, 6, 7].map((i) => `BOOM ${i}`)) },
  { ranking: [['boom-failure', 15, false]] });

logCase('the same line from two ranks counts twice even when rank and text run together',
  { 'rank1.log': log('2BOOM'), 'rank12.log': log('BOOM') },
  { ranking: [['boom-failure', 11, false]] });

logCase('a line two entries match counts as supporting for each; the entry\'s own line still decides',
  { 'a.log': log('BOOM shared', 'BOOM alone') },
  { ranking: [['boom-failure', 11, false], ['shared-failure', 3, true]] },
  { entries: { ...ENTRIES, 'shared-failure': [{ id: 'shared', pattern: 'BOOM shared', indicates: 'decisive' }] } });

logCase('lines of two files are never taken for one line, whatever their names and numbers',
  { 'a.log': log('x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'BOOM'), 'a.log1': log('BANG') },
  { ranking: [['bang-failure', 10, false], ['boom-failure', 10, false]] },
  { entries: { ...ENTRIES, 'bang-failure': [{ id: 'bang', pattern: 'BANG', indicates: 'decisive' }] } });

logCase('candidates alike in every way are ordered by id',
  { 'a.log': log('BOOM', 'BANG') },
  { ranking: [['bang-failure', 10, false], ['boom-failure', 10, false]] },
  { entries: { ...ENTRIES, 'bang-failure': [{ id: 'bang', pattern: 'BANG', indicates: 'decisive' }] } });

// ---- The answer each candidate gives ----

const CAST = ['Model code casts to self.dtype', 'Cast from the activation dtype', 'workload', 'fix-code'];
const FLAKY = ['A flaky node', 'Drain the node', 'infrastructure', 'drain-node'];
const POINTING = {
  'points-at-causes': [
    { id: 'decisive-cast', pattern: 'BOOM', indicates: 'decisive', cause: 'cast' },
    { id: 'decisive-none', pattern: 'BANG', indicates: 'decisive' },
    { id: 'supporting-flaky', pattern: 'WARN', indicates: 'supporting', cause: 'flaky' },
    { id: 'collateral-flaky', pattern: 'HANG', indicates: 'decisive', cause: 'flaky', collateral: true },
    { id: 'benign-flaky', pattern: 'SKIP', indicates: 'benign', cause: 'flaky' }
  ]
};

logCase('the answer is the cause the strongest own line points to',
  { 'a.log': log('WARN', 'BOOM') }, { answers: [[...CAST, 'certain']] }, { entries: POINTING });

logCase('a line that points at no cause is passed over for a weaker one that does',
  { 'a.log': log('BANG', 'WARN') }, { answers: [[...FLAKY, 'certain']] }, { entries: POINTING });

logCase('a collateral line\'s cause counts after every other line\'s',
  { 'a.log': log('HANG', 'BANG', 'WARN') }, { answers: [[...FLAKY, 'certain']] }, { entries: POINTING });

logCase('without a line that points at a cause, the answer is the entry\'s first cause',
  { 'a.log': log('BANG') }, { answers: [[...CAST, 'certain']] }, { entries: POINTING });

logCase('benign lines alone give a benign answer; supporting ones a possible one',
  { 'a.log': log('SKIP'), 'b.log': log('[rank1]: Watchdog caught collective operation timeout') },
  { answers: [[...CAST, 'possible'], [...FLAKY, 'benign']] },
  { entries: { ...POINTING, ...ENTRIES } });

// ---- Patterns: JavaScript with RE2's meaning, and a prefilter that never hides a match ----

const { PATTERNS } = require('./patterns.js');

/* Every line, in a file of its own (the prefilter looks for literals in a whole buffer), is
   matched by exactly the patterns RE2 matches it with (the CLI's answer), whatever the
   prefilter's literals or its Aho-Corasick automaton make of them. */
logCase('each pattern matches the lines RE2 matches, and only those',
  Object.fromEntries(PATTERNS.flatMap(([id, , lines]) => lines.map((line, k) => [`${id}.${k + 1}.log`, log(line)]))),
  { byPattern: {
    'space': [1, 2, 'escaped-pipe.2'],
    'not-space': [1, 3, 4, 'optional-group.1', 'optional-group.2', 'optional-group.3', 'ignore-case.3', 'tilde.1'],
    'space-in-class': [1, 2],
    'not-space-in-class': [1],
    'dot': [1, 2],
    'bracket-first': [1, 2],
    'not-bracket-first': [3, 'nested-group.2'],
    'hex': [1, 'case-sensitive.3'],
    'alternatives-in-group': [1, 2],
    'nested-group': [1, 2],
    'groups-not-one': [1, 2],
    'optional-first-group': ['alternatives-in-group.2', 1, 2],
    'escaped-dot': [1],
    'optional-group': [1, 2],
    'count': [1],
    'optional-letter': ['optional-first-group.2', 1, 2, 'case-sensitive.2'],
    'star': [1, 2],
    'plus': [1],
    'alternation': [2, 3, 4],
    'alternative-without-literal': ['optional-group.2', 1, 2],
    'escaped-pipe': [1],
    'escaped-punctuation': [1],
    'bracket-in-class': [1],
    'escape-in-class': [1, 'escape-in-class-then-more.2'],
    'escape-in-class-then-more': ['escape-in-class.1', 1, 2],
    'class-then-bracket': [1],
    'rank-prefix': [1],
    'case-sensitive': [1],
    'ignore-case': [1, 2],
    'last-character': [1],
    'ignore-case-z': [1, 2],
    'tilde': [1],
    'ignore-case-ascii-only': [1, 3],
    'inside-others-1': [1],
    'inside-others-2': ['inside-others-1.2', 1],
    'inside-others-3': ['inside-others-1.3', 1],
    'longer-than-a-literal': [1]
  } },
  { entries: { patterns: PATTERNS.map(([id, pattern, , ignore]) => ({ id, pattern, indicates: 'supporting', ignore_case: Boolean(ignore) })) } });

const CLI = cliAnswers(CASES);

/* The lines each fingerprint matched (files `<pattern>.<line>.log` of one line each): of its
   own pattern by number, of another's as `<pattern>.<line>`. */
function byPattern(evidence) {
  const out = {};
  for (const e of evidence) {
    const [id, line] = e.file.split('.');
    (out[e.fingerprint] = out[e.fingerprint] || []).push(id === e.fingerprint ? Number(line) : `${id}.${line}`);
  }
  return out;
}

/* The parts of a worker answer a case can state. */
function check(result, expect) {
  const all = result.matches.flatMap((m) => m.evidence);
  const got = {
    evidence: all.map((e) => [e.file, e.line, e.rank, e.timestamp]),
    text: all.map((e) => e.text),
    collateral: all.map((e) => e.collateral),
    ranking: result.matches.map((m) => [m.id, m.score, m.possible]),
    answers: result.matches.map((m) => [m.cause, m.fix, m.domain, m.action, m.confidence]),
    first: result.initiating && [result.initiating.file, result.initiating.line, result.initiating.rank],
    rank: result.initiating_rank,
    reason: result.initiating_reason,
    root: result.root_cause_rank,
    silent: result.silent_ranks,
    files: result.files.map((f) => [f.file, f.lines, f.bytes]),
    count: all.length,
    joined: all.filter((e) => e.text.startsWith('[rank1]')).map((e) => e.text.length > 80),
    byPattern: byPattern(all),
    last: all.length ? [all[all.length - 1].file, all[all.length - 1].line, all[all.length - 1].rank, all[all.length - 1].timestamp] : null
  };
  for (const key of Object.keys(expect)) {
    assert.deepStrictEqual(got[key], expect[key], key);
  }
}

CASES.forEach((c, i) => {
  test(c.name, async () => {
    const result = await diagnoseCase(CLI[i].data, c);
    assert.deepStrictEqual(essentials(result), essentials(CLI[i].cli), 'the CLI answers the same');
    check(result, c.expect);
  });
});
