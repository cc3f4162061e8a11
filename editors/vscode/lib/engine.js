// Runs diagnoses in worker threads the way the site's page (theme/static/diagnose.js) runs its
// Web Workers: the engine and the data unchanged, progress reported, a time budget, and a
// watchdog for a fingerprint that never returns on some line (a regular expression cannot be
// interrupted from inside): the thread is stopped and the logs read again without it, which the
// result then names in `slow`. As on the page, one thread with the fingerprints compiled waits
// for the next diagnosis: compiling them is most of the time a small log takes. No VS Code API
// here, so Node's test runner drives it too.
'use strict';
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const THREAD = path.join(__dirname, 'thread.js');
/* One fingerprint's time on one read buffer before the worker drops it, and the silence after
   which a fingerprint counts as stuck. The page's 3 s and 5 s (diagnose.js) are short for an
   editor, whose machine is often busy (a build, a job writing its logs): there a pattern that
   takes 3 s on one 8 MB buffer is slow, not stuck, and dropping a decisive one changes the
   verdict. A dropped fingerprint is named in the answer either way. */
const PATTERN_MS = 10000;
const STALL_MS = 15000;
const GRACE_MS = 10000;

/** The diagnoses of one engine (the path of diagnose-worker.js) with one data. */
class Engine {
  constructor(engine, data) {
    this.engine = engine;
    this.data = data;
    /* A thread whose fingerprints are compiled, waiting for a job; it keeps no process alive. */
    this.spare = null;
  }

  /** Stops the waiting thread; a diagnosis still running goes on. */
  dispose() {
    if (this.spare) this.spare.terminate();
    this.spare = null;
  }

  /* The waiting thread, taken for a job, or a newly compiled one when none waits. */
  take() {
    const worker = this.spare || this.compiled();
    this.spare = null;
    worker.removeAllListeners('error');
    worker.removeAllListeners('exit');
    worker.ref();
    return worker;
  }

  /* A thread running the engine, with nothing compiled yet. */
  thread() {
    return new Worker(THREAD, { workerData: { engine: this.engine } });
  }

  /* A thread told to compile every fingerprint now, before any log comes. */
  compiled() {
    const worker = this.thread();
    worker.postMessage({ load: this.data });
    return worker;
  }

  /* `worker` answered its job with every fingerprint: it waits as the next one, unless one
     already does. Should it fail or end while it waits, it is dropped. */
  park(worker) {
    worker.removeAllListeners('message');
    worker.removeAllListeners('error');
    if (this.spare) {
      worker.terminate();
      return;
    }
    this.spare = worker;
    worker.unref();
    const drop = () => { if (this.spare === worker) this.spare = null; };
    worker.on('error', drop);
    worker.on('exit', drop);
  }

  /**
   * The engine's result (the CLI's --json object, plus `slow`, `skipped` and `seconds`) for
   * `files`: [{name, path?, disk?: a file to stream, text?: the log itself}].
   * `onProgress(done, total, file)` is told as the logs are read; `cancelled()` is polled
   * between messages; `stallMs`: see STALL_MS.
   */
  diagnose({ files, budgetMs, onProgress, cancelled, stallMs = STALL_MS }) {
    const began = Date.now();
    const slow = [];
    return new Promise((resolve, reject) => {
      let worker = null;
      let watchdog = null;
      let stall = null;
      let poll = null;

      function quiet() {
        clearTimeout(watchdog);
        clearTimeout(stall);
        clearInterval(poll);
      }
      function halt() {
        quiet();
        if (worker) worker.terminate();
        worker = null;
      }
      function fail(message) {
        halt();
        reject(new Error(message));
      }
      function arm(ms) {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => fail('stopped: the matcher went past the time budget without ' +
          'finishing a piece of the log; a fingerprint may be pathologically slow on this log'), ms);
      }
      const launch = () => {
        const leftMs = budgetMs - (Date.now() - began);
        if (leftMs <= 0) {
          fail('diagnosis stopped: the time budget ran out while fingerprints got stuck');
          return;
        }
        /* The waiting thread for a first try; a restart compiles without the stuck ones. */
        const whole = slow.length === 0;
        const current = whole ? this.take() : this.thread();
        worker = current;
        arm(leftMs + GRACE_MS);
        current.on('message', (msg) => {
          if (worker !== current) return;
          if (msg.type === 'probe') {
            clearTimeout(stall);
            if (!msg.entry) return;
            stall = setTimeout(() => {
              const row = this.data.fingerprints.find((r) => r.entry === msg.entry && r.id === msg.id);
              slow.push({ entry: msg.entry, id: msg.id, title: row ? row.title : msg.entry,
                          file: msg.file, seconds: stallMs / 1000 });
              halt();
              launch();
            }, stallMs);
          } else if (msg.type === 'progress') {
            arm(leftMs + GRACE_MS);
            if (onProgress) onProgress(msg.done, msg.total, msg.file);
          } else if (msg.type === 'done') {
            quiet();
            worker = null;
            if (whole) this.park(current);
            else current.terminate();
            resolve(msg.result);
          } else if (msg.type === 'error') {
            fail(msg.message);
          }
        });
        current.on('error', (err) => { if (worker === current) fail(`the matcher failed: ${err.message}`); });
        const job = { files, budgetMs: leftMs, patternMs: PATTERN_MS, slow };
        current.postMessage(whole ? job : { ...job, data: this.data });
      };
      if (cancelled) {
        poll = setInterval(() => { if (cancelled()) fail('cancelled'); }, 100);
      }
      launch();
    });
  }
}

module.exports = { Engine };
