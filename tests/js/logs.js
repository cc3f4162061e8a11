// Logs diagnosed by both engines: the browser worker through its page path (onmessage), and the
// CLI (nanopedia.diagnosis: scan, rank, contract.as_json) on the same bytes, with entries made
// of the fingerprints a test gives. Shared by the Node tests; not a test file itself.
'use strict';
const { diagnoseFiles } = require('./worker.js');
const { python } = require('./python.js');

/*
 * For each case ({entries: {id: [fingerprint fields]}, files: [{name, bytes}], buffer_bytes?}):
 * the data the page would export for those entries and the CLI's --json answer on the files.
 * Each entry is the fixture entry alpha-failure with the case's id and fingerprints, and two
 * root causes a fingerprint may point at (`cast`, `flaky`). A fingerprint's `must_match` and
 * `must_not_match` are filled in (nothing here checks them).
 */
function cliAnswers(cases) {
  return python(`
import base64, io, json, sys, tempfile
from pathlib import Path
from nanopedia.content.corpus import load_entry
from nanopedia.diagnosis import contract, logs, rank, report, scan
from nanopedia.model import Fingerprint, FixStep, RootCause

src, _ = load_entry(Path("tests/fixtures/corpus/alpha-failure.yaml"))
# Two root causes (the fixture's \`cast\`, and \`flaky\`), each with its own fix step.
flaky = RootCause(id="flaky", title="A flaky node", domain="infrastructure", action="drain-node",
                  explanation="It fails.")
base = src.entry.model_copy(update={
    "root_causes": [*src.entry.root_causes, flaky],
    "fix": [*src.entry.fix, FixStep(title="Drain the node", causes=["flaky"], detail="Drain it.")]})
out = []
for case in json.load(sys.stdin):
    entries = [
        base.model_copy(update={"id": eid, "title": eid.replace("-", " ").capitalize(), "fingerprints": [
            Fingerprint(must_match=["x"], must_not_match=["y"], **fp) for fp in fps]})
        for eid, fps in case["entries"].items()
    ]
    matcher = scan.Matcher(entries)
    data = contract.export_data(entries)
    scans = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in case["files"]:
            path = Path(tmp, f["name"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(f["bytes"]))
            if case.get("buffer_bytes"):
                stream, _ = logs.open_log(str(path))
                with stream:
                    scans.append(scan.scan(stream, f["name"], matcher, buffer_bytes=case["buffer_bytes"]))
            else:
                scans.append(scan.scan_file(str(path), matcher, name=f["name"]))
    if case.get("buffer_bytes"):
        data["buffer_bytes"] = case["buffer_bytes"]
    answer = report.with_answers(rank.diagnose(scans), {e.id: e for e in entries}, None, None)
    out.append({"data": data, "cli": answer})
print(json.dumps(out))
`, cases.map((c) => ({
    entries: c.entries, buffer_bytes: c.buffer_bytes,
    files: c.files.map((f) => ({ name: f.name, bytes: Buffer.from(f.bytes).toString('base64') }))
  })));
}

/* What both engines must agree on (the fields both have), evidence with its text. */
function essentials(result) {
  const line = (e) => e && [e.file, e.line, e.rank, e.timestamp, e.fingerprint, e.collateral, e.text];
  return {
    ids: result.matches.map((m) => [m.id, m.score, m.possible, m.benign]),
    answers: result.matches.map((m) => [m.cause, m.fix, m.domain, m.action, m.confidence]),
    evidence: result.matches.map((m) => m.evidence.map(line)),
    initiating: line(result.initiating),
    initiating_rank: result.initiating_rank,
    initiating_reason: result.initiating_reason,
    root_cause_rank: result.root_cause_rank,
    silent_ranks: result.silent_ranks,
    files: result.files.map((f) => [f.file, f.lines, f.bytes])
  };
}

/* The worker's answer on a case's files with the data of its entries. */
function diagnoseCase(data, c, budgetMs) {
  return diagnoseFiles(data, c.files.map((f) => ({ name: f.name, blob: new Blob([f.bytes]) })), budgetMs);
}

module.exports = { cliAnswers, essentials, diagnoseCase };
