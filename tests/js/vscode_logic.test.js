// The VS Code extension's logic without VS Code (editors/vscode/lib): reading and merging the
// exported data, the verdict, the evidence by rank and the marks of a log, the answer view's
// HTML, the entry pages, line numbers in the editor's terms, the terminal's output, and the
// watchdog that drops a fingerprint stuck on a line. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const lib = path.join(root, 'editors', 'vscode', 'lib');
const { parseData, mergeData } = require(path.join(lib, 'data.js'));
const { verdict, byRank, marks, verifyCommand } = require(path.join(lib, 'verdict.js'));
const { answerHtml } = require(path.join(lib, 'view.js'));
const { article, movedTo, target } = require(path.join(lib, 'page.js'));
const { editorLines, engineText } = require(path.join(lib, 'lines.js'));
const { Recorder, plainOutput, unusable } = require(path.join(lib, 'terminal.js'));
const { Engine } = require(path.join(lib, 'engine.js'));

const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const ENGINE = path.join(root, 'theme', 'static', 'diagnose-worker.js');
const FOUR_RANKS = path.join(root, 'tests', 'logs', 'first-failure-oom', 'torchrun-4rank.log');

// `nanopedia export` of three folders: entries/ whole, entries/ without three entries, and those
// three, one of them retitled (a team's entry replacing a shipped one).
const exported = JSON.parse(execFileSync(python, ['-c', `
import json, shutil, sys, tempfile
from pathlib import Path
from nanopedia.diagnosis import catalogue
from nanopedia.site.exports import diagnose_file

entries = catalogue.usable(Path("entries"))[0]
ids = sorted(e.id for e in entries if e.fingerprints)
three = [ids[0], ids[len(ids) // 2], ids[-1]]
with tempfile.TemporaryDirectory() as tmp:
    team = Path(tmp)
    for i in three:
        text = Path("entries", i + ".yaml").read_text()
        if i == three[1]:
            text = text.replace("\\ntitle: ", "\\ntitle: Team copy of ", 1)
        (team / (i + ".yaml")).write_text(text)
    theirs = catalogue.usable(team)[0]
print(json.dumps({
    "all": diagnose_file(entries).decode(),
    "rest": diagnose_file([e for e in entries if e.id not in three]).decode(),
    "team": diagnose_file(theirs).decode(),
    "three": three,
}))
`], { cwd: root, maxBuffer: 64 << 20 }));

const shipped = parseData(exported.all, 'entries');

/* ---- Data ---- */

test('the exported data is read as JSON, never run', () => {
  assert.ok(shipped.fingerprints.length > 100);
  assert.strictEqual(typeof shipped.weights.decisive, 'number');
  const hostile = '/* x */\nself.NanopediaDiagnoseData={"fingerprints":[]};globalThis.ran=1;';
  assert.throws(() => parseData(hostile, 'team/.nanopedia/diagnose-data.js'),
    /team\/\.nanopedia\/diagnose-data\.js: the data is not valid JSON/);
  assert.strictEqual(globalThis.ran, undefined);
  assert.throws(() => parseData('console.log(1)', 'x.js'), /x\.js: not a Nanopedia data file/);
});

test('a team folder merged into the shipped data equals the export of both folders together', () => {
  const rest = parseData(exported.rest, 'rest');
  const team = parseData(exported.team, 'team');
  const retitled = exported.three[1];
  const merged = mergeData(rest, team, 'team');
  const expected = shipped.fingerprints.map((row) => (row.entry === retitled
    ? team.fingerprints.find((r) => r.entry === row.entry && r.id === row.id) : row));
  assert.deepStrictEqual(merged.fingerprints, expected);
  assert.ok(merged.fingerprints.some((r) => r.title.startsWith('Team copy of ')));
  // Replacing: the team's copy of a shipped entry is the only one left.
  const again = mergeData(shipped, team, 'team');
  assert.deepStrictEqual(again.fingerprints, expected);
});

test('data exported by another version of nanopedia is refused, naming the rule that differs', () => {
  const other = { ...parseData(exported.team, 'team'), evidence_cap: shipped.evidence_cap + 1 };
  assert.throws(() => mergeData(shipped, other, 'team/x.js'), /team\/x\.js: exported by another version.*"evidence_cap"/);
});

