// The host of the first failure, as `nanopedia triage` finds it (nanopedia.diagnosis.hosts, which
// the diagnosis engine and `nanopedia diagnose` do not run): a host the first failing line names
// itself, else the host torchrun's error summary gives for that rank, else the one the head of
// the same file names for that rank (NCCL's init lines), else the one the heads of the job's
// files name for it, else the only host the file's head names. A port of hosts.py's rules; the
// corpus test (tests/js/vscode_hosts.test.js) holds it to `nanopedia triage` on every labelled
// log. Python's patterns are ASCII (re.ASCII): JavaScript's \w, \d and \b are too; \s is spelled
// out as Python's ASCII class.
'use strict';

const S = '[ \\t\\n\\r\\f\\v]';
const H = '[A-Za-z][\\w.-]*';
/** hosts.py's rules on one line, strongest first. */
const LINE_HOSTS = [
  `\\bsrun: error: (${H}): task \\d+`,
  `\\bslurmstepd-(${H}):`,
  `\\*\\*\\* (?:JOB|STEP) [\\d.]+ ON (${H}) CANCELLED`,
  `\\bsrun: error: Node failure on (${H})`,
  `^${S}*(?:[A-Z][a-z]{2} +\\d{1,2} \\d\\d:\\d\\d:\\d\\d|\\d{4}-\\d\\d-\\d\\dT[\\d:.,+-]+Z?) (${H}) ` +
    '[\\w./-]+(?:\\[\\d+\\])?: ',
  `(?<![\\w.-])(${H}):\\d+:\\d+ \\[\\d+\\]`,
  `\\[(${H}):\\d+\\]`,
  `^${S}*(${H}\\d[\\w.-]*): `
].map((p) => new RegExp(p));
const HEAD_NCCL = new RegExp(`^${S}*(?:\\[[A-Za-z_]*?(\\d{1,6})\\]:|\\[\\d+,(\\d{1,6})\\]<\\w+>:)?${S}*(${H}):\\d+:\\d+ \\[\\d+\\]`);
const HEAD_PDSH = new RegExp(`^(${H}\\d[\\w.-]*): (?:\\[[A-Za-z_]*?(\\d{1,6})\\]:|\\[)`);
const SUMMARY = new RegExp(`\\bhost${S}*: (${H})[ \\t]*\\r?\\n[^\\n]{0,80}?\\n?${S}*rank${S}*: (\\d{1,6}) \\(local_rank`, 'g');
const SOURCE_FILE = /\.(?:py|pyx|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go|java|js|ts|so)$/i;

/** hosts.py's and jobs.py's limits. */
const LIMITS = { head_bytes: 256 << 10, head_nccl_lines: 64, head_pdsh_lines: 32,
                 summary_carry: 512, summary_ranks: 4096 };

const utf8 = new TextDecoder('utf-8');
const latin1 = new TextDecoder('latin1');

/** A host name, or null for a source file's name or a log level (`INFO`, `ERROR`). */
function host(name) {
  if (name === null || name === undefined || SOURCE_FILE.test(name) || /^[A-Z]+$/.test(name)) return null;
  return name;
}

/** The host a line names itself. */
function lineHost(text) {
  for (const rule of LINE_HOSTS) {
    const found = rule.exec(text);
    if (found && host(found[1])) return found[1];
  }
  return null;
}

/** {byRank: Map rank -> host, hosts: Set} of the NCCL and pdsh prefixes in a file's head
    (its first head_bytes, a Uint8Array); a line's rank is its prefix's, else the file's. */
function headHosts(head, fileRank) {
  const found = [];
  let pos = 0;
  for (let i = 0; i < LIMITS.head_nccl_lines; i++) {
    const hit = indexOf(head, ' NCCL ', pos);
    if (hit < 0) break;
    const start = hit === 0 ? 0 : lastIndexOf(head, 10, hit - 1) + 1;
    const end = head.indexOf(10, hit);
    pos = end >= 0 ? end + 1 : head.length;
    const m = HEAD_NCCL.exec(utf8.decode(head.subarray(start, hit)));
    if (m) found.push([start, m[3], m[1] || m[2] || null]);
  }
  let start = 0;
  for (let i = 0; i < LIMITS.head_pdsh_lines; i++) {
    const end = head.indexOf(10, start);
    const m = HEAD_PDSH.exec(utf8.decode(head.subarray(start, end >= 0 ? end : head.length)));
    if (m) found.push([start, m[1], m[2] || null]);
    if (end < 0) break;
    start = end + 1;
  }
  found.sort((a, b) => a[0] - b[0] || cmp(a[1], b[1]) || cmp(a[2] || '', b[2] || ''));
  const out = { byRank: new Map(), hosts: new Set() };
  for (const [, name, prefix] of found) {
    const h = host(name);
    if (h === null) continue;
    out.hosts.add(h);
    const rank = prefix ? parseInt(prefix, 10) : fileRank;
    if (rank !== null && rank !== undefined && !out.byRank.has(rank)) out.byRank.set(rank, h);
  }
  return out;
}

