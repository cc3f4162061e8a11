// A file that changes while the worker reads it (a log still being written): Chromium refuses
// every read of a File changed since it was chosen (NotReadableError). The worker diagnoses the
// lines it read before and says so; with nothing read, it says why it cannot read the file.
// tests/browser/test_diagnose_page.py does the same with a real file in Chromium.
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const data = JSON.parse(execFileSync(python, ['-c', `
import json
from pathlib import Path
from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import contract
src, _ = load_entry(Path("tests/fixtures/corpus/alpha-failure.yaml"))
print(json.dumps(contract.export_data([src.entry])))
`], { cwd: root }));

const { diagnoseFiles } = require('./worker.js');

// A Blob-like file whose first `readable` reads succeed and whose later ones fail as
// Chromium's do once the file on disk has changed.
function changing(bytes, readable) {
  let reads = 0;
  return {
    size: bytes.length,
    slice(start, end) {
      const part = bytes.slice(start, Math.min(end, bytes.length));
      return {
        arrayBuffer: () => (reads++ < readable
          ? Promise.resolve(part.buffer)
          : Promise.reject(new DOMException('The requested file could not be read', 'NotReadableError')))
      };
    }
  };
}

const failure = '[rank3]: RuntimeError: expected scalar type BFloat16 but found Float\n';
const filler = 'step 1 loss 2.0 lr 3e-4 all fine here\n'.repeat(300000);  // over one buffer
const bytes = new TextEncoder().encode(failure + filler);

test('a file changed after its first buffer is diagnosed as far as it was read', async () => {
  // Reads: the first bytes (gzip or not), the first buffer, then the change.
  const result = await diagnoseFiles(data, [{ name: 'live.log', blob: changing(bytes, 2) }]);
  const first = bytes.subarray(0, data.buffer_bytes);
  const lines = first.subarray(0, first.lastIndexOf(10) + 1).filter((b) => b === 10).length;
  assert.ok(lines > 1 && lines < 300001);
  assert.deepStrictEqual(result.changed, [{ file: 'live.log', lines }]);
  assert.deepStrictEqual(result.files, [{ file: 'live.log', lines, bytes: first.lastIndexOf(10) + 1 }]);
  assert.deepStrictEqual([result.matches[0].id, result.initiating_rank], ['alpha-failure', 3]);
});

test('a file unchanged while it is read is not said to have changed', async () => {
  const result = await diagnoseFiles(data, [{ name: 'done.log', blob: changing(bytes, 1000) }]);
  assert.deepStrictEqual(result.changed, []);
  assert.strictEqual(result.files[0].lines, 300001);
});

test('a file changed before anything was read says why it cannot be read', async () => {
  await assert.rejects(
    diagnoseFiles(data, [{ name: 'live.log', blob: changing(bytes, 0) }]),
    { message: 'cannot read live.log: it changed after it was chosen (a log still being ' +
      'written?) or can no longer be read; choose it again, or a copy of it' });
});

test('a traceback line takes the time of a line some short buffers before, as in Python', async () => {
  // scan._scan_part keeps the last timestamp_window bytes across buffers however short they
  // are (a pipe's reads); test_scan.py has the same log, read in buffers of 8 bytes.
  const log = '2024-05-01 10:00:07 epoch 1\n' + '  frame\n'.repeat(3) +
    'RuntimeError: expected scalar type BFloat16 but found Float\n';
  const blob = changing(new TextEncoder().encode(log), 1000);
  const result = await diagnoseFiles({ ...data, buffer_bytes: 8 }, [{ name: 'pipe.log', blob }]);
  assert.strictEqual(result.initiating.line, 5);
  assert.strictEqual(result.initiating.timestamp, '0501100007.000000000');
});
