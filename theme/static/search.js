/*
 * Nanopedia search: the box in every page header and the results page (search.html).
 *
 * Runs from file:// and under a CSP without 'unsafe-inline': a plain script (no modules, no
 * eval), data from scripts that set globals (fetch is blocked on file://; generator/nanopedia/site/search.py
 * describes them) and the vendored MiniSearch UMD build (it sets window.MiniSearch). They are
 * loaded the first time a reader uses a search box, so pages stay light at 10,000 entries; the
 * single-file bundle has them already.
 *
 * The first keystroke is answered by a scan of the short fields (search/index.js) while the
 * index shards load: each is a MiniSearch index serialized at build time, loaded by parsing,
 * not indexing (loadIndex: MiniSearch.loadJS with each term's postings made into Maps when a
 * query first needs them). The form's data-index-state says how far it is: loading, quick (the
 * scan), complete (every field of every entry).
 *
 * Entry text is untrusted: results are built from DOM text nodes and <mark> elements, never from
 * HTML strings. Every link is made from the form's data-* patterns, which the templates write
 * relative to the page (or as fragments in the single-file bundle), so they work at any depth.
 */
(function () {
  'use strict';
  window.NanopediaSearchLoaded = true;

  /* Ranking: a hit in the title or an exact error string counts most (an entry's own error
     strings and those it mentions alike: owners() tells them apart for a pasted line). */
  var BOOST = {
    title: 4, errors: 4, mentions: 4, aliases: 3, tags: 2, symptoms: 1.5, causes: 1, summary: 1
  };
  /* Which matching field a result shows under its title, in order of preference. */
  var SHOWN = ['errors', 'mentions', 'symptoms', 'summary', 'causes', 'tags', 'aliases'];
  var LABELS = {
    errors: 'Error', mentions: 'Error', symptoms: 'Symptom', summary: 'Summary', causes: 'Cause',
    tags: 'Tags', aliases: 'Former id'
  };
  /* MiniSearch's default tokenizer; highlighting splits the same way, keeping the separators. */
  var SPLIT = /[\n\r\p{Z}\p{P}]+/u;
  var SEPARATOR = /([\n\r\p{Z}\p{P}]+)/u;
  /* What differs between two logs of one error besides its log prefix (search/index.js gives
     that): paths, addresses (0x7f3a9c000000, the PCI bus id 0000:3b:00.0), and (in the looser
     comparison) numbers. */
  var PATH = /(?:[a-z]:)?(?:[\\/][\w.@+~-]+){2,}/g;
  var ADDRESS = /0x[0-9a-f]{6,}|\b[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?\b/g;
  var NUMBER = /\d+(?:\.\d+)?/g;
  /* Elided text in an error string a title quotes ("Caught ... in DataLoader worker process"). */
  /* What a match that holds only with every number set to 0 counts, against an exact one. */
  var LOOSE = 0.9;
  var ELIDED = /\s*(?:\.\.\.|\u2026)\s*/;
  /* A query this long that contains an entry's error string (or is part of one) was pasted from
     a log: that entry comes first. Shorter strings are too common to say whose error it is. */
  var ERROR_MIN = 16;
  /* Said above the results of a pasted error that no entry quotes (owners finds none). */
  var UNQUOTED = 'No entry quotes this error exactly; closest matches:';
  /* Tags are suggested for a query of at most this many words, every one starting a tag name. */
  var TAG_WORDS = 3;
  var SUGGESTIONS = 8;
  var RESULTS = 100;
  /* Results shown at once; the rest follow in the next task, after the first ones are drawn. */
  var FIRST = 12;
  var SNIPPET = 180;
  /* Words longer than this are matched exactly or as a prefix, never fuzzily. */
  var FUZZY_MAX = 40;
  /* Characters of a query searched: a paste past them (a whole log) adds nothing but time. */
  var QUERY_MAX = 4096;
  /* A paste of at least LOG_LINES non-blank lines with one of a log's marks (an error word, a
     traceback, a clock time, a rank prefix) is a log: the box offers to diagnose it on the
     diagnose page, and Enter takes it there. The text goes there in this tab's sessionStorage
     under CARRIED (diagnose.js takes it), never in a URL: nothing leaves the browser, and the
     log stays out of history. The results page is not offered for it: its address holds the
     query. */
  var LOG_LINES = 3;
  var LOG_MARK = /error|exception|traceback|warn|fatal|fail|abort|killed|signal|timed? ?out|\[rank\d|\d\d:\d\d:\d\d/i;
  var CARRIED = 'nanopedia:diagnose-log';

  var engine = null;
  var pending = [];
  var upgraded = [];
  var loading = false;

  /* The MiniSearch options the index was built with (generator/nanopedia/site/search.py writes the same). */
  function miniOptions(data) {
    var stop = Object.create(null);
    data.index.stop.forEach(function (w) { stop[w] = true; });
    return {
      idField: 'id',
      fields: data.index.fields,
      extractField: function (doc, name) {
        var value = doc[name];
        return Array.isArray(value) ? value.join('\n') : value;
      },
      processTerm: function (term) {
        var t = term.toLowerCase();
        return stop[t] ? null : t;
      }
    };
  }
  window.NanopediaSearchOptions = miniOptions;

  /* Entry `at` of the data as results read it, its text from the text shards on the page: for
     tests/js/search_index.test.js, which checks it against the entry. */
  window.NanopediaSearchEntry = function (data, at) {
    var eng = newEngine(data);
    eng.text = [];
    var entry = {};
    data.fields.concat(data.text.fields).forEach(function (name) {
      entry[name] = field(eng, at, name);
    });
    return entry;
  };

  function searchOptions(combineWith) {
    return {
      boost: BOOST,
      combineWith: combineWith,
      prefix: function (term) { return term.length > 1; },
      /* One typo; a swap of two letters counts as two edits, allowed in words of 8 or more.
         None in a word longer than FUZZY_MAX (a pasted hash or base64 blob): MiniSearch's
         fuzzy search fills a matrix of the word's length squared. */
      fuzzy: function (term) {
        return term.length < 4 || term.length > FUZZY_MAX ? 0 : (term.length < 8 ? 1 : 2);
      }
    };
  }
  /* For tests/js/search_index.test.js, which searches with the page's own options. */
  window.NanopediaSearchQuery = searchOptions;

  function positions(names) {
    var at = {};
    names.forEach(function (name, i) { at[name] = i; });
    return at;
  }

  /* A pasted line or an error string as the two are compared: without its log prefix, in
     lower case, on one line, paths and addresses reduced to a mark. */
  function normal(eng, text) {
    return text.replace(eng.prefix, '').replace(/\s+/g, ' ').trim().toLowerCase()
      .replace(PATH, '/\u2026').replace(ADDRESS, '0x\u2026');
  }

  /*
   * What the first scan and the exact-error check read: every entry's record (its short fields
   * apart by tabs, the compact id last) in lower case in one string, entries apart by U+0001,
   * and where each entry's starts. One indexOf over it finds a word's entries: at 10,000
   * entries that is a few milliseconds, where a string per entry took ten times as long.
   */
  function newEngine(data) {
    var records = data.docs;
    var n = records.length;
    var starts = new Int32Array(n + 1);
    for (var i = 0; i < n; i += 1) starts[i + 1] = starts[i] + records[i].length + 1;
    var lower = records.join('\u0001').toLowerCase();
    /* Lower case is longer for a few letters (İ): then each record is lowered alone. */
    if (n && lower.length !== starts[n] - 1) {
      var lowered = records.map(function (r) { return r.toLowerCase(); });
      for (var k = 0; k < n; k += 1) starts[k + 1] = starts[k] + lowered[k].length + 1;
      lower = lowered.join('\u0001');
    }
    var boosts = data.fields.map(function (name) { return BOOST[name] || 0; });
    if (boosts[boosts.length - 1]) throw new Error('the last field of a record is the id');
    return {
      data: data, at: positions(data.fields), textAt: positions(data.text.fields),
      lists: positions(data.lists), lower: lower, starts: starts, boosts: boosts,
      top: Math.max.apply(null, boosts), size: n, records: [], byId: Object.create(null),
      prefix: new RegExp(data.prefix), errorLines: null, tags: data.tags, options: miniOptions(data), minis: [], answers: null,
      text: null, complete: false
    };
  }

  /* The entry whose record holds position `pos` of the scanned text. */
  function entryAt(starts, pos) {
    var lo = 0;
    var hi = starts.length - 2;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (starts[mid] > pos) hi = mid - 1; else lo = mid;
    }
    return lo;
  }

  /* An id from its compact form `<n>:<rest>`: its first n characters are those of the title's
     slug (generator/nanopedia/site/search.py, compact_id). */
  function fullId(compact, title) {
    var colon = compact.indexOf(':');
    var slug = title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    return slug.slice(0, Number(compact.slice(0, colon))) + compact.slice(colon + 1);
  }

  /* A packed record as its fields: lists as arrays. */
  function unpack(eng, packed, names) {
    return packed.split('\t').map(function (value, k) {
      if (!(names[k] in eng.lists)) return value;
      return value ? value.split('\n') : [];
    });
  }

  /* A field of entry `at`: from search/index.js, or from its text shard once that is loaded. */
  function field(eng, at, name) {
    if (name === 'answer') return eng.answers ? eng.answers[at] : undefined;
    if (name in eng.at) {
      if (!eng.records[at]) eng.records[at] = unpack(eng, eng.data.docs[at], eng.data.fields);
      var value = eng.records[at][eng.at[name]];
      return name === 'id' ? fullId(value, eng.records[at][eng.at.title]) : value;
    }
    if (!eng.text) return undefined;
    if (!eng.text[at]) {
      var size = eng.data.text.shard_size;
      var shard = window.NANOPEDIA_SEARCH_TEXT[Math.floor(at / size)];
      eng.text[at] = unpack(eng, shard[at % size], eng.data.text.fields);
    }
    return eng.text[at][eng.textAt[name]];
  }

  /* Runs the script at src, then done: search-boot.js may have asked for it already. One that
     failed is removed (by search-boot.js too), so that the next search asks again rather than
     wait on it. */
  function loadScript(src, done) {
    var el = Array.prototype.filter.call(document.scripts, function (s) {
      return s.getAttribute('src') === src;
    })[0];
    if (!el) {
      el = document.createElement('script');
      el.src = src;
      document.head.appendChild(el);
    }
    el.addEventListener('load', done);
    el.addEventListener('error', function () {
      el.remove();
      fail('could not load ' + src);
    });
  }

  function fail(message) {
    loading = false;
    pending.forEach(function (p) { p.fail(message); });
    pending = [];
  }

  /* Tells styles, tests and benchmarks how far the index is: loading, quick or complete. */
  function announce(state) {
    Array.prototype.forEach.call(document.querySelectorAll('form[data-search]'), function (f) {
      f.setAttribute('data-index-state', state);
    });
  }

  function ready(eng) {
    engine = eng;
    announce(eng.complete ? 'complete' : 'quick');
    var waiting = pending;
    pending = [];
    waiting.forEach(function (p) { p.ok(eng); });
  }

  /*
   * Calls ok(engine) once something can be searched: first the scan of search/index.js, then,
   * once the library and every index and text shard are loaded, the index; the quick answers
   * load after the first results and show when they come. Each form is told of a change through
   * `upgraded`. When every script is on the page already (the single-file bundle), the index is
   * loaded at once.
   */
  function withEngine(form, ok, failed) {
    if (engine) { ok(engine); return; }
    pending.push({ ok: ok, fail: failed || function () {} });
    if (loading) return;
    loading = true;
    announce('loading');
    var index = form.getAttribute('data-index') || '';
    var base = index.slice(0, index.lastIndexOf('/') + 1);
    var have = function () {
      var eng = newEngine(window.NANOPEDIA_SEARCH);
      eng.answers = window.NANOPEDIA_SEARCH_ANSWERS || null;
      if (window.MiniSearch && everyShard(eng)) {
        complete(eng);
        ready(eng);
        return;
      }
      ready(eng);
      /* The answers, the library and the shards are asked for once the first results are
         drawn: asking for 22 scripts takes the page tens of milliseconds, and reading and
         parsing them would take the processor from those results. */
      setTimeout(function () {
        if (!eng.answers) {
          loadScript(form.getAttribute('data-answers'), function () {
            eng.answers = window.NANOPEDIA_SEARCH_ANSWERS;
            upgraded.forEach(function (fn) { fn(eng); });
          });
        }
        loadRest(eng, form.getAttribute('data-library'), base);
      }, 0);
    };
    if (window.NANOPEDIA_SEARCH) have();
    else loadScript(index, have);
  }

  function everyShard(eng) {
    var terms = window.NANOPEDIA_SEARCH_INDEX || [];
    var text = window.NANOPEDIA_SEARCH_TEXT || [];
    return eng.data.index.shards.every(function (_, n) { return terms[n] && text[n]; });
  }

  /*
   * A term's postings as MiniSearch's search reads them (termResults asks `get(fieldId)` for a
   * Map from document number to count), made into Maps when a query first reaches the term.
   * MiniSearch.loadJS makes every Map at once: in the 10,000-entry benchmark, a shard's 107,000
   * postings took it 20-40 ms, and a collection of the garbage after them.
   */
  function Postings(byField) {
    this.byField = byField;
    this.maps = Object.create(null);
  }
  Postings.prototype.get = function (fieldId) {
    var map = this.maps[fieldId];
    if (map === undefined) {
      var docs = this.byField[fieldId];
      map = docs ? new Map() : null;
      for (var k in docs) map.set(parseInt(k, 10), docs[k]);
      this.maps[fieldId] = map;
    }
    return map;
  };

  /* MiniSearch.loadJS with each term's postings left as they were parsed, until asked for;
     tests/js/search_index.test.js checks that searches give exactly what loadJS's do. */
  function loadIndex(js, options) {
    var mini = window.MiniSearch.loadJS(Object.assign({}, js, { index: [] }), options);
    js.index.forEach(function (term) { mini._index.set(term[0], new Postings(term[1])); });
    return mini;
  }
  window.NanopediaSearchLoad = loadIndex;

  /* Loads index shard n into MiniSearch. Its hits name entries by id: where each is comes from
     the shard's own list. */
  function loadShard(eng, n) {
    var terms = window.NANOPEDIA_SEARCH_INDEX[n];
    eng.minis[n] = loadIndex(terms, eng.options);
    var ids = terms.documentIds;
    var first = n * eng.data.text.shard_size;
    Object.keys(ids).forEach(function (k) { eng.byId[ids[k]] = first + Number(k); });
  }

  /* Every shard is on the page: the index is complete (text shards are read as results need
     them). */
  function complete(eng) {
    eng.data.index.shards.forEach(function (_, n) { if (!eng.minis[n]) loadShard(eng, n); });
    eng.text = [];
    eng.complete = true;
  }

  /*
   * Asks for the library and the shards all at once (each sets its own slot, in any order).
   * Each index shard is loaded into MiniSearch as soon as it and the library are there: at
   * 10,000 entries that is about 2 ms a shard (with 12 ms of JSON.parse as its script runs),
   * spread over the time the others take to come.
   */
  function loadRest(eng, library, base) {
    var data = eng.data;
    function arrived() {
      data.index.shards.forEach(function (_, n) {
        if (window.MiniSearch && (window.NANOPEDIA_SEARCH_INDEX || [])[n] && !eng.minis[n]) {
          loadShard(eng, n);
        }
      });
    }
    var needed = [];
    if (!window.MiniSearch) needed.push(library);
    data.index.shards.forEach(function (name, n) {
      if (!(window.NANOPEDIA_SEARCH_INDEX || [])[n]) needed.push(base + name);
      if (!(window.NANOPEDIA_SEARCH_TEXT || [])[n]) needed.push(base + data.text.shards[n]);
    });
    var left = needed.length;
    function done() {
      arrived();
      left -= 1;
      if (left > 0) return;
      complete(eng);
      announce('complete');
      upgraded.forEach(function (fn) { fn(eng); });
    }
    if (!left) { left = 1; done(); return; }
    needed.forEach(function (src) { loadScript(src, done); });
  }

  /* The query's words as the index has them (stop words dropped), each once. */
  function words(eng, text) {
    var seen = Object.create(null);
    return text.split(SPLIT).map(function (w) { return w.toLowerCase(); }).filter(function (w) {
      if (!w || seen[w] || !eng.options.processTerm(w)) return false;
      seen[w] = true;
      return true;
    });
  }

  /*
   * The first scan: entries whose short fields hold every word (else any), by boost. After a
   * hit the scan goes on at the next field, or at the next entry when no field ahead could
   * rank it higher (and past the id, which is not searched).
   */
  function scan(eng, text) {
    var qs = words(eng, text);
    if (!qs.length) return [];
    var n = eng.size;
    var lower = eng.lower;
    var starts = eng.starts;
    var score = new Float64Array(n);
    var count = new Uint8Array(n);
    var best = new Float64Array(n);
    var found = [];
    qs.forEach(function (w) {
      var touched = [];
      var pos = lower.indexOf(w);
      while (pos >= 0) {
        var i = entryAt(starts, pos);
        var f = 0;
        var end = lower.indexOf('\t', starts[i]);
        while (end >= 0 && end < pos) { f += 1; end = lower.indexOf('\t', end + 1); }
        var boost = eng.boosts[f];
        if (best[i] < boost) {
          if (!best[i]) touched.push(i);
          best[i] = boost;
        }
        var last = end < 0 || end >= starts[i + 1];
        pos = lower.indexOf(w, boost === eng.top || last ? starts[i + 1] : end + 1);
      }
      touched.forEach(function (k) {
        if (!count[k]) found.push(k);
        score[k] += best[k];
        count[k] += 1;
        best[k] = 0;
      });
    });
    var every = [];
    var some = [];
    /* In entry order, so that equal scores keep it (the sort is stable). */
    found.sort(function (a, b) { return a - b; }).forEach(function (i) {
      /* Boosts are whole numbers: a shorter title only breaks ties. */
      var title = lower.indexOf('\t', starts[i]) - starts[i];
      var hit = { at: i, score: score[i] + 1 / (2 + title), queryTerms: qs, match: null };
      (count[i] === qs.length ? every : some).push(hit);
    });
    return (every.length ? every : some).sort(function (a, b) { return b.score - a.score; });
  }

  /* The matched words of a scanned hit, as MiniSearch reports them (term to fields). */
  function scanMatch(eng, hit) {
    var match = Object.create(null);  /* a word such as `constructor` is no inherited key */
    eng.data.fields.forEach(function (f, k) {
      if (!eng.boosts[k]) return;
      var v = field(eng, hit.at, f);
      (Array.isArray(v) ? v : [v]).join('\n').split(SPLIT).forEach(function (token) {
        var t = token.toLowerCase();
        if (t && hit.queryTerms.some(function (w) { return t.indexOf(w) >= 0; })) {
          (match[t] = match[t] || []).push(f);
        }
      });
    });
    return match;
  }

  /* An error string as owners() compares it: its parts (text a title elides with "..." split
     it), exactly and with every number 0. */
  function errorLine(eng, text, name, k, tier) {
    var exact = normal(eng, text).split(ELIDED).filter(Boolean);
    return {
      name: name, k: k, tier: tier, exact: exact, length: exact.join(' ').length,
      loose: exact.map(function (part) { return part.replace(NUMBER, '0'); }),
      numbers: exact.join(' ').match(NUMBER) || []
    };
  }

  /* Every entry's error strings, made once: the title, then the entry's own error strings
     (tier 2), then those it mentions (tier 1). */
  function errorLines(eng) {
    var all = [];
    for (var i = 0; i < eng.size; i += 1) {
      var lines = [errorLine(eng, field(eng, i, 'title'), 'title', 0, 2)];
      ['errors', 'mentions'].forEach(function (name, tier) {
        field(eng, i, name).forEach(function (text, k) {
          lines.push(errorLine(eng, text, name, k, 2 - tier));
        });
      });
      all.push(lines.filter(function (line) { return line.length >= ERROR_MIN; }));
    }
    return all;
  }

  /* Whether q holds every part of an error string in order, or is itself within one part. */
  function holds(q, parts) {
    var from = 0;
    for (var p = 0; p < parts.length; p += 1) {
      from = q.indexOf(parts[p], from);
      if (from < 0) break;
      from += parts[p].length;
    }
    return from >= 0 || parts.some(function (part) { return part.indexOf(q) >= 0; });
  }

  /*
   * Entries that quote the pasted line exactly (it holds one of their error strings, or is part
   * of one), best first: an entry's own error strings before those it only mentions, then the
   * closer in length, a match with the numbers set aside counting LOOSE of an exact one (so
   * `exitcode: -9` is not `exitcode: -11`, but a whole line with other sizes in it beats a
   * short string that it holds exactly). Pasted line and
   * error strings are made the same way first (normal), so a log's prefixes, paths and addresses
   * do not count.
   */
  function owners(eng, text) {
    var q = normal(eng, text);
    if (q.length < ERROR_MIN) return [];
    if (!eng.errorLines) eng.errorLines = errorLines(eng);
    var loose = q.replace(NUMBER, '0');
    var numbers = q.match(NUMBER) || [];
    var found = [];
    eng.errorLines.forEach(function (lines, i) {
      var best = null;
      var quoted = null;  /* the best error string matched, which the result shows */
      lines.forEach(function (line) {
        var exact = holds(q, line.exact);
        if (!exact && !holds(loose, line.loose)) return;
        var rank = 10 * line.tier + (exact ? 1 : LOOSE) *
          Math.min(q.length, line.length) / Math.max(q.length, line.length);
        /* Of two loose matches, the one with more of the line's own numbers (an Xid, an
           errno, an exit code) wins. */
        if (!exact && numbers.length) {
          rank += (1 - LOOSE) / 2 * numbers.filter(function (n) {
            return line.numbers.indexOf(n) >= 0;
          }).length / numbers.length;
        }
        if (!best || rank > best.rank) best = { rank: rank, line: line };
        if (line.name !== 'title' && (!quoted || rank > quoted.rank)) {
          quoted = { rank: rank, line: line };
        }
      });
      if (!best) return;
      var shown = quoted ? field(eng, i, quoted.line.name)[quoted.line.k] : null;
      found.push({ at: i, rank: best.rank, error: shown });
    });
    return found.sort(function (a, b) { return b.rank - a.rank; });
  }

  function fullSearch(eng, text, combineWith) {
    var hits = [];
    eng.minis.forEach(function (mini) {
      hits = hits.concat(mini.search(text, searchOptions(combineWith)));
    });
    hits.forEach(function (h) { h.at = eng.byId[h.id]; });
    return hits.sort(function (a, b) { return b.score - a.score; });
  }

  /* Entries for a query, best first: the owners of a pasted error line, then the index's (or
     the scan's) hits; all words must match, and when none does, any word may. */
  function query(eng, text) {
    var hits;
    text = text.slice(0, QUERY_MAX);
    if (eng.complete) {
      hits = fullSearch(eng, text, 'AND');
      if (!hits.length) hits = fullSearch(eng, text, 'OR');
    } else {
      hits = scan(eng, text);
    }
    var first = owners(eng, text);
    /* Whether the query reads as a pasted error that no entry quotes: render() says so. */
    hits.unquoted = !first.length && normal(eng, text).length >= ERROR_MIN;
    if (!first.length) return hits;
    var byAt = {};
    hits.forEach(function (h) { byAt[h.at] = h; });
    var top = first.map(function (o) {
      var hit = byAt[o.at] || { at: o.at, score: 0, queryTerms: words(eng, text), match: null };
      hit.error = o.error;
      return hit;
    });
    var shown = {};
    top.forEach(function (h) { shown[h.at] = true; });
    return top.concat(hits.filter(function (h) { return !shown[h.at]; }));
  }

  /* The ids a query finds, best first, as the boxes rank them; null until the index (or its
     first scan) is loaded: for tests/browser/test_search_browser.py, which pastes every
     entry's error lines in one page load. */
  window.NanopediaSearchIds = function (text) {
    if (!engine) return null;
    return query(engine, text).map(function (hit) { return field(engine, hit.at, 'id'); });
  };

  /* Tags for a tag-like query: a few words (or #word), every one starting a name of the tag. */
  function matchingTags(eng, text) {
    var qs = text.replace(/^\s*#/, '').toLowerCase().split(SPLIT).filter(Boolean);
    if (!qs.length || qs.length > TAG_WORDS) return [];
    return eng.tags.filter(function (tag) {
      var names = (tag[0] + ' ' + tag[1].toLowerCase()).split(SPLIT);
      return qs.every(function (w) {
        return names.some(function (n) { return n.length && n.indexOf(w) === 0; });
      });
    }).slice(0, 5);
  }

  /* Appends text to el, with the words that are index terms of the hit wrapped in <mark>. */
  function appendMarked(el, text, terms) {
    text.split(SEPARATOR).forEach(function (part, i) {
      if (!part) return;
      if (i % 2 === 0 && terms[part.toLowerCase()]) {
        var mark = document.createElement('mark');
        mark.textContent = part;
        el.appendChild(mark);
      } else {
        el.appendChild(document.createTextNode(part));
      }
    });
  }

  /*
   * How many of the query's words the text matches, each counted once: `dtype` and `dtypes`
   * both match the query word `dtype` and count as one.
   */
  function countTerms(text, terms, queryTerms) {
    var seen = Object.create(null);
    var n = 0;
    text.split(SEPARATOR).forEach(function (part, i) {
      var word = part.toLowerCase();
      if (i % 2 !== 0 || !terms[word]) return;
      var source = queryTerms.filter(function (q) { return word.indexOf(q) === 0; })[0] || word;
      if (!seen[source]) { seen[source] = true; n += 1; }
    });
    return n;
  }

  /* The field to show under the title: the one with the most matched words, then by SHOWN. */
  function bestField(eng, hit, terms) {
    var best = null;
    SHOWN.forEach(function (name) {
      var value = field(eng, hit.at, name);
      if (value === undefined) return;
      var items = Array.isArray(value) ? value : [value];
      items.forEach(function (item) {
        var n = countTerms(item, terms, hit.queryTerms);
        if (n && (!best || n > best.n)) best = { name: name, text: item, n: n };
      });
    });
    return best;
  }

  /* At most SNIPPET characters of text, around its first matched word. */
  function snippet(text, terms) {
    if (text.length <= SNIPPET) return text;
    var parts = text.split(SEPARATOR);
    var offset = 0;
    for (var i = 0; i < parts.length; i += 1) {
      if (i % 2 === 0 && terms[parts[i].toLowerCase()]) break;
      offset += parts[i].length;
    }
    if (i === parts.length) offset = 0;
    var start = Math.max(0, Math.min(offset - 40, text.length - SNIPPET));
    var cut = text.slice(start, start + SNIPPET);
    return (start > 0 ? '… ' : '') + cut + (start + SNIPPET < text.length ? ' …' : '');
  }

  function link(pattern, id) {
    return pattern.split('{id}').join(encodeURIComponent(id));
  }

  /* The link is the option itself (its <li> is presentational): an option may not hold a
     focusable link, and the link is what a click or Enter follows. Options are made in
     batch.items, a fragment, and added to batch.list together: one change of the page. */
  function option(batch, href, cls) {
    var li = document.createElement('li');
    li.setAttribute('role', 'none');
    li.className = cls;
    var a = document.createElement('a');
    a.setAttribute('role', 'option');
    a.setAttribute('aria-selected', 'false');
    a.id = batch.list.id + '-' + (batch.list.children.length + batch.items.childNodes.length);
    a.href = href;
    a.tabIndex = -1;
    li.appendChild(a);
    batch.items.appendChild(li);
    return a;
  }

  /* A result: its title, its quick answer, and the field that matched with the words marked. */
  function addEntry(batch, form, eng, hit) {
    if (!hit.match) hit.match = scanMatch(eng, hit);
    var terms = Object.create(null);
    Object.keys(hit.match).forEach(function (t) { terms[t] = true; });
    var id = field(eng, hit.at, 'id');
    var a = option(batch, link(form.getAttribute('data-entry'), id), 'search-entry');
    var title = document.createElement('span');
    title.className = 'search-title';
    appendMarked(title, field(eng, hit.at, 'title'), terms);
    a.appendChild(title);
    var quick = field(eng, hit.at, 'answer');
    if (quick) {
      var answer = document.createElement('span');
      answer.className = 'search-answer';
      answer.textContent = quick;
      a.appendChild(answer);
    }
    /* The error string a pasted line matched is the field to show. */
    var matched = hit.error ? { name: 'errors', text: hit.error } : bestField(eng, hit, terms);
    if (matched) {
      var line = document.createElement('span');
      line.className = 'search-field search-field-' + matched.name;
      var label = document.createElement('span');
      label.className = 'search-label';
      label.textContent = LABELS[matched.name];
      line.appendChild(label);
      line.appendChild(document.createTextNode(' '));
      var text = document.createElement(matched.name === 'errors' ? 'code' : 'span');
      appendMarked(text, snippet(matched.text, terms), terms);
      line.appendChild(text);
      a.appendChild(line);
    }
  }

  function addTag(batch, form, tag) {
    var a = option(batch, link(form.getAttribute('data-tag'), tag[0]), 'search-tag');
    a.textContent = '#' + tag[1] + ' (' + tag[2] + (tag[2] === 1 ? ' entry)' : ' entries)');
  }

  /* A paste of `text` that reads as a log (LOG_LINES non-blank lines, LOG_MARK), else null:
     {text, lines, value}, value being what the box held after the paste (null until the input
     event that follows it says; a text input keeps the lines joined by spaces). */
  function pastedLog(text, value) {
    var lines = text.split(/\r\n|\r|\n/).filter(function (line) { return line.trim(); });
    if (lines.length < LOG_LINES || !LOG_MARK.test(text)) return null;
    return { text: text, lines: lines.length, value: value };
  }

  /* The offer to diagnose a pasted log, first in the list: following it leaves the text in
     sessionStorage for diagnose.js. Where the browser refuses to keep it (too large, storage
     off), the first click says so instead, and the next one opens the page to paste it in. */
  function addDiagnose(batch, form, log) {
    var a = option(batch, form.getAttribute('data-diagnose'), 'search-diagnose');
    a.textContent = 'Diagnose this log (' + log.lines + ' lines) on the diagnose page; it ' +
      'stays in this browser';
    a.addEventListener('click', function (ev) {
      if (log.refused) return;
      try {
        window.sessionStorage.setItem(CARRIED, log.text);
      } catch (err) {
        log.refused = true;
        ev.preventDefault();
        a.textContent = 'This browser would not keep the log for the diagnose page (' +
          err.name + '); choose this again to open the page, and paste the log there';
      }
    });
    return a;
  }

  function resultsHref(form, text) {
    return form.getAttribute('data-results') + '?q=' + encodeURIComponent(text);
  }

  /* Wires one search form: an input (a combobox), a list of options and a status line. */
  function setup(form) {
    var input = form.querySelector('input.search-input');
    var list = form.querySelector('[role=listbox]');
    var status = form.querySelector('.search-status');
    var page = form.hasAttribute('data-page');
    var active = -1;
    var shownFor = null;
    var renders = 0;
    /* A log pasted into the box (pastedLog): it is offered for diagnosis while the box still
       holds it. A paste made before this code came, search-boot.js kept (form.pasted); from now
       on the listener below keeps them. */
    var log = form.pasted ? pastedLog(form.pasted, input.value.trim()) : null;
    form.onpaste = null;
    delete form.pasted;

    function options() { return list.querySelectorAll('[role=option]'); }

    function setActive(i) {
      var opts = options();
      if (active >= 0 && opts[active]) opts[active].setAttribute('aria-selected', 'false');
      active = opts.length ? (i + opts.length) % opts.length : -1;
      if (active >= 0) {
        opts[active].setAttribute('aria-selected', 'true');
        input.setAttribute('aria-activedescendant', opts[active].id);
        opts[active].scrollIntoView({ block: 'nearest' });
      } else {
        input.removeAttribute('aria-activedescendant');
      }
    }

    function show(open) {
      list.hidden = !open;
      input.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (!open) { active = -1; input.removeAttribute('aria-activedescendant'); }
    }

    function say(text) { if (status) status.textContent = text; }

    function holdsLog(text) { return log !== null && log.value === text; }

    /* The offer to diagnose the pasted log, first in the (emptied) list; its link. */
    function offer() {
      var batch = { list: list, items: document.createDocumentFragment() };
      var a = addDiagnose(batch, form, log);
      list.appendChild(batch.items);
      return a;
    }

    function update() {
      var text = input.value.trim();
      if (log && log.value === null) log.value = text;
      if (text === shownFor) return;
      if (!text) {
        shownFor = text;
        list.textContent = '';
        setActive(-1);  /* no option left to point at (the results page keeps its list open) */
        show(page);
        say('');
        return;
      }
      if (holdsLog(text)) {
        /* It needs no index: offered while the index loads, or if it cannot. */
        list.textContent = '';
        offer();
        show(true);
      }
      say('Loading the search index…');
      withEngine(form, function (eng) {
        text = input.value.trim();
        if (text === shownFor) return;
        shownFor = text;
        render(eng, text);
      }, function (message) { say('Search is unavailable: ' + message); });
    }

    /* Shows the results for text: the FIRST ones now, the others (unless `whole`) in the next
       task, when no newer render has come in between. */
    function render(eng, text, whole) {
      var turn = ++renders;
      active = -1;
      input.removeAttribute('aria-activedescendant');
      var tags = matchingTags(eng, text);
      var hits = text ? query(eng, text) : [];
      var limit = page ? RESULTS : SUGGESTIONS;
      var shown = hits.slice(0, limit);
      var now = whole ? shown.length : FIRST;
      var offered = holdsLog(text);
      function add(some, last) {
        var batch = { list: list, items: document.createDocumentFragment() };
        some.forEach(function (hit) { addEntry(batch, form, eng, hit); });
        if (last) {
          tags.slice(0, page ? tags.length : 3).forEach(function (tag) { addTag(batch, form, tag); });
          if (!page && text && !offered) {
            var all = option(batch, resultsHref(form, text), 'search-all');
            all.textContent = hits.length > limit
              ? 'All ' + hits.length + ' results for “' + text + '”'
              : 'Open the results page for “' + text + '”';
          }
        }
        list.appendChild(batch.items);
      }
      list.textContent = '';
      if (offered) offer();
      var unquoted = hits.unquoted && shown.length > 0;
      if (unquoted) {
        /* Seen above the results; the status line says it to assistive technology (a listbox
           holds options only). */
        var note = document.createElement('li');
        note.className = 'search-note';
        note.setAttribute('role', 'none');
        note.setAttribute('aria-hidden', 'true');
        note.textContent = UNQUOTED;
        list.appendChild(note);
      }
      add(shown.slice(0, now), now >= shown.length);
      if (now < shown.length) {
        setTimeout(function () { if (turn === renders) add(shown.slice(now), true); }, 0);
      }
      var count = hits.length === 1 ? '1 entry' : hits.length + ' entries';
      say(text ? (offered ? 'A pasted log: the first option diagnoses it. ' : '') +
        (unquoted ? UNQUOTED + ' ' : '') + count + ' found for “' + text + '”' : '');
      show(page || list.children.length > 0);
    }

    /* The answers or the whole index came: show the results again, keeping the selected link
       (all at once only then, so that it is there to select; drawing a hundred results took
       the page 80 ms at 10,000 entries). */
    upgraded.push(function (eng) {
      if (!shownFor || !document.contains(form)) return;
      var opts = options();
      var href = active >= 0 && opts[active] ? opts[active].href : null;
      var wasOpen = !list.hidden;
      render(eng, shownFor, href !== null);
      show(wasOpen);
      Array.prototype.forEach.call(options(), function (opt, i) {
        if (href && opt.href === href) setActive(i);
      });
    });

    /* A click, not a navigation to a.href: the single-file router resolves the link. */
    function open(opt) {
      if (opt) opt.click();
    }

    input.addEventListener('paste', function (ev) {
      var text = ev.clipboardData ? ev.clipboardData.getData('text/plain') : '';
      log = pastedLog(text, null);
      shownFor = null;  /* the same text pasted again is offered again */
    });
    input.addEventListener('input', update);
    input.addEventListener('focus', function () {
      withEngine(form, function () {}, function () {});
      if (!page && input.value.trim() && list.children.length) show(true);
    });
    input.addEventListener('keydown', function (ev) {
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        if (list.hidden && list.children.length) show(true);
        setActive(active + (ev.key === 'ArrowDown' ? 1 : -1));
        ev.preventDefault();
      } else if (ev.key === 'Enter') {
        ev.preventDefault();
        var text = input.value.trim();
        if (active >= 0) open(options()[active]);
        else if (holdsLog(text)) open(list.querySelector('.search-diagnose > a') || offer());
        else if (page) setActive(0);
        else if (text) window.location.href = resultsHref(form, text);
      } else if (ev.key === 'Escape') {
        if (!page && !list.hidden) show(false);
        else { input.value = ''; update(); }
        ev.preventDefault();
      }
    });
    form.addEventListener('submit', function (ev) { ev.preventDefault(); });
    list.addEventListener('mousedown', function (ev) { ev.preventDefault(); });
    if (!page) {
      form.addEventListener('focusout', function (ev) {
        if (!form.contains(ev.relatedTarget)) show(false);
      });
    }
    form.hidden = false;
    if (page) {
      var hash = window.location.hash;
      var search = window.location.search ||
        (hash.indexOf('?') >= 0 ? hash.slice(hash.indexOf('?')) : '');
      var given = new URLSearchParams(search).get('q');
      if (given) input.value = given;
    }
    /* search-boot.js loads this file on the first focus: the reader may be typing already. */
    var focused = document.activeElement === input;
    if (focused) withEngine(form, function () {}, function () {});
    if ((page || focused || log) && input.value.trim()) update();
  }

  /* Wires every search form not wired yet; the single-file router adds pages later. */
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll('form[data-search]'), function (form) {
      if (form.hasAttribute('data-ready')) return;
      form.setAttribute('data-ready', '');
      setup(form);
    });
  }

  document.addEventListener('nanopedia:page', start);

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}());
