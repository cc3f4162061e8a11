/*
 * Nanopedia diagnosis page (diagnose.html): paste a log or choose files; a worker matches them.
 *
 * Runs from file:// under a CSP that forbids every connection: the fingerprints come from
 * diagnose-data.js (it sets self.NanopediaDiagnoseData) and the worker from the source of the
 * function diagnose-worker.js defines, turned into a blob: URL. Files go to the worker as Blobs,
 * which it reads in pieces with Blob.slice, so a log of hundreds of MB is never one string.
 *
 * Log text is untrusted: every piece of it reaches the page through textContent, never as HTML.
 * The page stays responsive (the work is in the worker), shows progress, can cancel, and stops
 * the worker when it goes past the time budget or stops reporting.
 */
(function () {
  'use strict';

  var data = self.NanopediaDiagnoseData;
  var source = self.NanopediaDiagnoseWorker;
  /* Evidence lines shown per entry before the rest fold away. */
  var SHOWN = 5;
  /* A worker silent this long past the budget is stuck in one line: it is stopped. */
  var GRACE_MS = 10000;

  var $ = function (id) { return document.getElementById(id); };
  /* The page's elements, found by wire(): once on the site, each time the page is shown in the
     single-file bundle (its router replaces the page's DOM and fires `nanopedia:page`). */
  var text, input, zone, runButton, cancelButton, budget, status, statusText, progress, results;

  var job = null;

  function megabytes(n) { return (n / 1e6).toFixed(n < 1e7 ? 2 : 0) + ' MB'; }

  function setState(state, message) {
    status.dataset.state = state;
    statusText.textContent = message;
    var busy = state === 'running';
    runButton.disabled = busy;
    cancelButton.disabled = !busy;
    progress.hidden = !busy;
  }

  function stop() {
    if (!job) return;
    clearTimeout(job.timer);
    job.worker.terminate();
    URL.revokeObjectURL(job.url);
    job = null;
  }

  function watchdog(ms) {
    clearTimeout(job.timer);
    job.timer = setTimeout(function () {
      stop();
      setState('error', 'Stopped: the matcher went past the time budget without finishing a ' +
        'piece of the log. A fingerprint may be pathologically slow on this log.');
    }, ms);
  }

  /* Diagnose `files`: [{name, path, blob}], in the order given (rank order for per-rank logs). */
  function start(files) {
    stop();
    if (!data || !source) {
      setState('error', 'The fingerprint data did not load; rebuild the site.');
      return;
    }
    var seconds = Math.max(0.001, Number(budget.value) || 120);
    var code = '(' + source.toString() + ')(self);\n';
    var url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
    var worker = new Worker(url);
    var began = performance.now();
    job = { worker: worker, url: url, timer: 0 };
    status.dataset.run = String(Number(status.dataset.run || 0) + 1);
    var total = files.reduce(function (n, f) { return n + f.blob.size; }, 0);
    results.hidden = true;
    progress.max = Math.max(total, 1);
    progress.value = 0;
    setState('running', 'Reading ' + files.length + ' log(s), ' + megabytes(total) + '…');
    watchdog(seconds * 1000 + GRACE_MS);
    worker.onmessage = function (event) {
      var msg = event.data;
      if (msg.type === 'progress') {
        watchdog(seconds * 1000 + GRACE_MS);
        progress.value = msg.done;
        var rate = msg.done / Math.max((performance.now() - began) / 1000, 1e-3);
        statusText.textContent = 'Reading ' + msg.file + ': ' + megabytes(msg.done) + ' of ' +
          megabytes(total) + ' (' + megabytes(rate) + '/s)';
        return;
      }
      stop();
      if (msg.type === 'done') {
        show(msg.result);
        var r = msg.result;
        var bytes = r.files.reduce(function (n, f) { return n + f.bytes; }, 0);
        var lines = r.files.reduce(function (n, f) { return n + f.lines; }, 0);
        status.dataset.bytes = String(bytes);
        status.dataset.seconds = String(r.seconds);
        setState('done', 'Read ' + r.files.length + ' log(s), ' + lines.toLocaleString('en') +
          ' lines, ' + megabytes(bytes) + ' in ' + r.seconds.toFixed(2) + ' s (' +
          megabytes(bytes / Math.max(r.seconds, 1e-3)) + '/s); ' + r.matches.length +
          ' entr' + (r.matches.length === 1 ? 'y' : 'ies') + ' matched.');
      } else {
        setState('error', msg.message);
      }
    };
    worker.onerror = function (event) {
      event.preventDefault();
      stop();
      setState('error', 'The matcher failed: ' + (event.message || 'unknown error'));
    };
    worker.postMessage({ data: data, files: files, budgetMs: seconds * 1000 });
  }

  /* ---- Results, built from text nodes only. ---- */

  function fill(root, selector, value) {
    root.querySelector(selector).textContent = value;
  }

  function evidenceItem(ev) {
    var item = $('evidence-template').content.firstElementChild.cloneNode(true);
    item.dataset.file = ev.file;
    item.dataset.line = String(ev.line);
    fill(item, '.where', ev.file + ':' + ev.line);
    fill(item, '.rank', ev.rank === null ? '' : 'rank ' + ev.rank);
    fill(item, '.fingerprint', ev.fingerprint + ' (' + ev.indicates + ')');
    item.querySelector('.collateral').hidden = !ev.collateral;
    fill(item, '.text', ev.text);
    return item;
  }

  function matchItem(c) {
    var item = $('match-template').content.firstElementChild.cloneNode(true);
    item.dataset.id = c.id;
    var link = item.querySelector('.match-title');
    link.href = c.url;
    link.textContent = c.title;
    fill(item, '.match-score', 'score ' + c.score);
    fill(item, '.match-id', c.id);
    item.querySelector('.benign').hidden = !c.benign;
    var lists = item.querySelectorAll('.evidence');
    c.evidence.forEach(function (ev, i) {
      lists[i < SHOWN ? 0 : 1].appendChild(evidenceItem(ev));
    });
    if (c.evidence.length > SHOWN) {
      var more = item.querySelector('.more');
      more.hidden = false;
      fill(more, 'summary', (c.evidence.length - SHOWN) + ' more line(s)');
    }
    return item;
  }

  function show(r) {
    var list = $('matches');
    list.replaceChildren.apply(list, r.matches.map(matchItem));
    $('no-match').hidden = r.matches.length > 0;
    var first = $('first-failure');
    first.hidden = r.initiating_rank === null && r.initiating === null;
    first.dataset.rank = r.initiating_rank === null ? '' : String(r.initiating_rank);
    var words = 'First failure: rank ' + (r.initiating_rank === null ? 'unknown' : r.initiating_rank);
    if (r.initiating) words += ' at ' + r.initiating.file + ':' + r.initiating.line;
    first.textContent = words + ' (' + r.initiating_reason + ')';
    var skipped = $('skipped');
    skipped.replaceChildren.apply(skipped, r.skipped.map(function (s) {
      var li = document.createElement('li');
      li.textContent = 'Fingerprint left out (the browser cannot compile it): ' + s;
      return li;
    }));
    skipped.hidden = r.skipped.length === 0;
    results.hidden = false;
  }

  /* ---- Input: paste, choose, drop. ---- */

  function fromFiles(list) {
    return Array.prototype.map.call(list, function (f) {
      return { name: f.webkitRelativePath || f.name, path: f.webkitRelativePath || f.name, blob: f };
    });
  }

  function wire() {
    stop();
    text = $('log-text');
    if (!text) return;
    input = $('log-files');
    zone = $('drop-zone');
    runButton = $('run');
    cancelButton = $('cancel');
    budget = $('budget');
    status = $('status');
    statusText = $('status-text');
    progress = $('progress');
    results = $('results');
    runButton.addEventListener('click', function () {
      if (text.value) {
        start([{ name: 'pasted log', path: 'pasted log', blob: new Blob([text.value]) }]);
      } else if (input.files.length) {
        start(fromFiles(input.files));
      } else {
        setState('idle', 'Paste a log or choose a file first.');
      }
    });
    cancelButton.addEventListener('click', function () {
      stop();
      setState('cancelled', 'Cancelled.');
    });
    input.addEventListener('change', function () {
      if (input.files.length) start(fromFiles(input.files));
    });
    zone.addEventListener('dragover', function () { zone.classList.add('over'); });
    zone.addEventListener('dragleave', function () { zone.classList.remove('over'); });
    zone.addEventListener('drop', function (event) {
      zone.classList.remove('over');
      if (event.dataTransfer && event.dataTransfer.files.length) {
        start(fromFiles(event.dataTransfer.files));
      }
    });
    setState('idle', '');
  }

  /* A file dropped anywhere else would make the browser open it in place of this page. */
  ['dragover', 'drop'].forEach(function (type) {
    document.addEventListener(type, function (event) {
      if ($('drop-zone')) event.preventDefault();
    });
  });
  document.addEventListener('nanopedia:page', wire);
  wire();
}());
