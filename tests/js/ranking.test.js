// The ranking rules as data (tests/cases/ranking.json), run through the browser worker's
// `rankEvidence` under `node --test`; tests/integration/test_ranking_cases.py runs them through diagnosis/rank.py.
// Each case also runs with every file's evidence reversed, and each candidate's evidence comes
// out in file, then line order.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { python, root } = require('./python.js');

const cases = JSON.parse(fs.readFileSync(path.join(root, 'tests/cases/ranking.json'), 'utf8')).cases;
// The constants come from contract.export_data(), as the page's diagnose-data.js has them.
const data = python(
  'import json; from nanopedia.diagnosis import contract; print(json.dumps(contract.export_data([])))');

globalThis.self = globalThis;
require(path.join(root, 'theme/static/diagnose-worker.js'));
const scope = {};
globalThis.NanopediaDiagnoseWorker(scope);

function scans(evidence, roots) {
  const files = new Map();
  for (const e of evidence) {
    if (!files.has(e.file)) files.set(e.file, []);
    files.get(e.file).push({
      entry: e.entry, title: e.entry, file: e.file, line: e.line, rank: e.rank, text: e.text,
      fingerprint: e.fingerprint, indicates: e.indicates, timestamp: e.timestamp || null,
      consequence: Boolean(e.consequence), specificity: e.specificity || 0
    });
  }
  for (const r of roots) if (!files.has(r.file)) files.set(r.file, []);
  return Array.from(files, ([file, found]) => ({
    file, evidence: found, lines: 0, bytes: 0,
    root_ranks: roots.filter((r) => r.file === file).map((r) => [r.line, r.rank])
  }));
}

/* Each file's evidence in the order given, then reversed: the order lines come in never
   changes the answer. */
for (const c of cases) for (const reversed of [false, true]) {
  test(`${c.name}${reversed ? ' (evidence given in reverse order)' : ''}`, () => {
    const given = scans(c.evidence, c.root_ranks || []);
    if (reversed) for (const s of given) s.evidence.reverse();
    const result = scope.rankEvidence(data, given);
    assert.deepStrictEqual(result.matches.map((m) => [m.id, m.score, m.possible]), c.ranking);
    const order = [...new Set(c.evidence.map((e) => e.file))];
    for (const m of result.matches) {
      const where = m.evidence.map((e) => [order.indexOf(e.file), e.line]);
      const sorted = where.slice().sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      assert.deepStrictEqual(where, sorted, `${m.id}: evidence in file, then line order`);
    }
    if (c.initiating) {
      const got = {
        rank: result.initiating_rank, line: result.initiating ? result.initiating.line : null,
        reason: result.initiating_reason
      };
      if ('root_cause_rank' in c.initiating) got.root_cause_rank = result.root_cause_rank;
      assert.deepStrictEqual(got, c.initiating);
    }
  });
}

test('an entry\'s evidence from two files comes in the order of the files, each line collateral or not', () => {
  const line = (file, n, fingerprint, consequence) => ({
    entry: 'e', title: 'e', file, line: n, rank: null, text: `${fingerprint} ${n}`, fingerprint,
    indicates: 'supporting', timestamp: null, consequence, specificity: 0
  });
  const given = [
    { file: 'a.log', evidence: [line('a.log', 9, 'x', false)], lines: 9, bytes: 0, root_ranks: [] },
    { file: 'b.log', evidence: [line('b.log', 2, 'y', true)], lines: 2, bytes: 0, root_ranks: [] }
  ];
  const result = scope.rankEvidence(data, given);
  assert.deepStrictEqual(result.matches[0].evidence.map((e) => [e.file, e.line, e.collateral]),
    [['a.log', 9, false], ['b.log', 2, true]]);
});
