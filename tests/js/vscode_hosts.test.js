// The host of the first failure that the VS Code extension shows (editors/vscode/lib/hosts.js)
// equals `nanopedia triage`'s `initiating_host` and `host_rule` on every job of the labelled
// corpus, each case a job, from the same first failing line and rank; the limits are Python's.
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const lib = path.join(root, 'editors', 'vscode', 'lib');
const { jobHost, lineHost, LIMITS } = require(path.join(lib, 'hosts.js'));
const { readLog } = require(path.join(lib, 'lines.js'));

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nanopedia-vscode-hosts-'));
test.after(() => fs.rmSync(folder, { recursive: true, force: true }));

const triaged = JSON.parse(execFileSync(python, ['-c', `
import json, os, sys
from pathlib import Path
root = Path.cwd()
sys.path.insert(0, "bench")
from logcorpus import cases, materialise
from nanopedia.diagnosis import catalogue, hosts, jobs
from nanopedia.diagnosis.triage import triage

out = Path(sys.argv[1])
for case in cases():
    materialise(case, out)
used = catalogue.usable(root / "entries")[0]
os.chdir(out)
found = triage(["."], entries=used, jobs=1, job_pattern="*").as_json()["jobs"]
limits = {"head_bytes": jobs.HEAD_BYTES, "head_nccl_lines": hosts.HEAD_NCCL_LINES,
          "head_pdsh_lines": hosts.HEAD_PDSH_LINES, "summary_carry": hosts._SUMMARY_CARRY,
          "summary_ranks": hosts.SUMMARY_RANKS}
data = {"file_rank": __import__("nanopedia.diagnosis.lines", fromlist=["x"]).FILE_RANK.pattern}
print(json.dumps({"jobs": found, "limits": limits, "data": data}))
`, folder], { cwd: root, maxBuffer: 512 << 20 }));

test("the extension's limits are Python's", () => {
  assert.deepStrictEqual(LIMITS, triaged.limits);
});

test('every case of the corpus is a job, and some name their host', () => {
  const matched = triaged.jobs.filter((j) => j.initiating);
  assert.ok(matched.length >= 300, `${matched.length} jobs with a first failure`);
  const rules = new Set(matched.map((j) => j.host_rule));
  assert.ok(['line', 'summary', 'file-rank'].every((r) => rules.has(r)), Array.from(rules).join(' '));
});

test('a line names its host by SLURM, syslog, NCCL and Open MPI prefixes, never a source file', () => {
  assert.strictEqual(lineHost('srun: error: gpu-node-12: task 3: Exited with exit code 1'), 'gpu-node-12');
  assert.strictEqual(lineHost('Dec  5 10:00:01 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79'), 'node7');
  assert.strictEqual(lineHost('[rank1]:node-a:1234:1299 [1] NCCL WARN Net : Connection closed'), 'node-a');
  assert.strictEqual(lineHost('  File "train.py:12:3 [4]" oops'), null);
  assert.strictEqual(lineHost('INFO: nothing here'), null);
});

triaged.jobs.filter((j) => j.initiating).forEach((job) => {
  test(`the host is triage's: ${job.job}`, async () => {
    const logs = job.files.map((f) => ({ name: f.file, chunks: () => readLog(path.join(folder, f.file)) }));
    const got = await jobHost(job, logs, triaged.data);
    assert.deepStrictEqual(got, [job.initiating_host, job.host_rule]);
  });
});
