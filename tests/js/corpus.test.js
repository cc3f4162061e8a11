// The browser worker gives the CLI's answer on every labelled log of tests/logs (real excerpts,
// per-rank folders, damaged copies): the same candidates in the same order, the same first
// failing rank, silent ranks and reason, and the same evidence lines with their ranks and
// timestamps. Python writes each case's files and the CLI's JSON; the worker reads the same
// bytes as the page's jobs (its `jobs`: onmessage's path, the data compiled once for all).
// Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { python } = require('./python.js');

const corpus = python(`
import base64, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, "bench")
from logcorpus import cases, materialise
from nanopedia.diagnosis import contract, rank, scan
from nanopedia.content.corpus import gather

entries = gather(Path("entries"))[0].entries
matcher = scan.Matcher(entries)
out = {"data": contract.export_data(entries), "cases": []}
with tempfile.TemporaryDirectory() as tmp:
    for case in cases():
        if case.bury:
            continue  # the buried copies are the same excerpts behind 100,000 lines
        paths = materialise(case, Path(tmp))
        names = [p.relative_to(tmp).as_posix() for p in paths]
        scans = [scan.scan_file(str(p), matcher, name=n) for p, n in zip(paths, names)]
        out["cases"].append({
            "name": case.name,
            "files": [{"name": n, "bytes": base64.b64encode(p.read_bytes()).decode()}
                      for p, n in zip(paths, names)],
            "expected": contract.as_json(rank.diagnose(scans), None),
        })
print(json.dumps(out))
`);

const { diagnoser } = require('./worker.js');

/* One compiled matcher for every case: they share the data. */
const diagnoseFiles = diagnoser(corpus.data);

// What both engines must agree on, without the fields only one side has (links, answers).
function essentials(result) {
  const line = (e) => e && [e.file, e.line, e.rank, e.timestamp, e.fingerprint, e.collateral];
  return {
    ids: result.matches.map((m) => [m.id, m.score, m.possible]),
    evidence: result.matches.map((m) => m.evidence.map(line)),
    initiating: line(result.initiating),
    initiating_rank: result.initiating_rank,
    initiating_reason: result.initiating_reason,
    silent_ranks: result.silent_ranks,
    files: result.files.map((f) => [f.file, f.lines, f.bytes])
  };
}

test('the corpus has its real logs', () => {
  assert.ok(corpus.cases.length >= 150, `${corpus.cases.length} cases`);
});

corpus.cases.forEach((c) => {
  test(`same answer as the CLI: ${c.name}`, async () => {
    const got = await diagnoseFiles(c.files.map((f) => (
      { name: f.name, blob: new Blob([Buffer.from(f.bytes, 'base64')]) })));
    assert.deepStrictEqual(essentials(got), essentials(c.expected));
  });
});

// Review case D06 in the browser: a log saved as UTF-16 (PowerShell's `>` writes it with a byte
// order mark) gives the answer of its UTF-8 original, with a mark or without, little- or
// big-endian, plain or gzipped; read as bytes, nothing matched.
const zlib = require('node:zlib');
const UTF16 = {
  'LE with a mark': (text) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]),
  'BE with a mark': (text) => Buffer.from([0xfe, 0xff, ...Buffer.from(text, 'utf16le').swap16()]),
  'LE without one': (text) => Buffer.from(text, 'utf16le'),
  'BE without one': (text) => Buffer.from(text, 'utf16le').swap16()
};
['real/cuda-device-side-assert--1.log', 'real/ddp-unused-parameters--3.log',
  'real/hf-deepspeed-config-mismatch--5.log'].forEach((name) => {
  const c = corpus.cases.find((k) => k.name === name);
  const [file] = c.files;
  const text = Buffer.from(file.bytes, 'base64').toString('utf8');
  Object.entries(UTF16).forEach(([how, encode]) => {
    [false, true].forEach((packed) => {
      test(`UTF-16 ${how}${packed ? ', gzipped' : ''} gives the UTF-8 answer: ${name}`, async () => {
        const bytes = packed ? zlib.gzipSync(encode(text)) : encode(text);
        const got = await diagnoseFiles([{ name: file.name, blob: new Blob([bytes]) }]);
        assert.ok(c.expected.matches.length > 0);
        assert.deepStrictEqual(essentials(got), essentials(c.expected));
      });
    });
  });
});