/* ---- Verdict, evidence by rank, marks ---- */

function ev(line, rank, fingerprint, indicates, extra) {
  return { file: 'job.log', line, rank, text: `line ${line}`, fingerprint, indicates,
           collateral: false, timestamp: null, ...extra };
}

const RESULT = {
  matches: [
    { id: 'oom', title: 'OOM `x`', score: 14, confidence: 'certain', cause: 'c', domain: 'workload',
      action: 'fix-config', fix: 'f', evidence: [ev(13, 3, 'oom-line', 'decisive'), ev(13, 3, 'ctx', 'context')] },
    { id: 'nccl', title: 'NCCL', score: 0.7, confidence: 'possible', cause: null, domain: null,
      action: null, fix: null, evidence: [ev(14, 0, 'watchdog', 'supporting', { collateral: true }),
                                          ev(20, 1, 'watchdog', 'supporting', { collateral: true }),
                                          ev(13, 3, 'shared', 'supporting')] }
  ],
  initiating: ev(13, 3, 'oom-line', 'decisive'), initiating_rank: 3,
  initiating_reason: 'earliest decisive error (line order)', root_cause_rank: null, silent_ranks: [5],
  files: [{ file: 'job.log', lines: 30, bytes: 900 }], slow: [], skipped: [], seconds: 0.01
};

test('the verdict names the best entry, its confidence, the first failing rank and the answer', () => {
  const v = verdict(RESULT, shipped);
  assert.deepStrictEqual(
    [v.id, v.confidence, v.meaning, v.rank, v.first.line, v.cause, v.domain, v.action, v.fix, v.silent],
    ['oom', 'certain', shipped.confidence.certain, 3, 13, 'c', 'workload', 'fix-config', 'f', [5]]);
  assert.strictEqual(verdict({ ...RESULT, matches: [] }, shipped), null);
});

test('each marked line has its strongest kind: the first failure, then decisive, then collateral', () => {
  assert.deepStrictEqual(marks(RESULT, 'job.log').map((m) => [m.line, m.kind, m.rank, m.entries]),
    [[13, 'first', 3, ['oom', 'nccl']], [14, 'collateral', 0, ['nccl']], [20, 'collateral', 1, ['nccl']]]);
  assert.match(marks(RESULT, 'job.log')[0].message, /^Nanopedia: first failure \(rank 3\): oom\/oom-line \(decisive\)/);
  assert.deepStrictEqual(marks(RESULT, 'other.log'), []);
  const noFirst = { ...RESULT, initiating: null };
  assert.strictEqual(marks(noFirst, 'job.log')[0].kind, 'decisive');
});

test('the evidence by rank puts the first failing rank first, then the ranks in time', () => {
  const timed = JSON.parse(JSON.stringify(RESULT));
  const stamps = { 13: '0612140212.000000000', 14: '0612140213.000000000', 20: '0612140211.000000000' };
  timed.matches.forEach((m) => m.evidence.forEach((e) => { e.timestamp = stamps[e.line]; }));
  assert.deepStrictEqual(byRank(timed).map((l) => [l.rank, l.lines.map((p) => p.ev.line)]),
    [[3, [13]], [1, [20]], [0, [14]]]);
  assert.deepStrictEqual(byRank(RESULT).map((l) => l.rank), [3, 0, 1]);
});

/* ---- The answer view ---- */

const PAGE = { cspSource: 'vscode-resource:', nonce: 'n0nce', styles: ['site.css'], script: 'view.js', siteUrl: '' };

test('the answer view shows the verdict first, then the evidence, then the entry', () => {
  const v = { ...verdict(RESULT, shipped), host: 'gpu-node-07', hostRule: 'summary' };
  const html = answerHtml({ result: RESULT, verdict: v, verify: 'nanopedia verify oom',
                            entry: { id: 'oom', article: '<article class="entry"><h1>OOM</h1></article>' } }, PAGE);
  const at = (s) => html.indexOf(s);
  assert.ok(at('id="verdict"') < at('id="evidence"') && at('id="evidence"') < at('id="candidates"') &&
            at('id="candidates"') < at('id="entry"'), html);
  assert.match(html, /First failure: <strong>rank 3<\/strong> on <strong class="host" title="torchrun&#39;s error summary gives it for this rank">gpu-node-07<\/strong> at /);
  assert.match(html, /<code>nanopedia verify oom<\/code>/);
  assert.match(html, /data-file="job.log" data-line="14"/);
  assert.match(html, /OOM <code>x<\/code>/);
});

