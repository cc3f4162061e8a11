/*
 * Nanopedia log diagnosis in a Web Worker: a mirror of the Python diagnosis (nanopedia.diagnosis:
 * logs, lines, scan, rank, contract and report.likely). theme/diagnose-worker.port.yaml maps each
 * function here to the Python function it mirrors, and tests/unit/test_port.py fails when one side
 * changes alone.
 *
 * This file only defines `NanopediaDiagnoseWorker`. diagnose.js starts a worker from that
 * function's source through a blob: URL (browsers refuse workers from file: URLs, and the page
 * fetches nothing), then posts it the data of static/diagnose-data.js and the logs as Blobs.
 *
 * Everything the CLI decides is decided here the same way, from the same constants
 * (`nanopedia.diagnosis.contract.export_data`: no constant of the rules is copied here): logs are read in buffers of `buffer_bytes` cut at the last newline,
 * with the rest carried over; CRLF becomes LF and a lone CR a space; each fingerprint is checked
 * against each line on its own (a pattern is first run over the whole buffer to find candidate
 * lines fast, then every candidate line is confirmed alone, because JavaScript's `\s` and `[^x]`
 * can cross a newline where RE2's `never_nl` cannot); at most `evidence_cap` lines per fingerprint
 * and file (a decisive one's later lines, `late_lines` in all, only for the first failure); ranks from the line's prefix, its message or the file name; timestamps from the line
 * or the nearest earlier one within `timestamp_window` bytes of the same buffer; the same scores,
 * shared-line and collateral rules, ordering and initiating rank.
 *
 * Messages in: {data, files: [{name, path, blob}], budgetMs}. Out: {type: 'progress', done,
 * total, file}, then {type: 'done', result} (the CLI's --json object plus timing) or
 * {type: 'error', message}.
 */
