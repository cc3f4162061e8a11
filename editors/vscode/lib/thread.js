// A worker thread that runs the site's diagnosis worker (engine/diagnose-worker.js, a copy of
// theme/static/diagnose-worker.js made when the extension is packaged) as the page runs it: the
// same `NanopediaDiagnoseWorker(scope)`, driven through `scope.onmessage` with the logs as Blobs.
// A log on disk is a Blob of the file (fs.openAsBlob), read in slices: a file of hundreds of MB
// is never one string here, as on the page.
'use strict';
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');

globalThis.self = globalThis;
require(workerData.engine);

const scope = { postMessage: (message) => parentPort.postMessage(message) };
globalThis.NanopediaDiagnoseWorker(scope);

/* `{load: data}` compiles the fingerprints ahead (the thread then waits for jobs without data,
   one after another); a job with `data` compiles its own. */
parentPort.on('message', async (job) => {
  if (job.load) {
    scope.onmessage({ data: job });
    return;
  }
  let files;
  try {
    files = await Promise.all(job.files.map(async (file) => ({
      name: file.name,
      path: file.path || file.name,
      blob: file.disk ? await fs.openAsBlob(file.disk) : new Blob([file.text])
    })));
  } catch (err) {
    scope.postMessage({ type: 'error', message: `cannot open the log: ${err.message}` });
    return;
  }
  scope.onmessage({ data: { ...job, files } });
});