test('log text reaches the answer view escaped, under a CSP that loads nothing from the network', () => {
  const hostile = JSON.parse(JSON.stringify(RESULT));
  hostile.matches[0].evidence[0].text = '<img src=x onerror=alert(1)>"\'&';
  hostile.initiating = hostile.matches[0].evidence[0];
  hostile.matches[0].title = '<script>alert(1)</script>';
  hostile.slow = [{ entry: 'team', id: 'slow<x>', title: 't', file: 'job.log', seconds: 5 }];
  hostile.skipped = ['team/bad: Invalid regular expression: /(<b>/'];
  const html = answerHtml({ result: hostile, verdict: verdict(hostile, shipped), verify: null,
                            entry: { id: 'oom', source: '/team/oom.yaml' } }, PAGE);
  assert.ok(!html.includes('<img src=x') && !html.includes('<script>alert'), html);
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;'));
  const csp = /content="(default-src 'none';[^"]*)"/.exec(html)[1];
  assert.strictEqual(csp, "default-src 'none'; style-src vscode-resource:; img-src vscode-resource:; " +
    "font-src vscode-resource:; script-src 'nonce-n0nce'");
  assert.doesNotMatch(html, /https?:/);
  assert.match(html, /data-source="\/team\/oom.yaml"/);
  assert.match(html, /<li>Fingerprint team\/slow&lt;x&gt; was left out: it took over 5 s on job.log/);
  assert.match(html, /<li>Fingerprint left out \(JavaScript cannot compile it\): team\/bad: Invalid regular expression: \/\(&lt;b&gt;\/<\/li>/);
});

/* ---- Entry pages ---- */

test('an entry page gives its article, its verify command, and where its links lead', () => {
  const page = '<html><body><main><article class="entry"><h1>T</h1><section id="reproduce">' +
    '<p class="reproduced">Reproduced with PyTorch 2.13.0 (CPU, 1 rank). <code>nanopedia verify t</code> ' +
    'runs the broken script and the fixed one.</p></section></article></main></body></html>';
  assert.strictEqual(article(page), page.slice(page.indexOf('<article'), page.indexOf('</main>')));
  assert.strictEqual(verifyCommand(page), 'nanopedia verify t');
  assert.strictEqual(verifyCommand('<article class="entry"><p class="status">No CPU repro</p></article>'), null);
  assert.strictEqual(movedTo('<meta http-equiv="refresh" content="0; url=new-id.html">'), 'new-id');
  assert.deepStrictEqual(target('nccl-watchdog-timeout.html'), { entry: 'nccl-watchdog-timeout', anchor: null });
  assert.deepStrictEqual(target('../entries/a-b.html#fix'), { entry: 'a-b', anchor: 'fix' });
  assert.deepStrictEqual(target('#causes'), { anchor: 'causes' });
  assert.deepStrictEqual(target('https://github.com/x'), { external: 'https://github.com/x' });
  assert.deepStrictEqual(target('../tags/cuda.html'), { site: 'tags/cuda.html' });
  assert.deepStrictEqual(target('../index.html#memory'), { site: 'index.html#memory' });
});

/* ---- Lines in the editor's terms ---- */

async function* chunks(...parts) { for (const p of parts) yield Buffer.from(p); }

test('after a lone CR the editor counts one line more than the engine, CRLF counts once', async () => {
  const got = await editorLines(chunks('a\r\nb\rc\nd\n', 'e\r', 'f\n', 'g\n'), [1, 2, 3, 4, 5, 6]);
  assert.deepStrictEqual(Array.from(got), [[1, 1], [2, 2], [3, 4], [4, 5], [5, 7], [6, 8]]);
  assert.deepStrictEqual(Array.from(await editorLines(chunks('x\r', '\ny\n'), [2])), [[2, 2]]);
  assert.strictEqual(engineText('a\r\nb\rc'), 'a\nb c');
});

