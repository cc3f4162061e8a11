// The literal prefilter's rule is one rule in both engines: the worker's `literals` (with
// `classEnd` and `unwrap`) and the CLI's `nanopedia.diagnosis.prefilter.literals` give the same
// literals for every pattern of entries/ and for the shapes that have tripped a port before.
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const source = fs.readFileSync(path.join(root, 'theme/static/diagnose-worker.js'), 'utf8');

// The worker keeps these private to its scope: each is cut out of the file by its layout (a
// top-level function ends at the first `  }` line, as tests/unit/test_port.py reads them).
function part(pattern) {
  const start = source.search(pattern);
  assert.ok(start >= 0, `${pattern} not found in the worker`);
  const line = source.indexOf('\n', start);
  if (!/^ {2}function /.test(source.slice(start, line))) return source.slice(start, line);
  return source.slice(start, source.indexOf('\n  }\n', start) + 4);
}
const scope = {};
vm.runInNewContext(
  [/ {2}var MIN_LITERAL = /, / {2}var MAX_LITERAL = /, / {2}function classEnd\(/,
    / {2}function unwrap\(/, / {2}function literals\(/].map(part).join('\n') +
    '\nthis.literals = literals;',
  scope
);

const SHAPES = [
  'CUDA out of memory',
  '(?:NCCL error|NCCL timeout)',
  '(?:abc)',
  '(?:(?:abc)|def)',
  '(?:ab)c(?:de)',
  'abc|de',
  'abc|',
  'abc\\.?def',
  'abcd*?efg',
  'ab+cdef',
  'x{2,3}yzw',
  'abc{2}defg',
  'ab[c\\]]def',
  '[]abc]xyz',
  '[^]abc]xyz',
  '\\x41bcdef',
  '(?i)foo bar',
  'foo(bar)?bazz',
  'Tried to allocate \\d+(\\.\\d+)? [GM]iB',
  '^\\s*rank\\s*: (\\d{1,6}) \\(local_rank: \\d+\\)',
  'caf\u00e9 au lait',
  'tab\there',
  'a\\b\\Bword\\sspace',
  'end\\',
  'class[unclosed',
  'UPPER lower MiXeD Case',
  'x'.repeat(40)
];

test('the worker and the CLI find the same literals in every pattern', () => {
  const fromPython = JSON.parse(execFileSync(python, ['-c', `
import json, sys
from pathlib import Path
from nanopedia.diagnosis import catalogue, prefilter
patterns = json.load(sys.stdin)
entries, _ = catalogue.usable(Path("entries"))
patterns += [f.pattern for e in entries for f in e.fingerprints]
print(json.dumps([[p, prefilter.literals(p)] for p in patterns]))
`], { cwd: root, input: JSON.stringify(SHAPES), maxBuffer: 64 << 20 }));
  assert.ok(fromPython.length > SHAPES.length + 100, 'the entries were read');
  for (const [pattern, expected] of fromPython) {
    // through JSON: arrays made in the vm context have that context's prototypes
    assert.deepStrictEqual(JSON.parse(JSON.stringify(scope.literals(pattern))), expected, pattern);
  }
});
