// The browser worker loaded under Node, driven through its page path (onmessage) as the
// diagnosis page drives it. Shared by the Node tests; not a test file itself.
'use strict';
const path = require('node:path');

globalThis.self = globalThis;
require(path.resolve(__dirname, '..', '..', 'theme/static/diagnose-worker.js'));

// The worker's whole job on some files ({name, blob}): the result of its 'done' message.
function diagnoseFiles(data, files, budgetMs = 120000) {
  return new Promise((resolve, reject) => {
    const scope = {
      postMessage(msg) {
        if (msg.type === 'done') resolve(msg.result);
        else if (msg.type === 'error') reject(new Error(msg.message));
      }
    };
    globalThis.NanopediaDiagnoseWorker(scope);
    const given = files.map((f) => ({ name: f.name, path: f.name, blob: f.blob }));
    scope.onmessage({ data: { data, files: given, budgetMs } });
  });
}

/* The same for many jobs with one `data`, compiled once (the worker's `jobs`). */
function diagnoser(data) {
  const scope = {};
  globalThis.NanopediaDiagnoseWorker(scope);
  const run = scope.jobs(data);
  return (files, budgetMs = 120000) => new Promise((resolve, reject) => {
    const given = files.map((f) => ({ name: f.name, path: f.name, blob: f.blob }));
    run({ files: given, budgetMs }, (msg) => {
      if (msg.type === 'done') resolve(msg.result);
      else if (msg.type === 'error') reject(new Error(msg.message));
    });
  });
}

module.exports = { diagnoseFiles, diagnoser };