/* ---- The terminal ---- */

test("a terminal command's output is kept without the terminal's own control sequences", async () => {
  assert.strictEqual(plainOutput('\x1b]633;C\x07[rank0]: x\x1b[31mred\x1b[0m\r\n\x1b]0;title\x1b\\done'),
    '[rank0]: x\x1b[31mred\x1b[0m\r\ndone');
  const recorder = new Recorder(10);
  const terminal = {};
  const execution = { commandLine: { value: 'cat log' }, read: () => chunks('0123456789', 'abcdefghij', 'KLM') };
  await recorder.start(terminal, execution);
  recorder.end(terminal, execution, 1);
  assert.deepStrictEqual(recorder.output(terminal),
    { command: 'cat log', text: 'defghijKLM', exitCode: 1, running: false, cut: true });
  recorder.forget(terminal);
  assert.strictEqual(recorder.output(terminal), null);
});

test('a command that ended with no output reaching the extension is named, not diagnosed as an empty log', () => {
  const ended = { command: 'cat log', text: ' \n', exitCode: 0, running: false, cut: false };
  assert.match(unusable(ended, 'bash', true), /^"cat log" ended, but VS Code passed none of its output/);
  assert.strictEqual(unusable({ ...ended, running: true }, 'bash', true), null);  // nothing yet: so far
  assert.strictEqual(unusable({ ...ended, text: '[rank0]: x' }, 'bash', true), null);
  assert.match(unusable(null, 'bash', true), /no command has run in it since the extension started/);
  assert.match(unusable(null, 'bash', false), /its shell has no shell integration/);
});

/* ---- The engine in a worker thread ---- */

/* The engine of the shipped data, kept across tests as the editor keeps one. */
const kept = new Engine(ENGINE, shipped);
test.after(() => kept.dispose());

test('a log on disk is streamed through the shipped engine in a worker thread', async () => {
  const result = await kept.diagnose({ budgetMs: 60000,
                                       files: [{ name: 'torchrun-4rank.log', disk: FOUR_RANKS }] });
  const v = verdict(result, shipped);
  assert.deepStrictEqual([v.id, v.rank, v.first.line], ['cuda-out-of-memory', 3, 13]);
});

test('the next diagnosis runs on the thread the last one left waiting, and answers the same', async () => {
  const files = [{ name: 'torchrun-4rank.log', disk: FOUR_RANKS }];
  const first = await kept.diagnose({ budgetMs: 60000, files });
  const waiting = kept.spare;
  assert.ok(waiting, 'no thread waits after a diagnosis');
  const running = kept.diagnose({ budgetMs: 60000, files });
  assert.strictEqual(kept.spare, null, 'the waiting thread was not taken');
  const second = await running;
  assert.strictEqual(kept.spare, waiting, 'the thread that answered does not wait again');
  assert.deepStrictEqual(verdict(second, shipped), verdict(first, shipped));
  assert.deepStrictEqual(second.slow, []);
});

test('two diagnoses at once both answer, and one thread waits after them', async () => {
  const [oom, none] = await Promise.all([
    kept.diagnose({ budgetMs: 60000, files: [{ name: 'torchrun-4rank.log', disk: FOUR_RANKS }] }),
    kept.diagnose({ budgetMs: 60000, files: [{ name: 'pasted.log', text: 'nothing failed here\n' }] })
  ]);
  assert.strictEqual(verdict(oom, shipped).id, 'cuda-out-of-memory');
  assert.deepStrictEqual(none.matches, []);
  assert.ok(kept.spare, 'no thread waits after two diagnoses');
});