self.NanopediaDiagnoseWorker = function (scope) {
  'use strict';

  /* RE2's \s is [\t\n\f\r ]; JavaScript's adds \v and Unicode spaces, and its `.` stops at
     U+2028/U+2029 where RE2's does not. Rewriting those three keeps the meaning identical. */
  var SPACE = '\\t\\n\\f\\r ';
  var NOT_SPACE = '\\x00-\\x08\\x0b\\x0e-\\x1f\\x21-\\uffff';
  /* Python's str.strip() whitespace (it differs from String.prototype.trim). */
  var PY_SPACE = '[\\t\\n\\x0b\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029' +
    '\\u202f\\u205f\\u3000]+';
  var STRIP = new RegExp('^' + PY_SPACE + '|' + PY_SPACE + '$', 'g');
  var NEWLINE = 10;
  /* logs.WRAP_SAMPLE and WRAP_MIN, set from the data when the matcher is compiled. */
  var wrapSample = null;
  var wrapMin = null;
  var CR = 13;
  var ESC = 27;

  /* A portable-subset pattern as a JavaScript source with RE2's meaning. */
  function portable(pattern) {
    var out = '';
    var inClass = false;
    var i = 0;
    while (i < pattern.length) {
      var ch = pattern[i];
      if (ch === '\\') {
        var next = pattern[i + 1];
        if (next === 's') {
          out += inClass ? SPACE : '[' + SPACE + ']';
        } else if (next === 'S') {
          out += inClass ? NOT_SPACE : '[^' + SPACE + ']';
        } else if (next === 'x') {
          out += pattern.slice(i, i + 4);
          i += 2;
        } else {
          out += pattern.slice(i, i + 2);
        }
        i += 2;
        continue;
      }
      if (inClass) {
        if (ch === ']') inClass = false;
        out += ch;
      } else if (ch === '[') {
        inClass = true;
        out += '[';
        if (pattern[i + 1] === '^') { out += '^'; i += 1; }
        /* RE2 reads a leading ']' as a literal; JavaScript as the end of an empty class. */
        if (pattern[i + 1] === ']') { out += '\\]'; i += 1; }
      } else {
        out += ch === '.' ? '[^\\n]' : ch;
      }
      i += 1;
    }
    return out;
  }

  /* Shortest literal worth a prefilter: shorter ones occur everywhere. */
  var MIN_LITERAL = 3;
  /* Literals are cut to this length (a prefix of a required text is required too): a smaller
     automaton stays in the CPU cache. */
  var MAX_LITERAL = 12;

  /* Index of the ']' that closes the class opening at `i`. */
  function classEnd(p, i) {
    var j = i + 1;
    if (p[j] === '^') j += 1;
    if (p[j] === ']') j += 1;
    while (j < p.length && p[j] !== ']') j += p[j] === '\\' ? 2 : 1;
    return j;
  }

  /* `(?:a|b)` around a whole pattern is `a|b`. */
  function unwrap(p) {
    while (p.slice(0, 3) === '(?:') {
      var depth = 0;
      var close = -1;
      for (var j = 0; j < p.length && close < 0; j++) {
        if (p[j] === '\\') j += 1;
        else if (p[j] === '[') j = classEnd(p, j);
        else if (p[j] === '(') depth += 1;
        else if (p[j] === ')' && --depth === 0) close = j;
      }
      if (close !== p.length - 1) break;
      p = p.slice(3, -1);
    }
    return p;
  }

  /* For each top-level alternative of `pattern`, the ASCII literals (lower-cased, at least
     MIN_LITERAL long) every match of it contains; null when some alternative has none.
     Conservative: anything but a plain character ends a literal, a character made optional by a
     quantifier is dropped, groups are skipped. A line can only match when, for some alternative,
     all its literals occur in it. */
  function literals(pattern) {
    var p = unwrap(pattern);
    var branches = [];
    var runs = [];
    var run = '';
    var depth = 0;
    function end() {
      if (run.length >= MIN_LITERAL) runs.push(run.slice(0, MAX_LITERAL).toLowerCase());
      run = '';
    }
    for (var i = 0; i < p.length; i++) {
      var ch = p[i];
      if (ch === '\\') {
        var next = p[i + 1] || '';
        i += next === 'x' ? 3 : 1;  /* \xHH is one character: not a literal we keep */
        if (depth === 0 && /[\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]/.test(next)) run += next;
        else end();
      } else if (ch === '[') {
        end();
        i = classEnd(p, i);
      } else if (ch === '(') {
        end();
        depth += 1;
      } else if (ch === ')') {
        end();
        depth -= 1;
      } else if (depth > 0) {
        continue;
      } else if (ch === '|') {
        end();
        if (!runs.length) return null;
        branches.push(runs);
        runs = [];
      } else if (ch === '?' || ch === '*' || ch === '{') {
        run = run.slice(0, -1);
        end();
        /* a count's digits are not text the line must contain */
        if (ch === '{' && p.indexOf('}', i) > i) i = p.indexOf('}', i);
      } else if (ch < ' ' || ch > '~' || '+.^$}'.indexOf(ch) >= 0) {
        end();
      } else {
        run += ch;
      }
    }
    end();
    if (!runs.length) return null;
    branches.push(runs);
    return branches;
  }

  /* One pass over a buffer's bytes (ASCII case folded) that finds every literal at once
     (Aho-Corasick as a dense table over the byte classes the literals use) and counts lines. */
  function automaton(words) {
    var cls = new Uint8Array(256);  /* byte -> class; 0 for bytes in no literal */
    var width = 1;
    words.forEach(function (word) {
      for (var i = 0; i < word.length; i++) {
        var c = word.charCodeAt(i);
        if (!cls[c]) {
          cls[c] = width++;
          if (c >= 97 && c <= 122) cls[c - 32] = cls[c];
        }
      }
    });
    var children = [new Map()];
    var outs = [[]];
    words.forEach(function (word, id) {
      var s = 0;
      for (var i = 0; i < word.length; i++) {
        var k = cls[word.charCodeAt(i)];
        if (!children[s].has(k)) {
          children.push(new Map());
          outs.push([]);
          children[s].set(k, children.length - 1);
        }
        s = children[s].get(k);
      }
      outs[s].push(id);
    });
    var delta = new Int32Array(children.length * width);
    var fail = new Int32Array(children.length);
    var queue = [];
    children[0].forEach(function (t, k) { delta[k] = t; queue.push(t); });
    for (var q = 0; q < queue.length; q++) {
      var s = queue[q];
      outs[s] = outs[s].concat(outs[fail[s]]);
      delta.copyWithin(s * width, fail[s] * width, fail[s] * width + width);
      children[s].forEach(function (t, k) {
        fail[t] = delta[fail[s] * width + k];
        delta[s * width + k] = t;
        queue.push(t);
      });
    }
    var any = new Uint8Array(children.length);
    outs.forEach(function (o, i) { any[i] = o.length ? 1 : 0; });
    return { cls: cls, width: width, delta: delta, outs: outs, any: any, size: words.length };
  }

  /* Which literals occur in `bytes`, and how many newlines it has. */
  function sweep(ac, bytes) {
    var seen = new Uint8Array(ac.size);
    var delta = ac.delta;
    var cls = ac.cls;
    var any = ac.any;
    var width = ac.width;
    var s = 0;
    var lines = 0;
    for (var i = 0; i < bytes.length; i++) {
      var b = bytes[i];
      if (b === 10) lines += 1;
      s = delta[s * width + cls[b]];
      if (any[s] === 1) {
        var o = ac.outs[s];
        for (var k = 0; k < o.length; k++) seen[o[k]] = 1;
      }
    }
    return { seen: seen, lines: lines };
  }

  /* A fingerprint's two RegExps: `find` runs over a whole buffer, `test` confirms one line.
     `program` is the pattern with ASCII case already folded when it ignores case
     (fingerprints.program in the CLI): no `i` flag, which folds differently from RE2 (RE2 matches
     `k` with the Kelvin sign U+212A, `i` does not), so both engines match alike. */
  function regexps(program, probe) {
    var js = portable(program);
    probe.find = new RegExp(js, 'gm');
    probe.test = new RegExp(js, '');
    return probe;
  }

  /* One probe per fingerprint, then torchrun's Root Cause heading, its `rank :` line and the
     agent's `global_ranks=[...]` line. */
  function compile(data, slow) {
    wrapSample = data.wrap_sample;
    wrapMin = data.wrap_min;
    var probes = [];
    var skipped = [];
    var left = new Set((slow || []).map(function (s) { return s.entry + '/' + s.id; }));
    function add(program, source, extra) {
      regexps(program, extra);
      extra.literals = literals(source);
      probes.push(extra);
    }
    data.fingerprints.forEach(function (fp) {
      if (left.has(fp.entry + '/' + fp.id)) return;
      try {
        add(fp.program, fp.pattern, {
          entry: fp.entry, title: fp.title, id: fp.id, indicates: fp.indicates,
          collateral: fp.collateral, specificity: fp.specificity,
          decisive: fp.indicates === 'decisive' && !fp.collateral
        });
      } catch (err) {
        skipped.push(fp.entry + '/' + fp.id + ': ' + err.message);
      }
    });
    var rootIndex = probes.length;
    add(data.root_cause, data.root_cause, { structural: true });
    add(data.root_rank, data.root_rank, { structural: true, uncapped: true });
    add(data.launcher_ranks, data.launcher_ranks, { structural: true });
    var words = [];
    var ids = new Map();
    probes.forEach(function (probe) {
      if (!probe.literals) return;
      probe.branches = probe.literals.map(function (runs) {
        return runs.map(function (run) {
          if (!ids.has(run)) { ids.set(run, words.length); words.push(run); }
          return ids.get(run);
        });
      });
    });
    return {
      data: data,
      probes: probes,
      rootIndex: rootIndex,
      skipped: skipped,
      slow: (slow || []).slice(),
      spent: new Float64Array(probes.length),
      enter: function () {},
      automaton: automaton(words),
      prefixRank: new RegExp(data.prefix_rank),
      joinedRank: new RegExp(data.joined_rank, 'g'),
      messageRank: new RegExp(data.message_rank),
      fileRank: new RegExp(data.file_rank, 'i'),
      times: [new RegExp(data.iso_time, 'g'), new RegExp(data.glog_time, 'g')],
      enqueued: new RegExp(data.enqueued)
    };
  }

  /* ---- Reading: exact-size reads from a Blob, or from its gzip stream. ---- */

  function concat(a, b) {
    var out = new Uint8Array(a.length + b.length);
    out.set(a, 0);
    out.set(b, a.length);
    return out;
  }

  function blobReader(blob) {
    var pos = 0;
    return {
      read: function (size) {
        return blob.slice(pos, pos + size).arrayBuffer().then(function (buf) {
          pos += buf.byteLength;
          return new Uint8Array(buf);
        });
      },
      position: function () { return pos; }
    };
  }

  function gzipReader(blob) {
    var consumed = 0;
    var counted = blob.stream().pipeThrough(new TransformStream({
      transform: function (chunk, controller) {
        consumed += chunk.length;
        controller.enqueue(chunk);
      }
    }));
    var reader = counted.pipeThrough(new DecompressionStream('gzip')).getReader();
    var pending = [];
    var have = 0;
    var ended = false;
    function fill(size) {
      if (have >= size || ended) return Promise.resolve();
      return reader.read().then(function (step) {
        if (step.done) ended = true;
        else { pending.push(step.value); have += step.value.length; }
        return fill(size);
      });
    }
    return {
      read: function (size) {
        return fill(size).then(function () {
          var n = Math.min(size, have);
          var out = new Uint8Array(n);
          var o = 0;
          while (o < n) {
            var head = pending[0];
            var take = Math.min(head.length, n - o);
            out.set(head.subarray(0, take), o);
            o += take;
            if (take === head.length) pending.shift();
            else pending[0] = head.subarray(take);
          }
          have -= n;
          return out;
        });
      },
      position: function () { return consumed; }
    };
  }

  /* Bytes already read from a log, then the rest of it (logs.Prefixed): the first read returns
     them alone, as Python's does, so the buffers are cut where the CLI cuts them. */
  function prefixed(head, log) {
    return {
      read: function (size) {
        if (!head.length) return log.read(size);
        var out = head.subarray(0, size);
        head = head.subarray(out.length);
        return Promise.resolve(out);
      },
      position: function () { return log.position(); }
    };
  }

  /* The encoding of a UTF-16 log (what PowerShell's `>` writes), from its first bytes: a byte
     order mark, or ASCII text with a NUL after (LE) or before (BE) each character. */
  function utf16(head) {
    if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
    if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
    if (head.length === 4 && !head[1] && !head[3] && head[0] && head[2]) return 'utf-16le';
    if (head.length === 4 && !head[0] && !head[2] && head[1] && head[3]) return 'utf-16be';
    return null;
  }

  /* A UTF-16 log read as UTF-8 (logs.Transcoded), so the patterns see its text: each read
     returns `size` bytes until the end; the decoder drops the byte order mark and puts U+FFFD
     for what is not UTF-16, as Python's codec with "replace" does. */
  function transcoded(log, coding) {
    var decoder = new TextDecoder(coding);
    var encoder = new TextEncoder();
    var pending = new Uint8Array(0);
    var done = false;
    function fill(size) {
      if (done || pending.length >= size) return Promise.resolve();
      return log.read(1 << 20).then(function (chunk) {
        done = !chunk.length;
        pending = concat(pending, encoder.encode(decoder.decode(chunk, { stream: !done })));
        return fill(size);
      });
    }
    return {
      read: function (size) {
        return fill(size).then(function () {
          var out = pending.subarray(0, size);
          pending = pending.subarray(out.length);
          return out;
        });
      },
      position: function () { return log.position(); }
    };
  }

  /* logs.open_log: gzip by its magic number, then UTF-16 by the first bytes of the text. */
  function openLog(blob) {
    return blob.slice(0, 4).arrayBuffer().then(function (buf) {
      var head = new Uint8Array(buf);
      if (!(head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b)) {
        var coding = utf16(head);
        return coding ? transcoded(blobReader(blob), coding) : blobReader(blob);
      }
      var unpacked = gzipReader(blob);
      return unpacked.read(4).then(function (inner) {
        var found = utf16(inner);
        var log = prefixed(inner, unpacked);
        return found ? transcoded(log, found) : log;
      });
    });
  }

  /* CRLF to LF and a lone CR (progress bars) to a space, then ANSI control sequences (ESC [
     params intermediates final) removed, in that order, as logs.normalise does; a copy
     only when a CR or an ESC is present. */
  function normalise(bytes) {
    return unwrapLines(stripCsi(crlf(bytes)));
  }

  /* logs.wrap_width: the column a terminal hard-wrapped the text at, or null. */
  function wrapWidth(bytes) {
    var sample = bytes.subarray(0, Math.min(bytes.length, wrapSample));
    var lines = [];
    var from = 0;
    var nl;
    while ((nl = sample.indexOf(NEWLINE, from)) !== -1) {
      lines.push(sample.subarray(from, nl));
      from = nl + 1;
    }
    if (!lines.length) return null;
    var widths = lines.map(columns);
    var seen = new Map();
    var latin = new TextDecoder('latin1');
    lines.forEach(function (l, i) {
      if (widths[i] < wrapMin) return;
      if (!seen.has(widths[i])) seen.set(widths[i], new Set());
      seen.get(widths[i]).add(latin.decode(l));
    });
    var width = -1;
    seen.forEach(function (texts, w) { if (texts.size >= 2 && w > width) width = w; });
    if (width < 0) return null;
    var near = new Set();
    lines.forEach(function (l, i) {
      if (widths[i] > Math.floor(width * 9 / 10)) near.add(latin.decode(l));
    });
    var wider = 0;
    widths.forEach(function (w) { if (w > width) wider++; });
    var cut = false;
    for (var i = 0; i + 1 < lines.length && !cut; i++) {
      var l = lines[i];
      cut = widths[i] === width && l.length > 0 && lines[i + 1].length > 0 &&
        sameClass(l[l.length - 1], lines[i + 1][0]);
    }
    if (2 * seen.get(width).size < near.size || wider > 1 || !cut) return null;
    return width;
  }

  /* logs.same_class: two ASCII letters or two digits. */
  function sameClass(a, b) {
    var letter = function (c) { return (c >= 65 && c <= 90) || (c >= 97 && c <= 122); };
    var digit = function (c) { return c >= 48 && c <= 57; };
    return (letter(a) && letter(b)) || (digit(a) && digit(b));
  }

  /* logs.columns: the bytes of a UTF-8 line that do not continue a character. */
  function columns(line) {
    var n = 0;
    for (var i = 0; i < line.length; i++) if ((line[i] & 0xC0) !== 0x80) n++;
    return n;
  }

  /* logs.unwrap: each hard-wrapped record joined back, the removed newlines put after it. */
  function unwrapLines(bytes) {
    var width = wrapWidth(bytes);
    if (width === null) return bytes;
    var out = new Uint8Array(bytes.length);
    var o = 0;
    var held = 0;
    var from = 0;
    var nl;
    while ((nl = bytes.indexOf(NEWLINE, from)) !== -1) {
      var line = bytes.subarray(from, nl);
      from = nl + 1;
      out.set(line, o);
      o += line.length;
      var padded = line.length >= 2 && line[line.length - 1] === 32 && line[line.length - 2] === 32;
      if (line.length >= width && columns(line) >= width && !padded) { held++; continue; }
      for (var k = 0; k <= held; k++) out[o++] = NEWLINE;
      held = 0;
    }
    for (var j = 0; j < held; j++) out[o++] = NEWLINE;
    return out.subarray(0, o);
  }

  function crlf(bytes) {
    var i = bytes.indexOf(CR);
    if (i < 0) return bytes;
    var out = new Uint8Array(bytes.length);
    out.set(bytes.subarray(0, i), 0);
    var o = i;
    for (; i < bytes.length; i++) {
      var b = bytes[i];
      if (b === CR) {
        if (bytes[i + 1] === NEWLINE) continue;
        out[o++] = 32;
      } else {
        out[o++] = b;
      }
    }
    return out.subarray(0, o);
  }

  function stripCsi(bytes) {
    var i = bytes.indexOf(ESC);
    if (i < 0) return bytes;
    var out = new Uint8Array(bytes.length);
    out.set(bytes.subarray(0, i), 0);
    var o = i;
    for (; i < bytes.length; i++) {
      var b = bytes[i];
      if (b === ESC && bytes[i + 1] === 0x5b) {
        var j = i + 2;
        while (j < bytes.length && bytes[j] >= 0x30 && bytes[j] <= 0x3f) j++;
        while (j < bytes.length && bytes[j] >= 0x20 && bytes[j] <= 0x2f) j++;
        if (j < bytes.length && bytes[j] >= 0x40 && bytes[j] <= 0x7e) {
          i = j;
          continue;
        }
      }
      out[o++] = b;
    }
    return out.subarray(0, o);
  }

  /* The CLI's `buffers()`: calls `each(buffer)` for whole-line buffers, in order. */
  function buffers(log, size, maxLine, each) {
    var carry = null;
    function step() {
      return log.read(size).then(function (chunk) {
        if (!chunk.length) {
          if (carry && carry.length) return each(concat(normalise(carry), [NEWLINE]));
          return undefined;
        }
        var data = carry && carry.length ? concat(carry, chunk) : chunk;
        var cut = data.lastIndexOf(NEWLINE);
        var out;
        if (cut < 0) {
          if (data.length < maxLine) { carry = data; return step(); }
          carry = null;
          out = data;
        } else {
          carry = data.subarray(cut + 1);
          out = data.subarray(0, cut + 1);
        }
        return Promise.resolve(each(normalise(out))).then(step);
      });
    }
    return step();
  }

  /* ---- Ranks and timestamps (lines: line_rank, file_rank, timestamp). ---- */

  function firstGroup(found) {
    for (var i = 1; i < found.length; i++) {
      if (found[i] !== undefined) return parseInt(found[i], 10);
    }
    return null;
  }

  /* lines.LineRanks: the ranks one line names, read once however many of its positions are
     asked about: where each `[rankN]:` prefix starts, and (when first needed) the rank of its
     leading prefix or message. */
  function lineRanks(m, text) {
    var ranks = { text: text, starts: [], ranks: [], own: undefined };
    var found;
    m.joinedRank.lastIndex = 0;
    while ((found = m.joinedRank.exec(text)) !== null) {
      ranks.starts.push(found.index);
      ranks.ranks.push(firstGroup(found));
    }
    return ranks;
  }

  /* LineRanks.at: the rank that printed character `at`, the last prefix that starts by it, else
     the line's own. */
  function rankIn(m, ranks, at) {
    var lo = 0;
    var hi = ranks.starts.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (ranks.starts[mid] <= at) lo = mid + 1;
      else hi = mid;
    }
    if (lo) return ranks.ranks[lo - 1];
    if (ranks.own === undefined) {
      var found = m.prefixRank.exec(ranks.text) || m.messageRank.exec(ranks.text);
      ranks.own = found ? firstGroup(found) : null;
    }
    return ranks.own;
  }

  /* lines.line_rank: the rank at `at` (the line's last prefix when none is given), else the
     file's rank. */
  function lineRank(m, text, rankOfFile, at) {
    var found = rankIn(m, lineRanks(m, text), at === undefined ? text.length : at);
    return found === null ? rankOfFile : found;
  }

  /* lines.nearby_rank: `own` (the line's rank at the evidence), else the file's, else that of
     the nearest line within neighbour_lines naming one (unless the two sides disagree). */
  function rankAt(m, text, own, sPos, end, rankOfFile) {
    if (own !== null) return own;
    if (rankOfFile !== null) return rankOfFile;
    var before = sPos;
    var after = end < 0 ? text.length : end;
    for (var d = 0; d < m.data.neighbour_lines; d++) {
      var found = new Set();
      if (before > 0) {
        var begin = before - 1 === 0 ? 0 : text.lastIndexOf('\n', before - 2) + 1;
        found.add(lineRank(m, text.slice(begin, before - 1), null));
        before = begin;
      }
      if (after < text.length - 1) {
        var stop = text.indexOf('\n', after + 1);
        if (stop < 0) stop = text.length;
        found.add(lineRank(m, text.slice(after + 1, stop), null));
        after = stop;
      }
      found.delete(null);
      if (found.size) return found.size === 1 ? Array.from(found)[0] : null;
    }
    return null;
  }

  function fileRank(m, path) {
    var parts = path.split('/').filter(function (p) { return p !== '' && p !== '.'; });
    var name = parts.length ? parts[parts.length - 1] : '';
    var found = m.fileRank.exec(name);
    if (found) return parseInt(found[1], 10);
    var dot = name.lastIndexOf('.');
    var stem = dot > 0 && dot < name.length - 1 ? name.slice(0, dot) : name;
    var parent = parts.length > 1 ? parts[parts.length - 2] : '';
    if ((stem === 'stdout' || stem === 'stderr') && /^\d{1,6}$/.test(parent)) {
      return parseInt(parent, 10);
    }
    return null;
  }

  /* The nearest timestamp of any format (the one that starts last), not the last of the first. */
  function timestamp(m, text) {
    var last = null;
    for (var i = 0; i < m.times.length; i++) {
      var re = m.times[i];
      var found;
      re.lastIndex = 0;
      while ((found = re.exec(text)) !== null) {
        if (last === null || found.index > last.index) last = found;
      }
    }
    if (!last) return null;
    var frac = (last[6] || '').padEnd(9, '0').slice(0, 9);
    return last[1].padStart(2, '0') + last[2] + last[3] + last[4] + last[5] + '.' + frac;
  }

  /* Python's text.strip()[:n] (n code points). */
  function shown(text, n) {
    var stripped = text.replace(STRIP, '');
    if (stripped.length <= n) return stripped;
    return Array.from(stripped).slice(0, n).join('');
  }

  /* ---- Scanning one log (scan: scan, _scan_part, _merge). ---- */

  /* The probes that may match somewhere in the buffer, like the CLI's RE2 set: those without
     literals, and those with an alternative whose literals all occur in it. */
  function candidates(m, seen) {
    var active = [];
    m.probes.forEach(function (probe, index) {
      var possible = !probe.branches || probe.branches.some(function (ids) {
        return ids.every(function (id) { return seen[id]; });
      });
      if (possible) active.push(index);
    });
    return active;
  }

  /* (offset, probe index, past the cap) of the first hit on every matching line, the CLI's "one
     hit per line"; a decisive probe goes on past the cap while `late.left` lasts. */
  function locate(m, text, counts, active, file, late) {
    var cap = m.data.evidence_cap;
    var located = [];
    for (var k = 0; k < active.length; k++) {
      var index = active[k];
      var probe = m.probes[index];
      var full = !probe.uncapped && counts[index] >= cap;
      if (probe.slow || (full && (!probe.decisive || (!late.left && late.uncompared)))) continue;
      var re = probe.find;
      re.lastIndex = 0;
      var found;
      var began = performance.now();
      m.enter(probe);
      while ((found = re.exec(text)) !== null) {
        if (performance.now() - began > m.patternMs && !probe.structural) {
          abandon(m, probe, file, performance.now() - began);
          break;
        }
        var at = found.index;
        var start = at === 0 ? 0 : text.lastIndexOf('\n', at - 1) + 1;
        var end = text.indexOf('\n', at);
        var line = text.slice(start, end < 0 ? text.length : end);
        var confirmed = probe.test.exec(line);
        if (confirmed !== null) {
          var past = Boolean(probe.decisive) && counts[index] >= cap;
          if (past && !late.left) { late.uncompared = true; break; }
          if (past) late.left--;
          else if (!probe.uncapped) counts[index]++;
          located.push([start + confirmed.index, index, past]);
          if (!probe.uncapped && !probe.decisive && counts[index] >= cap) break;
        }
        if (end < 0) break;
        re.lastIndex = end + 1;
      }
      var spent = performance.now() - began;
      m.spent[index] += spent;
      if (!probe.slow && !probe.structural && spent > m.patternMs) abandon(m, probe, file, spent);
    }
    m.enter(null);
    located.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    return located.filter(function (l) { return !m.probes[l[1]].slow; });
  }

  /* A pattern past its time on one buffer is left out of the whole diagnosis (the evidence it
     found so far too), and named in the result: one slow pattern must not cost the others. */
  function abandon(m, probe, file, ms) {
    probe.slow = true;
    m.slow.push({ entry: probe.entry, id: probe.id, title: probe.title, file: file,
                  seconds: ms / 1000 });
  }

  function Timeout(file, read) { this.file = file; this.read = read; }

  /* scan._keep: of each fingerprint's lines past the cap, the earliest and the earliest that
     names its rank (timestamp, an untimed line first, then line). */
  function keep(kept, ev) {
    var key = ev.entry + '\u0000' + ev.fingerprint;
    var earlier = function (a, b) {
      var ta = a.timestamp || '';
      var tb = b.timestamp || '';
      return ta !== tb ? ta < tb : a.line < b.line;
    };
    var pair = kept.get(key) || [ev, null];
    if (earlier(ev, pair[0])) pair[0] = ev;
    if (hasRank(ev) && (pair[1] === null || earlier(ev, pair[1]))) pair[1] = ev;
    kept.set(key, pair);
  }

  function scan(m, file, order, deadline, progress) {
    var d = m.data;
    var decoder = new TextDecoder('utf-8');
    var rankOfFile = fileRank(m, file.path || file.name);
    var evidence = [];
    var kept = new Map();
    var late = { left: d.late_lines, uncompared: false };
    var counts = new Int32Array(m.probes.length);
    var roots = [];
    var rankLines = [];
    var launched = new Set();
    var tail = new Uint8Array(0);
    var lineBase = 0;
    var total = 0;
    var changed = false;
    return openLog(file.blob).then(function (log) {
      return buffers(log, d.buffer_bytes, d.max_line_bytes, function (buf) {
        total += buf.length;
        var swept = sweep(m.automaton, buf);
        var active = candidates(m, swept.seen);
        var text = active.length ? decoder.decode(buf) : '';
        m.spent.fill(0);
        var located = active.length ? locate(m, text, counts, active, file.name, late) : [];
        var line = lineBase;
        var sPos = 0;  /* start of the current line in `text` */
        var bPos = 0;  /* and in `buf` */
        var read = new Map();  /* line start: [text, shown, timestamp], once per line */
        for (var k = 0; k < located.length; k++) {
          var offset = located[k][0];
          var index = located[k][1];
          var nl;
          while ((nl = text.indexOf('\n', sPos)) !== -1 && nl < offset) {
            sPos = nl + 1;
            bPos = buf.indexOf(NEWLINE, bPos) + 1;
            line++;
          }
          var end = text.indexOf('\n', sPos);
          if (!read.has(sPos)) {
            var whole = text.slice(sPos, end < 0 ? text.length : end);
            var stamp = timestamp(m, whole);
            if (stamp === null) {
              var from = Math.max(0, bPos - d.timestamp_window);
              var head = buf.subarray(from, bPos);
              if (bPos < d.timestamp_window && tail.length) {
                head = concat(tail, head);
                head = head.subarray(Math.max(0, head.length - d.timestamp_window));
              }
              stamp = timestamp(m, decoder.decode(head));
            }
            read.set(sPos, [whole, shown(whole, d.text_chars), stamp, lineRanks(m, whole)]);
          }
          var lineText = read.get(sPos)[0];
          if (index === m.rootIndex) { roots.push(line + 1); continue; }
          if (index === m.rootIndex + 1) {
            var near = line + 1 <= d.root_span ||
              (roots.length && line + 1 - roots[roots.length - 1] <= d.root_span);
            if (near && rankLines.length < d.root_span * (d.evidence_cap + 1)) {
              rankLines.push([line + 1, parseInt(m.probes[index].test.exec(lineText)[1], 10)]);
            }
            continue;
          }
          if (index === m.rootIndex + 2) {
            var listed = m.probes[index].test.exec(lineText)[1].match(/\d+/g) || [];
            listed.slice(0, d.max_ranks).forEach(function (r) {
              if (r.length <= 6) launched.add(parseInt(r, 10));
            });
            continue;
          }
          var probe = m.probes[index];
          var found = {
            entry: probe.entry, title: probe.title, file: file.name, order: order,
            line: line + 1,
            rank: rankAt(m, text, rankIn(m, read.get(sPos)[3], offset - sPos), sPos, end, rankOfFile),
            text: read.get(sPos)[1], fingerprint: probe.id,
            indicates: probe.indicates, consequence: probe.collateral,
            timestamp: read.get(sPos)[2], collateral: false, specificity: probe.specificity
          };
          if (located[k][2]) keep(kept, found);
          else evidence.push(found);
        }
        lineBase += swept.lines;
        /* the text before the next buffer: a buffer can be shorter than the window */
        var before = buf.length >= d.timestamp_window ? buf : concat(tail, buf);
        tail = before.slice(Math.max(0, before.length - d.timestamp_window));
        progress(buf.length, log.position());
        if (performance.now() > deadline) throw new Timeout(file.name, total);
      });
    }).catch(function (err) {
      /* Chromium reads a File only as it was when chosen: a log still being written fails at
         its next read. What was read before is diagnosed, and the result says so. */
      if (!(err && err.name === 'NotReadableError' && total)) throw err;
      changed = true;
    }).then(function () {
      /* scan.pair_roots: both lists sorted, walked once. */
      var rootRanks = [];
      var j = 0;
      roots.slice(0, d.evidence_cap).forEach(function (root) {
        while (j < rankLines.length && rankLines[j][0] <= root) j++;
        if (j < rankLines.length && rankLines[j][0] <= root + d.root_span) {
          rootRanks.push([root, rankLines[j][1]]);
        }
      });
      evidence.sort(function (a, b) { return a.line - b.line; });  /* stable, as Python's */
      var ranks = Array.from(launched).sort(function (a, b) { return a - b; })
        .slice(0, d.max_ranks);
      /* scan._kept: each kept line once, in line order. */
      var lateLines = Array.from(new Set([].concat.apply([], Array.from(kept.values()))))
        .filter(function (e) { return e !== null; })
        .sort(function (a, b) {
          return a.line - b.line || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0) ||
            (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0);
        });
      return { file: file.name, evidence: evidence, root_ranks: rootRanks, lines: lineBase,
               bytes: total, file_rank: rankOfFile, ranks: ranks, late: lateLines,
               uncompared: late.uncompared, changed: changed };
    });
  }

  /* The fingerprint that took longest on the last buffer (named when the budget runs out),
     from the times `locate` measured: running the patterns again could hang on a slow one. */
  function slowest(m) {
    var worst = null;
    for (var i = 0; i < m.rootIndex; i++) {
      if (m.spent[i] > 0 && (worst === null || m.spent[i] > m.spent[worst])) worst = i;
    }
    return worst === null ? null : m.probes[worst];
  }

  /* ---- Ranking (rank: entry_score, tier, rank_key, first_failure, diagnose, _initiating). ---- */

  function where(ev) { return ev.file + '\u0000' + ev.line; }

  /* Python's round(x, 2); scores are sums of weights x (1 + 0.1 k), never an exact tie. */
  function round2(x) { return Number(x.toFixed(2)); }

  /* Extra lines count once per rank and text (rank.entry_score). */
  function entryScore(d, evidence, shared) {
    var counts = new Map();
    var weight = new Map();
    evidence.forEach(function (ev) {
      if (!counts.has(ev.fingerprint)) counts.set(ev.fingerprint, new Set());
      counts.get(ev.fingerprint).add(ev.rank + '\u0000' + ev.text);
      var w = d.weights[ev.indicates] * (ev.collateral ? d.collateral_factor : 1.0);
      if (shared.has(where(ev))) w = Math.min(w, d.weights.supporting);
      weight.set(ev.fingerprint, Math.max(weight.has(ev.fingerprint) ? weight.get(ev.fingerprint) : 0, w));
    });
    var score = 0;
    weight.forEach(function (w, fp) {
      score += w * (1 + d.extra_line_share * Math.min(counts.get(fp).size - 1, d.extra_lines));
    });
    return round2(score);
  }

  /* 2: a decisive line of its own (not collateral, not shared); 1: other evidence of its own;
     0: collateral only (rank.tier). */
  function tier(evidence, shared) {
    var own = evidence.filter(function (e) { return !e.collateral; });
    if (own.some(function (e) { return e.indicates === 'decisive' && !shared.has(where(e)); })) {
      return 2;
    }
    return own.length ? 1 : 0;
  }

  /* Context lines of its own beside a line it shares with other entries (rank.placed). */
  function placed(evidence, shared) {
    var own = evidence.filter(function (e) { return !e.collateral; });
    return own.some(function (e) { return e.indicates === 'context'; }) &&
      own.some(function (e) { return e.indicates !== 'context' && shared.has(where(e)); });
  }

  /* rank.rank_key. */
  function rankKey(d, c) {
    var strongest = Math.max.apply(null, c.evidence.map(function (e) { return d.weights[e.indicates]; }));
    var specific = Math.max.apply(null, c.evidence.filter(function (e) {
      return d.weights[e.indicates] === strongest;
    }).map(function (e) { return e.specificity; }));
    return [-c.strength, -(c.placed ? 1 : 0), -c.score, -strongest, -specific];
  }

  function byFileLine(a, b) { return a.order - b.order || a.line - b.line; }

  function minBy(items, less) {
    var best = items[0];
    for (var i = 1; i < items.length; i++) if (less(items[i], best)) best = items[i];
    return best;
  }

  function firstFailure(evidence) {
    if (!evidence.length) return null;
    if (evidence.every(function (e) { return e.timestamp; })) {
      return minBy(evidence, function (a, b) {
        if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp;
        return byFileLine(a, b) < 0;
      });
    }
    return minBy(evidence, function (a, b) { return byFileLine(a, b) < 0; });
  }

  function hasRank(e) { return e.rank !== null && e.rank !== undefined; }

  /* [first line, its rank, how] (rank._initiating): a first line that names no rank takes
     the rank of the first line of the same error that names one. */
  function initiating(m, matches, primary, scans) {
    if (primary.length) {
      var how = primary.every(function (e) { return e.timestamp; }) ? 'timestamps' : 'line order';
      if (how === 'timestamps' && scans.some(function (s) { return s.uncompared; })) {
        how += ', among each error\'s first ' + m.data.evidence_cap + ' lines and ' +
          m.data.late_lines.toLocaleString('en') + ' more: later decisive lines were not compared';
      }
      var first = firstFailure(primary);
      var reason = 'earliest decisive error (' + how + ')';
      if (hasRank(first)) return [first, first.rank, reason];
      var named = firstFailure(primary.filter(function (e) {
        return hasRank(e) && e.entry === first.entry && e.fingerprint === first.fingerprint;
      }));
      if (!named) return [first, null, reason];
      var where = named.file === first.file ? 'line ' + named.line : named.file + ':' + named.line;
      return [first, named.rank, reason + '; its rank from ' + where +
        ', the same error on a line that names the rank'];
    }
    if (!matches.length) return [null, null, null];
    var top = matches[0].evidence;
    var behind = [];
    top.forEach(function (e) {
      if (e.rank === null) return;
      var found = m.enqueued.exec(e.text);
      if (found) behind.push([parseInt(found[1], 10), e]);
    });
    var distinct = new Set(behind.map(function (b) { return b[0]; }));
    if (distinct.size > 1) {
      var lowest = Math.min.apply(null, Array.from(distinct));
      var lagging = behind.filter(function (b) { return b[0] === lowest; })
        .map(function (b) { return b[1]; });
      var behindFirst = minBy(lagging, function (a, b) { return byFileLine(a, b) < 0; });
      return [behindFirst, behindFirst.rank,
        'lowest last enqueued NCCL work (the rank that fell behind)'];
    }
    var earliest = firstFailure(top);
    return [earliest, earliest ? earliest.rank : null, 'earliest line of the best candidate'];
  }

  function diagnose(m, scans) {
    var d = m.data;
    var evidence = [];
    scans.forEach(function (s) { evidence = evidence.concat(s.evidence); });
    var primary = evidence.filter(function (e) {
      return e.indicates === 'decisive' && !e.consequence;
    });
    scans.forEach(function (s) { primary = primary.concat(s.late || []); });
    var failed = evidence.some(function (e) {
      return (e.indicates === 'decisive' || e.indicates === 'supporting') && !e.consequence;
    });
    if (failed) {
      evidence.forEach(function (e) { if (e.consequence) e.collateral = true; });
    }
    var byEntry = new Map();
    var owners = new Map();
    evidence.forEach(function (ev) {
      if (!byEntry.has(ev.entry)) byEntry.set(ev.entry, []);
      byEntry.get(ev.entry).push(ev);
      if (!owners.has(where(ev))) owners.set(where(ev), new Set());
      owners.get(where(ev)).add(ev.entry);
    });
    var shared = new Set();
    owners.forEach(function (ids, key) { if (ids.size > 1) shared.add(key); });
    var matches = [];
    byEntry.forEach(function (found, id) {
      if (found.every(function (e) { return e.indicates === 'context'; })) return;
      found.sort(byFileLine);
      var strength = tier(found, shared);
      var candidate = {
        id: id, title: found[0].title, score: entryScore(d, found, shared),
        benign: found.every(function (e) { return e.indicates === 'benign'; }),
        strength: strength, possible: strength < 2, evidence: found,
        placed: strength === 1 && placed(found, shared)
      };
      candidate.key = rankKey(d, candidate);
      matches.push(candidate);
    });
    matches.sort(function (a, b) {
      for (var i = 0; i < a.key.length; i++) {
        if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
      }
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    var chosen = initiating(m, matches, primary, scans);
    var first = chosen[0];
    var rank = chosen[1];
    var reason = chosen[2];
    var roots = [];
    scans.forEach(function (s) { s.root_ranks.forEach(function (r) { roots.push(r[1]); }); });
    var root = roots.length ? roots[0] : null;
    /* Evidence wins over the block (the first failure torchrun's agent observed), which decides
       only when no decisive line names a rank (rank.diagnose, rank._root_says). */
    if (root !== null && primary.length && hasRank({ rank: rank })) {
      reason += '; ' + (root === rank ? "torchrun's Root Cause block names the same rank"
        : "torchrun's Root Cause block names rank " + root + ', the first failure its agent ' +
          "observed, but rank " + rank + "'s error came earlier");
    } else if (root !== null) {
      rank = root;
      reason = 'torchrun Root Cause (first observed failure) block';
      var pool = primary.length ? primary : (matches.length ? matches[0].evidence : []);
      first = firstFailure(pool.filter(function (e) { return e.rank === rank; }));
    }
    /* Ranks known from per-rank file names whose logs gave no evidence (rank.diagnose). */
    var spoke = new Set(evidence.map(function (e) { return e.rank; }));
    var known = new Set();
    scans.forEach(function (s) {
      if (s.file_rank !== null && s.file_rank !== undefined) known.add(s.file_rank);
    });
    var named = evidence.some(hasRank);
    if (named) scans.forEach(function (s) { (s.ranks || []).forEach(function (r) { known.add(r); }); });
    var silent = Array.from(known).filter(function (r) { return !spoke.has(r); })
      .sort(function (a, b) { return a - b; });
    return { matches: matches, initiating_rank: rank, initiating: first, initiating_reason: reason,
             silent_ranks: silent, root_cause_rank: root };
  }

  /* The CLI's --json object (contract.as_json), with links relative to the site root. */
  function evidenceJson(ev) {
    return {
      file: ev.file, line: ev.line, rank: ev.rank, text: ev.text, fingerprint: ev.fingerprint,
      indicates: ev.indicates, collateral: ev.collateral, timestamp: ev.timestamp
    };
  }

  /* report.with_answers and report.likely: the answer (cause, its fix step, failure domain and
     action) of the root cause the candidate's strongest own line points to, else of the
     entry's first root cause, and the confidence word. contract.fingerprint_rows computes each
     row's answers in Python. */
  function answers(d, c) {
    var rows = d.fingerprints;
    var own = new Map();
    rows.forEach(function (r) { if (r.entry === c.id) own.set(r.id, r); });
    var none = { cause: null, fix: null, domain: null, action: null };
    if (!own.size) return none;
    var ordered = c.evidence.slice().sort(function (a, b) {
      return (a.collateral - b.collateral) ||
        (d.strength.indexOf(a.indicates) - d.strength.indexOf(b.indicates));
    });
    var first = own.values().next().value;
    for (var i = 0; i < ordered.length; i++) {
      var row = own.get(ordered[i].fingerprint);
      if (row && row.answer) return row.answer;
    }
    return first.first;
  }

  function asJson(d, result, scans) {
    return {
      matches: result.matches.map(function (c) {
        var known = answers(d, c);
        return {
          id: c.id, title: c.title, score: c.score, benign: c.benign, possible: c.possible,
          url: 'entries/' + c.id + '.html', evidence: c.evidence.map(evidenceJson),
          cause: known.cause, fix: known.fix, domain: known.domain, action: known.action,
          confidence: c.benign ? 'benign' : c.possible ? 'possible' : 'certain'
        };
      }),
      initiating_rank: result.initiating_rank,
      initiating: result.initiating ? evidenceJson(result.initiating) : null,
      initiating_reason: result.initiating_reason,
      root_cause_rank: result.root_cause_rank,
      silent_ranks: result.silent_ranks,
      files: scans.map(function (s) { return { file: s.file, lines: s.lines, bytes: s.bytes }; })
    };
  }

  /* What `nanopedia check` times under Node (theme/check/patterntime.js) and what the parity
     tests run: one fingerprint's `program` compiled as a scan compiles it, and a function that
     runs it over a text the way `locate` does (`find` over the whole text, each hit's line
     confirmed by `test`, one hit per line) with no evidence cap, and returns the offsets of the
     lines it confirms. */
  scope.timeProbe = function (program) {
    var probe = regexps(program, {});
    return function (text) {
      var hits = [];
      var re = probe.find;
      re.lastIndex = 0;
      var found;
      while ((found = re.exec(text)) !== null) {
        var start = found.index === 0 ? 0 : text.lastIndexOf('\n', found.index - 1) + 1;
        var end = text.indexOf('\n', found.index);
        if (probe.test.exec(text.slice(start, end < 0 ? text.length : end)) !== null) {
          hits.push(start);
        }
        if (end < 0) break;
        re.lastIndex = end + 1;
      }
      return hits;
    };
  };

  /* The ranking rules alone, on evidence already found: the data-driven cases of
     tests/cases/ranking.json run through here under `node --test` and through nanopedia.diagnosis.rank under
     pytest, so the two engines are proven to rank alike without a browser. */
  scope.rankEvidence = function (data, scans) {
    var m = { data: data, enqueued: new RegExp(data.enqueued) };
    scans.forEach(function (s, order) {
      s.evidence.forEach(function (e) { e.order = order; e.collateral = false; });
    });
    return asJson(data, diagnose(m, scans), scans);
  };

  /* ---- The worker's one job. ---- */

  /* The page's job: `msg.files` scanned in order with the matcher `m`, then ranked; progress,
     the pattern about to run and the answer (or the error) go to `post`. */
  function job(m, msg, post) {
    var began = performance.now();
    var deadline = began + msg.budgetMs;
    /* Before each pattern runs, the page is told which: if one never returns, the page stops
       this worker and starts another without it (a regex cannot be interrupted from inside). */
    m.patternMs = msg.patternMs || 3000;
    m.enter = function (probe) {
      post({ type: 'probe', entry: probe ? probe.entry || null : null,
             id: probe ? probe.id || null : null, file: current });
    };
    var files = msg.files;
    var total = files.reduce(function (n, f) { return n + f.blob.size; }, 0);
    var before = 0;
    var scans = [];
    var current = '';
    var chain = Promise.resolve();
    files.forEach(function (file, i) {
      chain = chain.then(function () {
        current = file.name;
        return scan(m, file, i, deadline, function (_, position) {
          post({ type: 'progress', done: before + position, total: total, file: file.name });
        }).then(function (s) { scans.push(s); before += file.blob.size; });
      });
    });
    chain.then(function () {
      var dropped = new Set(m.slow.map(function (s) { return s.entry + '\u0000' + s.id; }));
      scans.forEach(function (s) {
        var kept = function (e) { return !dropped.has(e.entry + '\u0000' + e.fingerprint); };
        s.evidence = s.evidence.filter(kept);
        s.late = s.late.filter(kept);
      });
      var out = asJson(m.data, diagnose(m, scans), scans);
      out.skipped = m.skipped;
      out.slow = m.slow;
      out.changed = scans.filter(function (s) { return s.changed; })
        .map(function (s) { return { file: s.file, lines: s.lines }; });
      out.seconds = (performance.now() - began) / 1000;
      post({ type: 'done', result: out });
    }, function (err) {
      var message;
      if (err instanceof Timeout) {
        var slow = slowest(m);
        message = 'diagnosis stopped after ' + ((performance.now() - began) / 1000).toFixed(1) +
          ' s, its time budget, while reading ' + current + ' (' + (err.read / 1e6).toFixed(1) +
          ' MB of its text read); the slowest fingerprint on the last buffer was ' +
          (slow ? "'" + slow.entry + '/' + slow.id + "'" : 'none found') +
          '. Raise the time budget to read the whole log.';
      } else if (err && err.name === 'NotReadableError') {
        message = 'cannot read ' + current + ': it changed after it was chosen (a log still ' +
          'being written?) or can no longer be read; choose it again, or a copy of it';
      } else {
        message = 'cannot read ' + current + ': ' + (err && err.message ? err.message : String(err));
      }
      post({ type: 'error', message: message, timeout: err instanceof Timeout });
    });
  }

  /* The page's messages. `{load: data}` compiles the fingerprints before any log comes (the page
     keeps such a worker ready: compiling them is most of the time a small log takes); a job
     without `data` then runs on them, as `jobs` runs its jobs, as often as the page sends one. A
     job with `data` (a restart that leaves out the fingerprints found stuck) compiles its own. */
  var loaded = null;
  scope.onmessage = function (event) {
    var msg = event.data;
    var post = function (out) { scope.postMessage(out); };
    if (msg.load) loaded = scope.jobs(msg.load);
    else if (msg.data) job(compile(msg.data, msg.slow), msg, post);
    else loaded(msg, post);
  };

  /* Jobs with the same data, compiled once: tests/js/corpus.test.js diagnoses each of its logs
     as a job of its own, and compiling every fingerprint was half of that (and nearly all of it
     under a mutation run's instrumentation). Each job starts from the compiled matcher, without
     what an earlier one left out as too slow. */
  scope.jobs = function (data) {
    var m = compile(data, []);
    return function (msg, post) {
      m.probes.forEach(function (probe) { probe.slow = false; });
      m.slow = [];
      job(m, msg, post);
    };
  };
};
