// Pattern matching in the browser worker agrees with the CLI (RE2), and `check`'s timing script
// stops a pattern that never returns. Run by `node --test tests/js/`.
//
// tests/cases/case_folding.json: each case scanned by the worker's own onmessage (the page's
// path, data from contract.export_data); tests/integration/test_fingerprint_guard.py scans the same cases
// with diagnosis/scan.py. Then every pattern of entries/ on its examples, their other case and with
// the Kelvin sign and the long s put in, against RE2's verdicts computed by Python here.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { python: py, root } = require('./python.js');

const cases = JSON.parse(fs.readFileSync(path.join(root, 'tests/cases/case_folding.json'), 'utf8')).cases;

// One contract.export_data() per case: the fixture entry with the case's pattern as its only
// fingerprint, exactly as the page's diagnose-data.js carries it.
const caseData = py(`
import json, sys
from pathlib import Path
from nanopedia.diagnosis import contract
from nanopedia.content.corpus import load_entry
from nanopedia.model import Fingerprint
src, _ = load_entry(Path("tests/fixtures/corpus/alpha-failure.yaml"))
out = []
for c in json.load(sys.stdin):
    fp = Fingerprint(id="probe", pattern=c["pattern"], ignore_case=c["ignore_case"],
                     indicates="supporting", must_match=["x"], must_not_match=["y"])
    out.append(contract.export_data([src.entry.model_copy(update={"fingerprints": [fp]})]))
print(json.dumps(out))
`, cases);

const { diagnoseFiles } = require('./worker.js');

// The worker's whole job on one log.
function diagnoseText(data, text) {
  return diagnoseFiles(data, [{ name: 'x.log', blob: new Blob([text + '\n']) }], 60000);
}

cases.forEach((c, i) => {
  test(`case folding: ${c.name}`, async () => {
    const result = await diagnoseText(caseData[i], c.line);
    assert.strictEqual(result.matches.length > 0, c.match);
  });
});

test('every pattern of entries/ matches its examples and their variants as RE2 does', () => {
  const checks = py(`
import json, sys
from pathlib import Path
from nanopedia.content import fingerprints
from nanopedia.content.load import read
from nanopedia.model import Fingerprint
out = []
for path in sorted(Path("entries").glob("*.yaml")):
    for item in [] if path.name == "tags.yaml" else read(path).data.get("fingerprints", []):
        fp = Fingerprint.model_validate(item)
        regex = fingerprints.compile_pattern(fp)
        lines = [v for line in fp.must_match + fp.must_not_match
                 for v in (line, line.swapcase(), line.replace("k", "\\u212a").replace("K", "\\u212a"),
                           line.replace("s", "\\u017f").replace("S", "\\u017f"))]
        out.append({"id": path.stem + "/" + fp.id, "program": fingerprints.program(fp),
                    "lines": lines, "re2": [regex.search(v) is not None for v in lines]})
print(json.dumps(out))
`, null);
  const scope = {};
  globalThis.NanopediaDiagnoseWorker(scope);
  assert.ok(checks.length > 100, 'the corpus has patterns');
  const differ = [];
  for (const c of checks) {
    const run = scope.timeProbe(c.program);
    c.lines.forEach((line, k) => {
      if ((run(line).length > 0) !== c.re2[k]) differ.push(`${c.id}: ${JSON.stringify(line)}`);
    });
  }
  assert.deepStrictEqual(differ, []);
});

test('the timing script stops a pattern that never returns and times the next one', () => {
  const job = {
    patterns: [
      { program: 'CUDA error: out of memory', sample: 'x'.repeat(4096), budget_ms: 50 },
      { program: '(?:a|a)*b', sample: 'a'.repeat(64), budget_ms: 50 },
      { program: '(?:a|ab|b)*yend', sample: 'ab'.repeat(64), budget_ms: 50 },
      { program: 'Watchdog caught collective', sample: 'Watchdog '.repeat(500), budget_ms: 50 },
      { program: '(', sample: 'x', budget_ms: 50 }
    ],
    timeout_ms: 300,
    tries: 2
  };
  const began = Date.now();
  const out = JSON.parse(execFileSync('node', [path.join(root, 'theme/check/patterntime.js')],
    { input: JSON.stringify(job), timeout: 20000 }));
  const r = out.results;
  assert.strictEqual(r.length, 5);
  assert.ok(typeof r[0].ms === 'number' && !r[0].timeout && r[0].error === null);
  assert.ok(r[1].timeout && r[1].ms === null);
  assert.ok(r[2].timeout && r[2].ms === null);
  assert.ok(typeof r[3].ms === 'number' && !r[3].timeout);
  assert.match(r[4].error, /Invalid regular expression/);
  assert.ok(Date.now() - began < 15000, 'two stopped patterns cost two timeouts, not more');
});
