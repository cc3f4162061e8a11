/*
 * Nanopedia diagnosis page (diagnose.html): paste a log or choose files; a worker matches them.
 *
 * A log pasted into a search box comes with "Diagnose this log" in sessionStorage and is
 * diagnosed at once (carried()).
 *
 * Runs from file:// under a CSP that forbids every connection: the fingerprints come from
 * diagnose-data.js (it sets self.NanopediaDiagnoseData) and the worker from the source of the
 * function diagnose-worker.js defines, turned into a blob: URL. Files go to the worker as Blobs,
 * which it reads in pieces with Blob.slice, so a log of hundreds of MB is never one string; a
 * paste or a text drop of over LARGE_PASTE characters is taken the same way, as a Blob, and never
 * put into the text box (a textarea holding 50 MB freezes the page for many seconds).
 *
 * Log text is untrusted: every piece of it reaches the page through textContent, never as HTML;
 * the timeline is SVG built element by element.
 * The page stays responsive (the work is in the worker), shows progress, can cancel, and stops
 * the worker when it goes past the time budget or stops reporting. The worker says which
 * fingerprint it runs before each one: a pattern that never returns (catastrophic backtracking
 * cannot be interrupted from inside the worker) is named, and the log is read again without it.
 */
(function () {
  'use strict';

  var data = self.NanopediaDiagnoseData;
  var source = self.NanopediaDiagnoseWorker;
  /* Evidence lines shown per entry before the rest fold away. */
  var SHOWN = 5;
  /* A worker silent this long past the budget is stuck in one line: it is stopped. */
  var GRACE_MS = 10000;
  /* Time one fingerprint may take on one read buffer; the worker drops it when it returns
     later than this. */
  var PATTERN_MS = 3000;
  /* A fingerprint that has not returned after this long is stuck: the page stops the worker. */
  var STALL_MS = 5000;
  /* Pastes and drops of more characters than this go to the worker as a Blob. */
  var LARGE_PASTE = 1000000;
  /* Where a search box leaves a log pasted into it ("Diagnose this log", search.js): this tab's
     sessionStorage, which never leaves the browser. */
  var CARRIED = 'nanopedia:diagnose-log';
  /* Lanes drawn in the timeline (its text list names every rank). */
  var MAX_LANES = 64;
  /* Marks drawn per lane after the first. */
  var MAX_TICKS = 200;
  var SVG = 'http://www.w3.org/2000/svg';

  var $ = function (id) { return document.getElementById(id); };
  /* The page's elements, found by wire(): once on the site, each time the page is shown in the
     single-file bundle (its router replaces the page's DOM and fires `nanopedia:page`). */
  var text, input, zone, runButton, cancelButton, budget, status, statusText, progress, results;
  var pastedNote;

  var job = null;
  /* A worker whose fingerprints are compiled, waiting for a job (see ready()). */
  var spare = null;
  /* A large paste or text drop, kept as a Blob instead of in the text box. */
  var pasted = null;

  function megabytes(n) { return (n / 1e6).toFixed(n < 1e7 ? 2 : 0) + ' MB'; }

  function setState(state, message) {
    status.dataset.state = state;
    statusText.textContent = message;
    var busy = state === 'running';
    runButton.disabled = busy;
    cancelButton.disabled = !busy;
    progress.hidden = !busy;
  }

  /* A worker running the source of diagnose-worker.js, from a blob: URL (the CSP allows no
     other). */
  function newWorker() {
    var code = '(' + source.toString() + ')(self);\n';
    var url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
    return { worker: new Worker(url), url: url };
  }

  function end(w) {
    w.worker.terminate();
    URL.revokeObjectURL(w.url);
  }

  /* Keeps one worker ready, its fingerprints compiled ahead: compiling them is most of the time
     a small log takes, so a diagnosis starts at once. A worker that answered its job waits as
     the next one (finish()); one stopped (cancelled, stuck, past its time) is replaced here. */
  function ready() {
    if (spare || !data || !source) return;
    var w = newWorker();
    park(w);
    w.worker.postMessage({ load: data });
  }

  /* `w` waits as the spare; should it fail while it waits, it is dropped. */
  function park(w) {
    spare = w;
    w.worker.onmessage = null;
    w.worker.onerror = function (event) {
      event.preventDefault();
      end(w);
      if (spare === w) spare = null;
    };
  }

  /* Stops the worker of the job (and the job, unless `keep`: a restart reuses it). */
  function halt(keep) {
    if (!job || !job.worker) return;
    clearTimeout(job.timer);
    clearTimeout(job.stall);
    end(job);
    job.worker = null;
    if (!keep) job = null;
  }

  function stop() {
    halt(false);
    ready();
  }

  /* The job's worker answered and is idle: it becomes the spare when it holds every fingerprint
     (a restart's worker holds fewer) and none is waiting; otherwise it is stopped. */
  function finish() {
    clearTimeout(job.timer);
    clearTimeout(job.stall);
    var w = { worker: job.worker, url: job.url };
    var whole = job.whole;
    job = null;
    if (whole && !spare) park(w);
    else end(w);
    ready();
  }

  function watchdog(ms) {
    clearTimeout(job.timer);
    job.timer = setTimeout(function () {
      stop();
      setState('error', 'Stopped: the matcher went past the time budget without finishing a ' +
        'piece of the log. A fingerprint may be pathologically slow on this log.');
    }, ms);
  }

  function row(entry, id) {
    var rows = data.fingerprints;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].entry === entry && rows[i].id === id) return rows[i];
    }
    return null;
  }

  /* The worker is inside `probe.entry/probe.id` on `probe.file`: arm or disarm the stall timer. */
  function watchPattern(probe) {
    clearTimeout(job.stall);
    if (!probe.entry) return;
    job.stall = setTimeout(function () {
      var found = row(probe.entry, probe.id);
      job.slow.push({ entry: probe.entry, id: probe.id, title: found ? found.title : probe.entry,
                      file: probe.file, seconds: STALL_MS / 1000 });
      halt(true);
      launch('Fingerprint ' + probe.entry + '/' + probe.id + ' got stuck on ' + probe.file +
        '; reading the log again without it…');
    }, STALL_MS);
  }

  /* Diagnose `files`: [{name, path, blob}], in the order given (rank order for per-rank logs). */
  function start(files) {
    stop();
    if (!data || !source) {
      setState('error', 'The fingerprint data did not load; rebuild the site.');
      return;
    }
    var seconds = Math.max(0.001, Number(budget.value) || 120);
    job = { worker: null, url: '', timer: 0, stall: 0, files: files, slow: [], restarts: -1,
            budgetMs: seconds * 1000, began: performance.now() };
    status.dataset.run = String(Number(status.dataset.run || 0) + 1);
    var total = files.reduce(function (n, f) { return n + f.blob.size; }, 0);
    setState('running', 'Reading ' + files.length + ' log(s), ' + megabytes(total) + '…');
    launch(null);
  }

  /* Starts a worker for the current job, without the fingerprints found stuck so far. */
  function launch(message) {
    var files = job.files;
    var leftMs = job.budgetMs - (performance.now() - job.began);
    if (leftMs <= 0) {
      stop();
      setState('error', 'diagnosis stopped: the time budget ran out while fingerprints got stuck');
      return;
    }
    /* The spare for a first try; a restart compiles without the fingerprints found stuck. */
    var whole = job.slow.length === 0;
    if (whole) ready();
    var w = whole ? spare : newWorker();
    if (whole) spare = null;
    var worker = w.worker;
    var began = performance.now();
    var current = job;
    job.worker = worker;
    job.url = w.url;
    job.whole = whole;
    job.restarts += 1;
    var total = files.reduce(function (n, f) { return n + f.blob.size; }, 0);
    results.hidden = true;
    progress.max = Math.max(total, 1);
    progress.value = 0;
    if (message) statusText.textContent = message;
    watchdog(leftMs + GRACE_MS);
    worker.onmessage = function (event) {
      if (job !== current || job.worker !== worker) return;
      var msg = event.data;
      if (msg.type === 'probe') {
        watchPattern(msg);
        return;
      }
      if (msg.type === 'progress') {
        watchdog(leftMs + GRACE_MS);
        progress.value = msg.done;
        var rate = msg.done / Math.max((performance.now() - began) / 1000, 1e-3);
        statusText.textContent = 'Reading ' + msg.file + ': ' + megabytes(msg.done) + ' of ' +
          megabytes(total) + ' (' + megabytes(rate) + '/s)';
        return;
      }
      finish();
      if (msg.type === 'done') {
        var r = msg.result;
        show(r);
        var bytes = r.files.reduce(function (n, f) { return n + f.bytes; }, 0);
        var lines = r.files.reduce(function (n, f) { return n + f.lines; }, 0);
        status.dataset.bytes = String(bytes);
        status.dataset.seconds = String(r.seconds);
        status.dataset.restarts = String(current.restarts);
        var spent = (performance.now() - current.began) / 1000;
        setState('done', 'Read ' + r.files.length + ' log(s), ' + lines.toLocaleString('en') +
          ' lines, ' + megabytes(bytes) + ' in ' + r.seconds.toFixed(2) + ' s (' +
          megabytes(bytes / Math.max(r.seconds, 1e-3)) + '/s); ' + r.matches.length +
          ' entr' + (r.matches.length === 1 ? 'y' : 'ies') + ' matched' +
          (r.slow.length ? '; ' + r.slow.length + ' fingerprint(s) left out as too slow' : '') +
          (current.restarts ? ', ' + spent.toFixed(1) + ' s in all with ' + current.restarts +
            ' restart(s)' : '') + '.' + r.changed.map(function (c) {
            return ' ' + c.file + ' changed while it was read (a log still being written?): ' +
              'only its first ' + c.lines.toLocaleString('en') + ' lines were diagnosed.';
          }).join(''));
      } else {
        setState('error', msg.message);
      }
    };
    worker.onerror = function (event) {
      event.preventDefault();
      if (job !== current) return;
      stop();
      setState('error', 'The matcher failed: ' + (event.message || 'unknown error'));
    };
    var request = { files: files, budgetMs: leftMs, patternMs: PATTERN_MS };
    if (!whole) {
      request.data = data;
      request.slow = job.slow;
    }
    worker.postMessage(request);
  }

  /* ---- Results, built from text nodes only. ---- */

  function fill(root, selector, value) {
    root.querySelector(selector).textContent = value;
  }

  /* An entry's one-line title: its `code` spans as <code>, the rest as text. */
  function titled(node, title) {
    node.replaceChildren();
    String(title || '').split('`').forEach(function (part, i) {
      if (!part) return;
      if (i % 2) {
        var code = document.createElement('code');
        code.textContent = part;
        node.appendChild(code);
      } else {
        node.appendChild(document.createTextNode(part));
      }
    });
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
    item.querySelector('.possible').hidden = !c.possible || c.benign;
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

  var MEANING = {
    certain: 'the log has an exact error line of this failure, one no other entry explains',
    possible: 'only generic lines, or lines other entries explain too, matched (read the entry ' +
      'to confirm)',
    benign: 'the lines are normal in moderation (the entry says when they are not)'
  };

  /* What the confidence words, the score and "collateral" mean, with the ranking's weights. */
  function confidenceHelp(c) {
    var weights = Object.keys(data.weights).sort(function (a, b) {
      return data.weights[b] - data.weights[a] || (a < b ? -1 : 1);
    }).map(function (k) { return k + ' ' + data.weights[k]; });
    var others = Object.keys(MEANING).filter(function (k) { return k !== c.confidence; })
      .map(function (k) { return k + ' would mean ' + MEANING[k]; });
    var rest = others.join('; ');
    return 'This match is ' + c.confidence + ': ' + MEANING[c.confidence] + '. ' +
      rest[0].toUpperCase() + rest.slice(1) + '. Its score, ' + c.score + ', adds the weight of each fingerprint ' +
      'that matched (' + weights.join(', ') + '), a tenth more for each further distinct line ' +
      'of it, at most half more. A collateral line is the consequence of a failure elsewhere, ' +
      'such as a timeout on the ranks left waiting for the one that crashed: it counts ' +
      data.collateral_factor + ' of its weight, so the cause ranks above its consequences.';
  }

  function showVerdict(r) {
    var box = $('verdict');
    box.hidden = r.matches.length === 0;
    if (box.hidden) return;
    var best = r.matches[0];
    box.dataset.id = best.id;
    var link = $('verdict-title');
    link.href = best.url;
    link.textContent = best.title;
    var word = $('verdict-confidence');
    word.textContent = best.confidence;
    word.dataset.confidence = best.confidence;
    titled($('verdict-cause'), best.cause || 'not recorded for this entry');
    $('verdict-action').textContent = best.action
      ? best.action + ' (failure domain: ' + best.domain + ')' : 'see the entry';
    titled($('verdict-fix'), best.fix || 'see the entry');
    $('confidence-help').textContent = confidenceHelp(best);
  }

  function showSlow(r) {
    var list = $('slow');
    list.replaceChildren.apply(list, r.slow.map(function (s) {
      var li = document.createElement('li');
      li.dataset.entry = s.entry;
      li.dataset.fingerprint = s.id;
      li.textContent = 'Fingerprint ' + s.entry + '/' + s.id + ' (' + s.title + ') was left ' +
        'out: it took over ' + Math.round(s.seconds) + ' s on ' + s.file + ' in this browser\'s ' +
        'regular-expression engine. The results above and below come from every other ' +
        'fingerprint; nanopedia diagnose (RE2, linear time) still uses it.';
      return li;
    }));
    list.hidden = r.slow.length === 0;
  }

  function show(r) {
    var list = $('matches');
    list.replaceChildren.apply(list, r.matches.map(matchItem));
    $('no-match').hidden = r.matches.length > 0;
    showVerdict(r);
    var first = $('first-failure');
    first.hidden = r.initiating_rank === null && r.initiating === null;
    first.dataset.rank = r.initiating_rank === null ? '' : String(r.initiating_rank);
    var words = 'First failure: rank ' + (r.initiating_rank === null ? 'unknown' : r.initiating_rank);
    if (r.initiating) words += ' at ' + r.initiating.file + ':' + r.initiating.line;
    first.textContent = words + ' (' + r.initiating_reason + ')';
    timeline(r);
    showSlow(r);
    var skipped = $('skipped');
    skipped.replaceChildren.apply(skipped, r.skipped.map(function (s) {
      var li = document.createElement('li');
      li.textContent = 'Fingerprint left out (the browser cannot compile it): ' + s;
      return li;
    }));
    skipped.hidden = r.skipped.length === 0;
    results.hidden = false;
  }

  /* ---- The per-rank timeline: one lane per rank, its lines placed in time. ---- */

  /* "MMDDHHMMSS.fffffffff" (the worker's sortable timestamps) as seconds in a leap year. */
  function seconds(stamp) {
    var n = function (a, b) { return Number(stamp.slice(a, b)); };
    return Date.UTC(2000, n(0, 2) - 1, n(2, 4), n(4, 6), n(6, 8), n(8, 10)) / 1000 +
      Number('0' + stamp.slice(10));
  }

  function clock(stamp) {
    return stamp.slice(4, 6) + ':' + stamp.slice(6, 8) + ':' + stamp.slice(8, 10);
  }

  function span(s) {
    if (s < 1) return Math.round(s * 1000) + ' ms';
    if (s < 60) return (Math.round(s * 10) / 10) + ' s';
    var m = Math.floor(s / 60);
    if (m < 60) return m + ' min' + (s % 60 >= 1 ? ' ' + Math.floor(s % 60) + ' s' : '');
    return Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
  }

  /* Every matched line once (a line several entries explain is one point), with its lane. */
  function points(r) {
    var order = new Map();
    r.files.forEach(function (f, i) { if (!order.has(f.file)) order.set(f.file, i); });
    var seen = new Map();
    r.matches.forEach(function (c) {
      c.evidence.forEach(function (e) {
        var key = e.file + '\u0000' + e.line;
        var p = seen.get(key);
        if (!p) {
          p = { ev: e, order: order.get(e.file) || 0, collateral: true, entries: [] };
          seen.set(key, p);
        }
        p.collateral = p.collateral && e.collateral;
        if (p.entries.indexOf(c.id) < 0) p.entries.push(c.id);
      });
    });
    return Array.from(seen.values());
  }

  function lanes(r) {
    var all = points(r);
    var timed = all.length > 0 && all.every(function (p) { return p.ev.timestamp; });
    all.forEach(function (p) { p.x = timed ? seconds(p.ev.timestamp) : p.ev.line; });
    all.sort(function (a, b) { return a.x - b.x || a.order - b.order || a.ev.line - b.ev.line; });
    var byRank = new Map();
    all.forEach(function (p) {
      if (!byRank.has(p.ev.rank)) byRank.set(p.ev.rank, []);
      byRank.get(p.ev.rank).push(p);
    });
    if (r.initiating_rank !== null && !byRank.has(r.initiating_rank) &&
        r.silent_ranks.indexOf(r.initiating_rank) < 0) {
      byRank.set(r.initiating_rank, []);
    }
    var out = Array.from(byRank, function (pair) {
      return { rank: pair[0], points: pair[1], silent: false };
    });
    out.sort(function (a, b) {
      var ai = a.rank === r.initiating_rank ? 0 : 1;
      var bi = b.rank === r.initiating_rank ? 0 : 1;
      if (ai !== bi) return ai - bi;
      if (!a.points.length || !b.points.length) return b.points.length - a.points.length;
      return a.points[0].x - b.points[0].x || (a.rank === null) - (b.rank === null) ||
        a.rank - b.rank;
    });
    r.silent_ranks.forEach(function (rank) { out.push({ rank: rank, points: [], silent: true }); });
    var failure = r.initiating ? r.initiating.file + '\u0000' + r.initiating.line : null;
    all.forEach(function (p) { p.failure = p.ev.file + '\u0000' + p.ev.line === failure; });
    return { lanes: out, timed: timed, points: all };
  }

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function label(rank) { return rank === null ? 'no rank' : 'rank ' + rank; }

  /* What one point says, in the lane's title (hover) and the text list. */
  function describe(p, t0, timed) {
    var e = p.ev;
    var when = timed ? clock(e.timestamp) + (p.x > t0 ? ' (+' + span(p.x - t0) + ')' :
      ' (the earliest)') : 'line ' + e.line;
    return when + ': ' + e.file + ':' + e.line + ', ' + e.fingerprint + ' (' + e.indicates +
      (p.collateral ? ', collateral' : '') + ')' + (p.failure ? ', the first failure' : '');
  }

  /* The key under the lanes: the same shapes and classes as the marks. */
  function legend(svg, x, y) {
    var g = el('g', { class: 'tl-legend', 'aria-hidden': 'true' }, svg);
    [['tl-point tl-failure', 'first failure'], ['tl-point tl-first', 'first matched line'],
     ['tl-mark', 'later line'], ['tl-point tl-collateral', 'collateral (a consequence)'],
     ['tl-track tl-dashed', 'silent rank']].forEach(function (item) {
      if (item[0] === 'tl-mark') el('line', { x1: x, x2: x, y1: y - 6, y2: y + 6, class: item[0] }, g);
      else if (item[0].indexOf('tl-track') === 0) {
        el('line', { x1: x - 8, x2: x + 8, y1: y, y2: y, class: item[0] }, g);
      } else el('circle', { cx: x, cy: y, r: 5, class: item[0] }, g);
      var t = el('text', { x: x + 12, y: y + 4, class: 'tl-note' }, g);
      t.textContent = item[1];
      x += 24 + item[1].length * 6.2;
    });
  }

  function timeline(r) {
    var figure = $('timeline');
    var chart = $('timeline-chart');
    var listing = $('timeline-text');
    var laid = lanes(r);
    figure.hidden = laid.points.length === 0;
    chart.replaceChildren();
    listing.replaceChildren();
    if (figure.hidden) return;
    var xs = laid.points.map(function (p) { return p.x; });
    var t0 = Math.min.apply(null, xs);
    var t1 = Math.max.apply(null, xs);
    var shown = laid.lanes.slice(0, MAX_LANES);
    var W = 760, LEFT = 96, RIGHT = 24, TOP = 34, LANE = 30, PAD = 10, KEY = 30;
    var H = TOP + shown.length * LANE + KEY;
    var plot = W - LEFT - RIGHT;
    var at = function (x) {
      return LEFT + PAD + (t1 > t0 ? (x - t0) / (t1 - t0) * (plot - 2 * PAD) : 0);
    };
    var first = shown[0];
    var silent = laid.lanes.filter(function (l) { return l.silent; }).length;
    $('timeline-caption').textContent = 'When each rank first printed a matched line, ' +
      (laid.timed ? 'placed by the log\'s timestamps' : 'placed by line number (the lines have ' +
      'no timestamps)') + '. ' + (first.rank === r.initiating_rank && r.initiating_rank !== null
      ? 'R' + label(first.rank).slice(1) + ' failed first' : 'The first failure is not known') +
      (silent ? '; ' + silent + ' silent rank(s) printed no matched line.' : '.');
    var svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', class: 'timeline-svg',
                          'aria-labelledby': 'timeline-caption', focusable: 'false' });
    var desc = el('desc', {}, svg);
    desc.textContent = 'The list after this picture says the same, rank by rank.';
    var axis = el('g', { class: 'tl-axis' }, svg);
    for (var i = 0; i <= 4; i++) {
      var x = at(t0 + (t1 - t0) * i / 4);
      if (t1 === t0 && i > 0) break;
      el('line', { x1: x, x2: x, y1: TOP - 6, y2: H - KEY, class: 'tl-grid' }, axis);
      var value = t0 + (t1 - t0) * i / 4;
      var tick = el('text', { x: x, y: TOP - 12, 'text-anchor': i === 0 ? 'start' : i === 4 ?
        'end' : 'middle', class: 'tl-tick-label' }, axis);
      if (!laid.timed) tick.textContent = 'line ' + Math.round(value);
      else if (i === 0) tick.textContent = clock(laid.points[0].ev.timestamp);
      else tick.textContent = '+' + span(value - t0);
    }
    legend(svg, LEFT, H - KEY / 2);
    shown.forEach(function (lane, n) {
      var y = TOP + n * LANE + LANE / 2;
      var g = el('g', { class: 'tl-lane' + (lane.silent ? ' tl-silent' : '') +
        (lane === first && lane.rank === r.initiating_rank ? ' tl-initiating' : ''),
        'data-rank': lane.rank === null ? '' : lane.rank, 'data-silent': lane.silent }, svg);
      el('rect', { x: 0, y: y - LANE / 2 + 1, width: W, height: LANE - 2, class: 'tl-band' }, g);
      var name = el('text', { x: 8, y: y + 4, class: 'tl-label' }, g);
      name.textContent = label(lane.rank);
      el('line', { x1: LEFT, x2: W - RIGHT, y1: y, y2: y, class: 'tl-track' }, g);
      if (!lane.points.length) {
        var note = el('text', { x: LEFT + 8, y: y + 4, class: 'tl-note' }, g);
        note.textContent = lane.silent ? 'silent: no matched line' : 'named by torchrun, no ' +
          'matched line';
        return;
      }
      lane.points.slice(1, MAX_TICKS + 1).forEach(function (p) {
        if (p.failure) return;
        var mark = el('line', { x1: at(p.x), x2: at(p.x), y1: y - 7, y2: y + 7,
          class: 'tl-mark' + (p.collateral ? ' tl-collateral' : '') }, g);
        el('title', {}, mark).textContent = describe(p, t0, laid.timed) + '\n' + p.ev.text;
      });
      lane.points.forEach(function (p, k) {
        if (k > 0 && !p.failure) return;
        var dot = el('circle', { cx: at(p.x), cy: y, r: p.failure ? 7 : 5, class: 'tl-point' +
          (k === 0 ? ' tl-first' : '') + (p.collateral ? ' tl-collateral' : '') +
          (p.failure ? ' tl-failure' : ''), 'data-where': p.ev.file + ':' + p.ev.line }, g);
        el('title', {}, dot).textContent = describe(p, t0, laid.timed) + '\n' + p.ev.text;
        var right = at(p.x) > LEFT + plot * 0.6;
        var tag = el('text', { x: at(p.x) + (right ? -12 : 12), y: y + 4, class: p.failure
          ? 'tl-failure-label' : 'tl-point-label', 'text-anchor': right ? 'end' : 'start' }, g);
        tag.textContent = p.failure ? 'first failure' : (p.collateral ? 'collateral: ' : '') +
          p.ev.fingerprint;
      });
    });
    chart.appendChild(svg);
    laid.lanes.forEach(function (lane) {
      var li = document.createElement('li');
      li.dataset.rank = lane.rank === null ? '' : String(lane.rank);
      if (!lane.points.length) {
        li.textContent = label(lane.rank) + ': ' + (lane.silent ? 'silent, no matched line in ' +
          'its log (hung, killed before printing, or fine).' : 'named by torchrun\'s Root Cause ' +
          'block, no matched line.');
      } else {
        var failure = lane.points.filter(function (p) { return p.failure; })[0];
        var collateral = lane.points.every(function (p) { return p.collateral; });
        li.textContent = label(lane.rank) + ': first matched line at ' +
          describe(lane.points[0], t0, laid.timed) + '; ' + lane.points.length + ' matched ' +
          'line(s)' + (collateral ? ', all collateral (consequences of a failure elsewhere)' : '') +
          (failure && failure !== lane.points[0] ? '; the first failure at ' +
            describe(failure, t0, laid.timed) : '') + '.';
      }
      listing.appendChild(li);
    });
    if (laid.lanes.length > shown.length) {
      var more = document.createElement('p');
      more.className = 'tl-more';
      more.textContent = (laid.lanes.length - shown.length) + ' more rank(s) are in the list only.';
      chart.appendChild(more);
    }
  }

  /* ---- Input: paste, choose, drop. ---- */

  function fromFiles(list) {
    return Array.prototype.map.call(list, function (f) {
      return { name: f.webkitRelativePath || f.name, path: f.webkitRelativePath || f.name, blob: f };
    });
  }

  function forgetPasted() {
    pasted = null;
    pastedNote.hidden = true;
  }

  /* A large paste or text drop: read as a file named "pasted text", never shown in the box. */
  function takeText(value) {
    pasted = new Blob([value], { type: 'text/plain' });
    text.value = '';
    $('pasted-text').textContent = 'pasted text, ' + megabytes(pasted.size) + ': too large to ' +
      'show here, read in pieces like a file.';
    pastedNote.hidden = false;
    start([{ name: 'pasted text', path: 'pasted text', blob: pasted }]);
  }

  /* Files, or text of over LARGE_PASTE characters, out of a paste or a drop: taken here (true)
     instead of by the browser. */
  function intercept(transfer) {
    if (!transfer) return false;
    if (transfer.files && transfer.files.length) {
      forgetPasted();
      start(fromFiles(transfer.files));
      return true;
    }
    var value = transfer.getData('text/plain') || transfer.getData('text') || '';
    if (value.length <= LARGE_PASTE) return false;
    takeText(value);
    return true;
  }

  /* The log a search box carried here, taken once (a reload does not run it again). */
  function carried() {
    try {
      var value = window.sessionStorage.getItem(CARRIED);
      window.sessionStorage.removeItem(CARRIED);
      return value;
    } catch {
      return null;  /* storage off: nothing was carried */
    }
  }

  function wire() {
    halt(false);
    pasted = null;
    text = $('log-text');
    if (!text) return;
    ready();
    input = $('log-files');
    zone = $('drop-zone');
    runButton = $('run');
    cancelButton = $('cancel');
    budget = $('budget');
    status = $('status');
    statusText = $('status-text');
    progress = $('progress');
    results = $('results');
    pastedNote = $('pasted');
    pastedNote.hidden = true;
    runButton.addEventListener('click', function () {
      if (text.value) {
        start([{ name: 'pasted log', path: 'pasted log', blob: new Blob([text.value]) }]);
      } else if (pasted) {
        start([{ name: 'pasted text', path: 'pasted text', blob: pasted }]);
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
    $('pasted-clear').addEventListener('click', function () {
      forgetPasted();
      text.focus();
    });
    text.addEventListener('paste', function (event) {
      if (intercept(event.clipboardData)) event.preventDefault();
    });
    text.addEventListener('input', function () { if (text.value) forgetPasted(); });
    input.addEventListener('change', function () {
      forgetPasted();
      if (input.files.length) start(fromFiles(input.files));
    });
    zone.addEventListener('dragover', function () { zone.classList.add('over'); });
    zone.addEventListener('dragleave', function () { zone.classList.remove('over'); });
    [zone, text].forEach(function (target) {
      target.addEventListener('drop', function (event) {
        zone.classList.remove('over');
        if (intercept(event.dataTransfer)) event.preventDefault();
      });
    });
    setState('idle', '');
    var log = carried();
    if (log && log.length > LARGE_PASTE) {
      takeText(log);
    } else if (log) {
      text.value = log;
      start([{ name: 'pasted log', path: 'pasted log', blob: new Blob([log]) }]);
    }
  }

  /* A file dropped anywhere else would make the browser open it in place of this page (text
     dropped on the box is left to the browser unless it is large). */
  function carriesFiles(event) {
    var types = event.dataTransfer ? event.dataTransfer.types : [];
    return Array.prototype.indexOf.call(types || [], 'Files') >= 0;
  }
  ['dragover', 'drop'].forEach(function (type) {
    document.addEventListener(type, function (event) {
      if ($('drop-zone') && (carriesFiles(event) || type === 'dragover')) event.preventDefault();
    });
  });
  document.addEventListener('nanopedia:page', wire);
  wire();
}());