test('a waiting thread that ends is dropped, and the next diagnosis compiles a new one', async () => {
  const engine = new Engine(ENGINE, shipped);
  try {
    const files = [{ name: 'torchrun-4rank.log', disk: FOUR_RANKS }];
    const first = await engine.diagnose({ budgetMs: 60000, files });
    const waiting = engine.spare;
    await waiting.terminate();  // killed from outside while it waits
    assert.strictEqual(engine.spare, null);
    const next = await engine.diagnose({ budgetMs: 60000, files });
    assert.deepStrictEqual(verdict(next, shipped), verdict(first, shipped));
    assert.ok(engine.spare && engine.spare !== waiting);
  } finally {
    engine.dispose();
  }
});

test('a waiting thread does not keep the process alive', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nanopedia-vscode-exit-'));
  const file = path.join(folder, 'diagnose-data.js');
  fs.writeFileSync(file, exported.all);
  const script = `
    const { Engine } = require(${JSON.stringify(path.join(lib, 'engine.js'))});
    const { parseData } = require(${JSON.stringify(path.join(lib, 'data.js'))});
    const data = parseData(require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8'), 'data');
    const engine = new Engine(${JSON.stringify(ENGINE)}, data);
    engine.diagnose({ budgetMs: 60000, files: [{ name: 'a.log', text: 'x' }] })
      .then((r) => console.log(engine.spare ? 'waiting' : 'none', r.files.length));`;
  try {
    const out = execFileSync(process.execPath, ['-e', script], { timeout: 30000, encoding: 'utf8' });
    assert.strictEqual(out.trim(), 'waiting 1');
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

test('a fingerprint stuck on a line is dropped, named, and the log read again without it', async () => {
  const stuck = { ...shipped.fingerprints[0], entry: 'zz-stuck', id: 'backtracks', title: 'Stuck',
                  pattern: '(a|aa)+$', program: '(a|aa)+$', collateral: false };
  const data = { ...shipped, fingerprints: shipped.fingerprints.concat([stuck]) };
  const engine = new Engine(ENGINE, data);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nanopedia-vscode-stuck-'));
  const log = path.join(folder, 'stuck.log');
  fs.writeFileSync(log, `${fs.readFileSync(FOUR_RANKS, 'utf8')}${'a'.repeat(60)}b\n`);
  try {
    const result = await engine.diagnose({ budgetMs: 60000, stallMs: 3000,
                                           files: [{ name: 'stuck.log', disk: log }] });
    assert.deepStrictEqual(result.slow.map((s) => [s.entry, s.id]), [['zz-stuck', 'backtracks']]);
    assert.strictEqual(verdict(result, data).id, 'cuda-out-of-memory');
    // The thread compiled without the stuck fingerprint is not kept: the next diagnosis holds
    // every fingerprint again, and a log the stuck one does not meet leaves nothing out.
    assert.strictEqual(engine.spare, null);
    const next = await engine.diagnose({ budgetMs: 60000, files: [{ name: 'four.log', disk: FOUR_RANKS }] });
    assert.deepStrictEqual(next.slow, []);
    assert.strictEqual(verdict(next, data).id, 'cuda-out-of-memory');
  } finally {
    engine.dispose();
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

test('a log that grows while it is read is diagnosed as far as it was read, and the answer says so', async () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nanopedia-vscode-growing-'));
  const log = path.join(folder, 'growing.log');
  const step = '[rank0]:[2024-06-12 14:02:11,210] [INFO] [train.py:188:train] step=118 loss=1.94\n';
  fs.writeFileSync(log, fs.readFileSync(FOUR_RANKS, 'utf8') + step.repeat(Math.ceil((40 << 20) / step.length)));
  let grown = false;
  try {
    const result = await kept.diagnose({
      budgetMs: 120000, files: [{ name: 'growing.log', disk: log }],
      onProgress() { if (!grown) { fs.appendFileSync(log, step); grown = true; } }
    });
    assert.strictEqual(verdict(result, shipped).id, 'cuda-out-of-memory');
    assert.deepStrictEqual(result.changed.map((c) => c.file), ['growing.log']);
    assert.ok(result.changed[0].lines < (40 << 20) / step.length, JSON.stringify(result.changed));
    const html = answerHtml({ result, verdict: verdict(result, shipped), verify: null, entry: null }, PAGE);
    assert.match(html, /<li>growing.log changed while it was read \(a log still being written\?\): only its first [\d,]+ lines were diagnosed.<\/li>/);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});
