// What the editor shows of an engine result (the CLI's --json object): the verdict first, the
// evidence by rank, and which log lines to mark. Pure functions of the result, so Node's test
// runner checks them and the corpus test compares them with `nanopedia diagnose`.
'use strict';

/** The verdict: the best entry, its confidence, the first failing rank and line, and the answer
    (likely cause with its domain and action, first fix), as `nanopedia diagnose` prints it. */
function verdict(result, data) {
  const best = result.matches[0];
  if (!best) return null;
  return {
    id: best.id,
    title: best.title,
    confidence: best.confidence,
    meaning: (data.confidence || {})[best.confidence] || '',
    score: best.score,
    rank: result.initiating_rank,
    first: result.initiating,
    reason: result.initiating_reason,
    cause: best.cause,
    domain: best.domain,
    action: best.action,
    fix: best.fix,
    silent: result.silent_ranks
  };
}

/** Every matched line once (a line several entries explain is one point), with the entries
    that explain it; collateral only when every entry calls it so. */
function points(result) {
  const failure = result.initiating ? key(result.initiating) : null;
  const seen = new Map();
  result.matches.forEach((match) => {
    match.evidence.forEach((ev) => {
      let point = seen.get(key(ev));
      if (!point) {
        point = { ev, entries: [], fingerprints: [], collateral: true, strength: 0,
                  first: key(ev) === failure };
        seen.set(key(ev), point);
      }
      point.collateral = point.collateral && ev.collateral;
      point.strength = Math.max(point.strength, STRENGTH[ev.indicates] || 0);
      if (!point.entries.includes(match.id)) point.entries.push(match.id);
      point.fingerprints.push(`${match.id}/${ev.fingerprint} (${ev.indicates}` +
        `${ev.collateral ? ', collateral' : ''})`);
    });
  });
  return Array.from(seen.values());
}

const STRENGTH = { benign: 1, context: 2, supporting: 3, decisive: 4 };

function key(ev) { return `${ev.file}\u0000${ev.line}`; }

/* Lines in time when every one has a timestamp, else in file and line order (the page's
   timeline does the same). */
function ordering(all) {
  const timed = all.length > 0 && all.every((p) => p.ev.timestamp);
  return (a, b) => {
    if (timed && a.ev.timestamp !== b.ev.timestamp) return a.ev.timestamp < b.ev.timestamp ? -1 : 1;
    return a.fileOrder - b.fileOrder || a.ev.line - b.ev.line;
  };
}

/** The evidence by rank, as the page's timeline lanes: the first failing rank first, then the
    others by their first line (in time when every line has a timestamp), lines in order. */
function byRank(result) {
  const files = new Map(result.files.map((f, i) => [f.file, i]));
  const all = points(result);
  all.forEach((p) => { p.fileOrder = files.get(p.ev.file) || 0; });
  const order = ordering(all);
  all.sort(order);
  const lanes = new Map();
  all.forEach((p) => {
    if (!lanes.has(p.ev.rank)) lanes.set(p.ev.rank, []);
    lanes.get(p.ev.rank).push(p);
  });
  const out = Array.from(lanes, ([rank, lines]) => ({ rank, lines }));
  out.sort((a, b) => {
    const first = (lane) => (lane.rank === result.initiating_rank ? 0 : 1);
    return first(a) - first(b) || order(a.lines[0], b.lines[0]);
  });
  return out;
}

/** The marks of one log file (its name as the result gives it): one per line, the strongest
    kind of what matched there: `first` (the first failure), `decisive`, `supporting`,
    `collateral` (a consequence of a failure elsewhere), `context` or `benign`. Lines are
    1-based, as in the result. */
function marks(result, file) {
  return points(result).filter((p) => p.ev.file === file).map((p) => {
    let kind;
    if (p.first) kind = 'first';
    else if (p.collateral) kind = 'collateral';
    else kind = Object.keys(STRENGTH).find((k) => STRENGTH[k] === p.strength);
    const rank = p.ev.rank === null ? 'rank unknown' : `rank ${p.ev.rank}`;
    const what = kind === 'first' ? `first failure (${rank})` : `${kind} (${rank})`;
    return { line: p.ev.line, kind, rank: p.ev.rank, entries: p.entries,
             message: `Nanopedia: ${what}: ${p.fingerprints.join('; ')}` };
  }).sort((a, b) => a.line - b.line);
}

/** The verify command the entry's page states (`nanopedia verify ID` where it has a repro),
    read from the site's own rendering of the entry; null without a repro. */
function verifyCommand(page) {
  const found = /<p class="reproduced">[^]*?<code>(nanopedia verify [^<]+)<\/code>/.exec(page || '');
  return found ? found[1] : null;
}

module.exports = { verdict, byRank, marks, verifyCommand };