function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

function indexOf(bytes, text, from) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).indexOf(text, from, 'latin1');
}

function lastIndexOf(bytes, byte, from) {
  for (let i = from; i >= 0; i--) if (bytes[i] === byte) return i;
  return -1;
}

/** The host of each rank that torchrun's error summaries name, fed a log's bytes in order. */
class SummaryHosts {
  constructor() {
    this.byRank = new Map();
    this.carry = '';
  }

  feed(bytes) {
    const data = latin1.decode(bytes);
    if (!data.includes('host') && !this.carry.includes('host')) {
      this.carry = '';
      return;
    }
    const block = this.carry + data;
    for (const m of block.matchAll(SUMMARY)) {
      const h = host(m[1]);
      const rank = parseInt(m[2], 10);
      if (h && this.byRank.size < LIMITS.summary_ranks && !this.byRank.has(rank)) this.byRank.set(rank, h);
    }
    this.carry = block.slice(-LIMITS.summary_carry);
  }
}

/** [host, rule] of the first failure (rules: line, summary, file-rank, job-rank, file), or
    [null, null]. `heads`: Map file name -> headHosts; `summary`: Map rank -> host. */
function firstHost(initiating, rank, heads, summary) {
  const own = initiating ? lineHost(initiating.text) : null;
  if (own) return [own, 'line'];
  if (rank !== null && summary && summary.has(rank)) return [summary.get(rank), 'summary'];
  const file = initiating ? heads.get(initiating.file) : null;
  if (rank !== null) {
    if (file && file.byRank.has(rank)) return [file.byRank.get(rank), 'file-rank'];
    const named = new Set();
    heads.forEach((h) => { if (h.byRank.has(rank)) named.add(h.byRank.get(rank)); });
    if (named.size === 1) return [Array.from(named)[0], 'job-rank'];
  }
  if (file && file.hosts.size === 1) return [Array.from(file.hosts)[0], 'file'];
  return [null, null];
}

/** lines.file_rank: a rank from a per-rank file's name (`rank3.log`, torchrun's `.../3/stderr.log`),
    with the pattern the exported data carries. */
function fileRank(data, path) {
  const parts = path.split(/[/\\]/).filter((p) => p !== '' && p !== '.');
  const name = parts.length ? parts[parts.length - 1] : '';
  const found = new RegExp(data.file_rank).exec(name);
  if (found) return parseInt(found[1], 10);
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 && dot < name.length - 1 ? name.slice(0, dot) : name;
  const parent = parts.length > 1 ? parts[parts.length - 2] : '';
  return (stem === 'stdout' || stem === 'stderr') && /^\d{1,6}$/.test(parent) ? parseInt(parent, 10) : null;
}

/**
 * The first failure's [host, rule] for an engine result, reading each log once more: `logs` are
 * [{name, chunks: () => async iterable of Uint8Array}] in the result's order.
 */
async function jobHost(result, logs, data) {
  const heads = new Map();
  const summary = new SummaryHosts();
  for (const log of logs) {
    const parts = [];
    let have = 0;
    for await (const chunk of log.chunks()) {
      if (have < LIMITS.head_bytes) {
        parts.push(chunk.subarray(0, LIMITS.head_bytes - have));
        have += parts[parts.length - 1].length;
      }
      summary.feed(chunk);
    }
    heads.set(log.name, headHosts(Buffer.concat(parts), fileRank(data, log.name)));
  }
  return firstHost(result.initiating, result.initiating_rank, heads, summary.byRank);
}

module.exports = { lineHost, headHosts, SummaryHosts, firstHost, fileRank, jobHost, LIMITS };
