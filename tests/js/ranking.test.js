// The ranking rules as data (tests/cases/ranking.json), run through the browser worker's
// `rankEvidence` under `node --test`; tests/integration/test_ranking_cases.py runs them through diagnosis/rank.py.
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

for (const c of cases) {
  test(c.name, () => {
    const result = scope.rankEvidence(data, scans(c.evidence, c.root_ranks || []));
    assert.deepStrictEqual(result.matches.map((m) => [m.id, m.score, m.possible]), c.ranking);
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
