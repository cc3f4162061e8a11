/*
 * `nanopedia check` times fingerprint patterns in the browser's engine with this script, under
 * Node: V8's RegExp is the engine of Chrome and Edge, and it backtracks, so a pattern RE2 runs in
 * linear time can stall the diagnosis page for minutes. The patterns are compiled and run by the
 * diagnosis worker's own code (static/diagnose-worker.js: `timeProbe`, the RegExps and the
 * per-line loop of a scan), so what is timed is what the page runs.
 *
 * stdin: {"patterns": [{"program": P, "sample": S, "budget_ms": B}], "timeout_ms": T,
 *         "tries": N}. stdout: {"results": [{"ms": M, "timeout": bool, "error": text|null}]},
 * M the CPU milliseconds of the fastest run of P over S.
 * One worker thread runs the patterns in order; a pattern still running after T ms (wall clock)
 * is stopped by terminating that thread (a catastrophic backtrack never returns by itself),
 * recorded as a timeout, and a fresh thread goes on with the next pattern. A run over its B ms is
 * repeated up to N times and the fastest kept, so one slow run (a cold cache, a collection) does
 * not fail a pattern that is fast.
 */
'use strict';
const path = require('node:path');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');

const WORKER = path.join(__dirname, '..', 'static', 'diagnose-worker.js');

/* CPU milliseconds the process spent in `fn()`: the main thread only waits meanwhile, and CPU
   time, unlike the clock, does not grow when other processes share the cores. */
function cpuMs(fn) {
  const before = process.cpuUsage();
  fn();
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / 1000;
}

function timePatterns() {
  const { patterns, first, tries } = workerData;
  globalThis.self = globalThis;
  require(WORKER);
  const scope = {};
  globalThis.NanopediaDiagnoseWorker(scope);
  for (let i = first; i < patterns.length; i++) {
    parentPort.postMessage({ i, started: true });
    let best = Infinity;
    let error = null;
    try {
      const { program, sample, budget_ms: budget } = patterns[i];
      const run = scope.timeProbe(program);
      for (let t = 0; t < tries && best > budget; t++) {
        best = Math.min(best, cpuMs(() => run(sample)));
      }
    } catch (err) {
      error = String(err && err.message ? err.message : err);
    }
    parentPort.postMessage({ i, ms: error ? null : best, error });
  }
}

function main(input) {
  const job = JSON.parse(input);
  const results = new Array(job.patterns.length).fill(null);
  function start(first) {
    if (first >= job.patterns.length) return finish();
    const worker = new Worker(__filename, { workerData: { ...job, first } });
    let timer = null;
    let current = first;
    worker.on('message', (msg) => {
      clearTimeout(timer);
      current = msg.i;
      if (msg.started) {
        timer = setTimeout(() => {
          results[current] = { ms: null, timeout: true, error: null };
          worker.removeAllListeners('exit');
          worker.removeAllListeners('message');
          worker.terminate().then(() => start(current + 1));
        }, job.timeout_ms);
      } else {
        results[msg.i] = { ms: msg.ms, timeout: false, error: msg.error };
      }
    });
    worker.on('error', (err) => {
      clearTimeout(timer);
      results[current] = { ms: null, timeout: false, error: String(err && err.message) };
      worker.removeAllListeners('exit');
      start(current + 1);
    });
    worker.on('exit', () => { clearTimeout(timer); finish(); });
  }
  function finish() {
    process.stdout.write(JSON.stringify({ results }));
  }
  start(0);
}

if (isMainThread) {
  const chunks = [];
  process.stdin.on('data', (chunk) => chunks.push(chunk));
  process.stdin.on('end', () => main(Buffer.concat(chunks).toString('utf8')));
} else {
  timePatterns();
}
