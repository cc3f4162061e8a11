// Line numbers of the engine (and of `nanopedia diagnose`) in the editor's terms. The engine
// ends a line at LF only: CRLF is one break and a lone CR (a progress bar redrawing itself) is a
// space, as in the CLI. VS Code ends a line at a lone CR too, so after a lone CR the editor's
// line is later than the engine's by the lone CRs before it.
'use strict';
const fs = require('node:fs');
const zlib = require('node:zlib');

const LF = 10;
const CR = 13;

/**
 * Map from engine line to editor line (both 1-based) for the lines `wanted`, reading the log's
 * bytes in `chunks` (an async iterable of Uint8Array) only as far as the last one wanted.
 */
async function editorLines(chunks, wanted) {
  const want = Array.from(new Set(wanted)).sort((a, b) => a - b);
  const out = new Map();
  let k = 0;
  let line = 1;
  let extra = 0;
  let pendingCr = false;
  const reach = () => {
    while (k < want.length && want[k] <= line) {
      if (want[k] === line) out.set(line, line + extra);
      k++;
    }
  };
  reach();
  for await (const chunk of chunks) {
    if (k >= want.length) break;
    if (pendingCr) {
      if (chunk[0] !== LF) extra++;
      pendingCr = false;
    }
    let pos = 0;
    while (pos < chunk.length && k < want.length) {
      const nl = chunk.indexOf(LF, pos);
      const cr = chunk.indexOf(CR, pos);
      if (cr >= 0 && (nl < 0 || cr < nl)) {
        if (cr + 1 === chunk.length) pendingCr = true;
        else if (chunk[cr + 1] !== LF) extra++;
        pos = cr + 1;
      } else if (nl >= 0) {
        line++;
        reach();
        pos = nl + 1;
      } else {
        break;
      }
    }
  }
  return out;
}

/** The engine's view of a text the editor holds: CRLF as LF, a lone CR as a space (what the
    engine does first to every log), so the two count lines alike. */
function engineText(text) {
  return text.replace(/\r\n/g, '\n').replace(/\r/g, ' ');
}

/** The bytes of a log on disk, in chunks, gunzipped when it starts with gzip's magic number (as
    the engine and the CLI read it). */
function readLog(file) {
  const head = Buffer.alloc(2);
  const fd = fs.openSync(file, 'r');
  const n = fs.readSync(fd, head, 0, 2, 0);
  fs.closeSync(fd);
  const stream = fs.createReadStream(file);
  return n === 2 && head[0] === 0x1f && head[1] === 0x8b ? stream.pipe(zlib.createGunzip()) : stream;
}

module.exports = { editorLines, engineText, readLog };
