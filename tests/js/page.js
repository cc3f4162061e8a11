// A browser page for theme/static's scripts under Node: each script run as the browser runs a
// plain script, in a context of its own whose global object is the page's `window`. Shared by
// the Node tests; not a test file itself.
'use strict';
const vm = require('node:vm');

// bench/mutation_js.py runs the Node tests under Stryker, whose instrumented scripts read the
// mutant to switch on from the process's environment and count coverage in a global of the
// runner's: a page shares both (when there are any), so the scripts it runs are measured too.
function mutationTesting() {
  const ns = globalThis.__stryker__;
  if (!ns) return {};
  const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;
  return { __stryker__: ns, process: { env: mutant ? { __STRYKER_ACTIVE_MUTANT__: mutant } : {} } };
}

/* The page's window after running `scripts` in order, its globals set from `globals` first
   (a document, timers, MiniSearch: what a test's page offers). */
function page(scripts, globals = {}) {
  const window = vm.createContext({ ...globals, ...mutationTesting() });
  window.window = window;
  for (const code of scripts) run(window, code);
  return window;
}

/* Runs one more script in the page. */
function run(window, code) {
  return vm.runInContext(code, window);
}

module.exports = { page, run };
