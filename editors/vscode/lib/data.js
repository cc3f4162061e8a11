// The encyclopedia's exported data, as the site ships it (static/diagnose-data.js, written by
// `nanopedia build` and by `nanopedia export`): the JSON of contract.export_data behind
// `self.NanopediaDiagnoseData=`. It is parsed, never run, so a data file named in the settings
// cannot run code in the editor; the engine receives exactly the object the page's worker does.
'use strict';

const MARK = 'self.NanopediaDiagnoseData=';

/** The data object of a diagnose-data.js text; `where` names the file in errors. */
function parseData(text, where) {
  const at = text.indexOf(MARK);
  const end = text.lastIndexOf(';');
  if (at < 0 || end < at) {
    throw new Error(`${where}: not a Nanopedia data file (no "${MARK}"); write it with ` +
      '`nanopedia export --entries DIR`');
  }
  let data;
  try {
    data = JSON.parse(text.slice(at + MARK.length, end));
  } catch (err) {
    throw new Error(`${where}: the data is not valid JSON (${err.message}); export it again`, { cause: err });
  }
  if (!data || typeof data !== 'object' || !Array.isArray(data.fingerprints)) {
    throw new Error(`${where}: the data has no fingerprints list; export it again`);
  }
  return data;
}

/** The entry ids of some data, in order, each once. */
function entryIds(data) {
  return Array.from(new Set(data.fingerprints.map((row) => row.entry)));
}

/**
 * The shipped data with a team's entries added, as `contract.export_data` would give for both
 * folders together: rows grouped by entry id in id order, each entry's rows in its own order.
 * An entry of `extra` replaces a shipped entry of the same id. The matcher's rules (every other
 * key) must be the shipped ones: data exported by another version of nanopedia is refused.
 */
function mergeData(shipped, extra, where) {
  const keys = new Set([...Object.keys(shipped), ...Object.keys(extra)]);
  keys.delete('fingerprints');
  for (const key of Array.from(keys).sort()) {
    if (JSON.stringify(shipped[key]) !== JSON.stringify(extra[key])) {
      throw new Error(`${where}: exported by another version of nanopedia (its "${key}" ` +
        'differs from the extension\'s); export it again with the version of this extension');
    }
  }
  const theirs = new Set(entryIds(extra));
  const rows = shipped.fingerprints.filter((row) => !theirs.has(row.entry))
    .concat(extra.fingerprints);
  const order = (row) => row.entry;
  const sorted = rows.map((row, i) => [row, i]).sort((a, b) => {
    const x = order(a[0]);
    const y = order(b[0]);
    return x < y ? -1 : x > y ? 1 : a[1] - b[1];
  }).map((pair) => pair[0]);
  return { ...shipped, fingerprints: sorted };
}

module.exports = { parseData, mergeData, entryIds };
