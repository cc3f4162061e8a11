// The VS Code extension's verdict equals `nanopedia diagnose --format json` on every log of the
// labelled corpus (tests/logs: the real excerpts, the per-rank folders, the damaged and the buried
// copies): the same entry, confidence, first failing rank and line, likely cause, domain, action
// and first fix. The logs go through the extension's own path for a file on disk (lib/engine.js
// streams them in a worker thread with the engine it ships) and its verdict (lib/verdict.js); the
// CLI runs in-process on the same files. Run by `node --test tests/js/`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const python = process.env.NANOPEDIA_PYTHON || path.join(root, '.venv/bin/python');
const extension = path.join(root, 'editors', 'vscode');
const { Engine } = require(path.join(extension, 'lib', 'engine.js'));
const { parseData } = require(path.join(extension, 'lib', 'data.js'));
const { verdict } = require(path.join(extension, 'lib', 'verdict.js'));

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nanopedia-vscode-corpus-'));
test.after(() => fs.rmSync(folder, { recursive: true, force: true }));

// Python writes every case's logs under `folder`, the data the extension ships (`nanopedia
// export` of entries/, the bytes of the site's static/diagnose-data.js) and the CLI's answers.
const corpus = JSON.parse(execFileSync(python, ['-c', `
import contextlib, io, json, os, sys
from pathlib import Path
root = Path.cwd()
sys.path.insert(0, "bench")
from logcorpus import cases, materialise
from nanopedia.cli import main
from nanopedia.diagnosis import catalogue
from nanopedia.site.exports import diagnose_file

out = Path(sys.argv[1])
data = diagnose_file(catalogue.usable(root / "entries")[0]).decode()
found = []
os.chdir(out)
for case in cases():
    names = [p.relative_to(out).as_posix() for p in materialise(case, out)]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        main(["diagnose", "--format", "json", "--entries", str(root / "entries"), *names])
    found.append({"name": case.name, "files": names, "cli": json.loads(text.getvalue())})
print(json.dumps({"data": data, "cases": found}))
`, folder], { cwd: root, maxBuffer: 512 << 20 }));

const data = parseData(corpus.data, 'the export of entries/');
/* One engine for every case, as the editor keeps one: each diagnosis after the first starts on
   the thread the last one left waiting, so every case also checks that a reused thread answers
   as a fresh one would. */
const engine = new Engine(path.join(root, 'theme', 'static', 'diagnose-worker.js'), data);
test.after(() => engine.dispose());

/* What a verdict says, from the extension's verdict or from the CLI's JSON. */
function said(v) {
  if (!v) return null;
  return {
    id: v.id, confidence: v.confidence, rank: v.rank,
    first: v.first ? [v.first.file, v.first.line, v.first.rank] : null,
    cause: v.cause, domain: v.domain, action: v.action, fix: v.fix
  };
}

function fromCli(out) {
  const best = out.matches[0];
  if (!best) return null;
  return said({ ...best, rank: out.initiating_rank, first: out.initiating });
}

test('the corpus has its labelled logs, the buried copies too', () => {
  assert.ok(corpus.cases.length >= 300, `${corpus.cases.length} cases`);
  assert.ok(corpus.cases.some((c) => fs.statSync(path.join(folder, c.files[0])).size > 8 << 20));
});

corpus.cases.forEach((c) => {
  test(`the editor's verdict is the CLI's: ${c.name}`, async () => {
    const result = await engine.diagnose({
      budgetMs: 120000,
      files: c.files.map((name) => ({ name, disk: path.join(folder, name) }))
    });
    assert.deepStrictEqual(said(verdict(result, data)), fromCli(c.cli));
  });
});
