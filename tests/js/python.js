// Python's answers that the Node tests compare the browser's scripts against (the CLI's data,
// results and indexes): one `python -c` each, its standard output read as JSON. Shared by the
// Node tests; not a test file itself.
//
// bench/mutation_js.py runs these tests once per mutant of theme/static's scripts, which no
// Python reads: there NANOPEDIA_PYTHON_MEMO names a folder that keeps each answer by the hash of
// its script and input, so Python runs once per run instead of once per mutant.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const interpreter = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');

function python(script, input = null) {
  const stdin = JSON.stringify(input);
  const memo = process.env.NANOPEDIA_PYTHON_MEMO;
  const kept = memo && path.join(memo,
    crypto.createHash('sha256').update(script).update('\u0000').update(stdin).digest('hex') + '.json');
  if (kept && fs.existsSync(kept)) return JSON.parse(fs.readFileSync(kept, 'utf8'));
  const out = execFileSync(interpreter, ['-c', script],
    { cwd: root, input: stdin, maxBuffer: 256 << 20 });
  if (kept) {
    fs.mkdirSync(memo, { recursive: true });
    const partial = `${kept}.${process.pid}`;
    fs.writeFileSync(partial, out);
    fs.renameSync(partial, kept);
  }
  return JSON.parse(out);
}

module.exports = { python, root };
