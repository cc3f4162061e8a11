// The first failure among many ranks that print one error into a combined log
// (tests/cases/first_failure.json), found by the browser worker through its page path
// (onmessage); tests/unit/test_scan.py runs the same cases through diagnosis/scan.py.
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const cases = JSON.parse(
  fs.readFileSync(path.join(root, 'tests/cases/first_failure.json'), 'utf8')).cases;
const ERROR = 'RuntimeError: expected scalar type BFloat16 but found Float';

// The fixture entry alone, as the page's diagnose-data.js would carry it.
const data = JSON.parse(execFileSync(python, ['-c', `
import json
from pathlib import Path
from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import contract
src, _ = load_entry(Path("tests/fixtures/corpus/alpha-failure.yaml"))
print(json.dumps(contract.export_data([src.entry])))
`], { cwd: root }));

const { diagnoseFiles } = require('./worker.js');

// The log a case describes (its `about` says how).
function caseLog(c) {
  const lines = [];
  for (let r = 0; r < c.ranks; r++) {
    const ms = c.times && String(r) in c.times ? c.times[String(r)] : 1000 + r;
    const ss = String(Math.floor(ms / 1000)).padStart(2, '0');
    const fff = String(ms % 1000).padStart(3, '0');
    lines.push(`[rank${r}]: 2024-05-01 10:00:${ss}.${fff} ${ERROR}`);
  }
  return lines.concat(c.after || []).join('\n') + '\n';
}

for (const c of cases) {
  test(c.name, async () => {
    const result = await diagnoseFiles(data, [{ name: 'combined.log', blob: new Blob([caseLog(c)]) }]);
    assert.deepStrictEqual(
      [result.initiating_rank, result.initiating.line, result.initiating_reason],
      [c.rank, c.line, c.reason]);
    assert.strictEqual(result.matches[0].evidence.length, data.evidence_cap);
  });
}
