// The answer view's HTML: the verdict first, then the evidence by rank (each line a link to the
// log), the other candidates, and the entry as the site renders it. Every piece of log or result
// text is escaped here; the only markup taken as is is the site's own rendering of an entry. The
// view loads nothing but the extension's own files, under a CSP that allows only them and one
// script with a nonce.
'use strict';
const { byRank } = require('./verdict');

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function esc(text) {
  return String(text === null || text === undefined ? '' : text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Text with the entries' `code` spans as <code>, as the page's titles show them. */
function spans(text) {
  return String(text || '').split('`').map((part, i) => (i % 2 ? `<code>${esc(part)}</code>` : esc(part))).join('');
}

function where(ev) {
  return `<a class="line" href="#" data-file="${esc(ev.file)}" data-line="${ev.line}">` +
    `${esc(ev.file)}:${ev.line}</a>`;
}

function rankName(rank) { return rank === null || rank === undefined ? 'rank unknown' : `rank ${rank}`; }

/* How the host was found (lib/hosts.js, as `nanopedia triage` finds it). */
const HOST_RULES = {
  line: 'the first failing line names it',
  summary: "torchrun's error summary gives it for this rank",
  'file-rank': "the log's NCCL lines give it for this rank",
  'job-rank': "the job's logs give it for this rank",
  file: 'the only host the log names'
};

function verdictHtml(v, verify, siteUrl) {
  if (!v) {
    return '<section id="verdict" class="none"><h1>No entry matched</h1><p>No fingerprint of ' +
      'the encyclopedia matched these lines. Check that the log holds the error itself (the ' +
      'traceback and the lines before it).</p></section>';
  }
  const first = v.first
    ? `<p class="first" data-rank="${esc(v.rank)}">First failure: <strong>${esc(rankName(v.rank))}</strong>` +
      `${v.host ? ` on <strong class="host" title="${esc(HOST_RULES[v.hostRule])}">${esc(v.host)}</strong>` : ''} ` +
      `at ${where(v.first)} <span class="reason">(${esc(v.reason)})</span></p>` +
      `<pre class="first-line">${esc(v.first.text)}</pre>`
    : '<p class="first">First failure: unknown (no line names a rank)</p>';
  const silent = v.silent.length
    ? `<p class="silent">Ranks with no line in these logs: ${esc(v.silent.join(', '))}</p>` : '';
  const open = siteUrl
    ? ` <a class="button" href="#" data-site="entries/${esc(v.id)}.html">Open in browser</a>` : '';
  return `<section id="verdict" data-id="${esc(v.id)}" data-confidence="${esc(v.confidence)}">` +
    `<p class="kicker">Verdict <span class="confidence ${esc(v.confidence)}" title="${esc(v.meaning)}">` +
    `${esc(v.confidence)}</span> <span class="id">${esc(v.id)}</span>${open}</p>` +
    `<h1>${spans(v.title)}</h1>${first}${silent}<dl class="answer">` +
    `<dt>Likely cause</dt><dd class="cause">${v.cause ? spans(v.cause) : 'not recorded for this entry'}</dd>` +
    `<dt>What to do</dt><dd class="action">${v.action ? `${esc(v.action)} (failure domain: ${esc(v.domain)})` : 'see the entry'}</dd>` +
    `<dt>First fix</dt><dd class="fix">${v.fix ? spans(v.fix) : 'see the entry'}</dd>` +
    (verify ? `<dt>Verify the fix</dt><dd class="verify"><code>${esc(verify)}</code></dd>` : '') +
    '</dl></section>';
}

function lanesHtml(result) {
  const lanes = byRank(result);
  if (!lanes.length) return '';
  const items = lanes.map((lane) => {
    const lines = lane.lines.map((p) => `<li class="${p.first ? 'first' : p.collateral ? 'collateral' : 'own'}">` +
      `${where(p.ev)}${p.ev.timestamp ? ` <span class="time">${esc(clock(p.ev.timestamp))}</span>` : ''}` +
      ` <span class="what">${esc(p.fingerprints.join('; '))}</span>` +
      `${p.first ? ' <strong class="tag">first failure</strong>' : ''}` +
      `${p.collateral ? ' <span class="tag">collateral</span>' : ''}` +
      `<pre>${esc(p.ev.text)}</pre></li>`).join('');
    const initiating = lane.rank === result.initiating_rank;
    return `<li class="lane${initiating ? ' initiating' : ''}" data-rank="${esc(lane.rank)}">` +
      `<h3>${esc(rankName(lane.rank))}${initiating ? ' (first failure)' : ''}</h3><ol>${lines}</ol></li>`;
  }).join('');
  return `<section id="evidence"><h2>Evidence by rank</h2><ol class="lanes">${items}</ol></section>`;
}

/* "MMDDHHMMSS.fffffffff" (the engine's sortable timestamps) as a clock time. */
function clock(stamp) {
  return `${stamp.slice(4, 6)}:${stamp.slice(6, 8)}:${stamp.slice(8, 10)}.${stamp.slice(11, 14)}`;
}

function candidatesHtml(result, shown) {
  if (result.matches.length < 2) return '';
  const items = result.matches.map((m) => `<li data-id="${esc(m.id)}"${m.id === shown ? ' aria-current="true"' : ''}>` +
    `<a href="#" data-entry="${esc(m.id)}">${spans(m.title)}</a> <span class="confidence ${esc(m.confidence)}">` +
    `${esc(m.confidence)}</span> <span class="score">score ${esc(m.score)}</span></li>`).join('');
  return `<section id="candidates"><h2>Candidates</h2><ol>${items}</ol></section>`;
}

function entryHtml(entry) {
  if (entry.article) return `<section id="entry" data-id="${esc(entry.id)}">${entry.article}</section>`;
  const source = entry.source
    ? ` Its source: <a href="#" data-source="${esc(entry.source)}">${esc(entry.source)}</a>.` : '';
  return `<section id="entry" data-id="${esc(entry.id)}"><p class="note">The entry ${esc(entry.id)} ` +
    `comes from your entries folder, whose pages are not built into the extension.${source}</p></section>`;
}

function summaryHtml(result) {
  const lines = result.files.reduce((n, f) => n + f.lines, 0);
  const bytes = result.files.reduce((n, f) => n + f.bytes, 0);
  const slow = result.slow.map((s) => `<li>Fingerprint ${esc(s.entry)}/${esc(s.id)} was left out: it ` +
    `took over ${Math.round(s.seconds)} s on ${esc(s.file)} in JavaScript's regular-expression ` +
    'engine (nanopedia diagnose, RE2, still uses it).</li>').join('') +
    result.skipped.map((s) => `<li>Fingerprint left out (JavaScript cannot compile it): ${esc(s)}</li>`).join('') +
    (result.changed || []).map((c) => `<li>${esc(c.file)} changed while it was read (a log still being ` +
      `written?): only its first ${c.lines.toLocaleString('en')} lines were diagnosed.</li>`).join('');
  return `<p id="summary">Read ${result.files.length} log(s), ${lines.toLocaleString('en')} lines, ` +
    `${(bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 0)} MB in ${result.seconds.toFixed(2)} s; ` +
    `${result.matches.length} entr${result.matches.length === 1 ? 'y' : 'ies'} matched.</p>` +
    (slow ? `<ul class="slow">${slow}</ul>` : '');
}

/**
 * The whole document. `answer`: {result, verdict, verify, entry: {id, article?, source?}};
 * `page`: {cspSource, nonce, styles: [uri], script: uri, siteUrl}.
 */
function answerHtml(answer, page) {
  const csp = `default-src 'none'; style-src ${page.cspSource}; img-src ${page.cspSource}; ` +
    `font-src ${page.cspSource}; script-src 'nonce-${page.nonce}'`;
  const styles = page.styles.map((href) => `<link rel="stylesheet" href="${esc(href)}">`).join('');
  const title = answer.verdict ? answer.verdict.id : 'no match';
  return '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    `<meta http-equiv="Content-Security-Policy" content="${csp}">` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `${styles}<title>Nanopedia: ${esc(title)}</title></head><body><main class="wrap">` +
    verdictHtml(answer.verdict, answer.verify, page.siteUrl) + summaryHtml(answer.result) +
    lanesHtml(answer.result) + candidatesHtml(answer.result, answer.entry && answer.entry.id) +
    (answer.entry ? entryHtml(answer.entry) : '') +
    `</main><script nonce="${page.nonce}" src="${esc(page.script)}"></script></body></html>`;
}

module.exports = { answerHtml, esc };
