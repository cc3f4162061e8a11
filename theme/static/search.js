/*
 * Nanopedia search: the box in every page header and the results page (search.html).
 *
 * Runs from file:// and under a CSP without 'unsafe-inline': a plain script (no modules, no
 * eval), data from search-index.js (it sets window.NANOPEDIA_SEARCH; fetch is blocked on
 * file://) and the vendored MiniSearch UMD build (it sets window.MiniSearch). Both are loaded the
 * first time a reader uses a search box, so pages stay light at 10,000 entries; the results page
 * and the single-file bundle have them already.
 *
 * Entry text is untrusted: results are built from DOM text nodes and <mark> elements, never from
 * HTML strings. Every link is made from the form's data-* patterns, which the templates write
 * relative to the page (or as fragments in the single-file bundle), so they work at any depth.
 */
(function () {
  'use strict';
  window.NanopediaSearchLoaded = true;

  /* Ranking: a hit in the title or an exact error string counts most. */
  var BOOST = { title: 4, errors: 4, aliases: 3, tags: 2, symptoms: 1.5, causes: 1, summary: 1 };
  /* Which matching field a result shows under its title, in order of preference. */
  var SHOWN = ['errors', 'symptoms', 'summary', 'causes', 'tags', 'aliases'];
  var LABELS = {
    errors: 'Error', symptoms: 'Symptom', summary: 'Summary', causes: 'Cause',
    tags: 'Tags', aliases: 'Former id'
  };
  /* Words too common to rank by; dropped from documents and queries alike. */
  var STOP = {};
  ('a an and are as at be but by for from has have in into is it its of on or than that the ' +
   'then there these this to was were when which while with').split(' ').forEach(function (w) {
    STOP[w] = true;
  });
  /* The separators MiniSearch's default tokenizer splits on; highlighting splits the same way. */
  var SEPARATOR = /([\n\r\p{Z}\p{P}]+)/u;
  var SUGGESTIONS = 8;
  var RESULTS = 100;
  var SNIPPET = 180;

  var CHUNK = 250;

  var engine = null;
  var pending = [];
  var upgraded = [];
  var loading = false;

  function processTerm(term) {
    var t = term.toLowerCase();
    return STOP[t] ? null : t;
  }

  function searchOptions(combineWith) {
    return {
      boost: BOOST,
      combineWith: combineWith,
      prefix: function (term) { return term.length > 1; },
      /* One typo; a swap of two letters counts as two edits, allowed in words of 8 or more. */
      fuzzy: function (term) { return term.length < 4 ? 0 : (term.length < 8 ? 1 : 2); }
    };
  }

  /* A MiniSearch over documents that are arrays, their positions named by `at`. */
  function newEngine(at, fields, docs, complete) {
    var mini = new window.MiniSearch({
      idField: 'id',
      fields: fields,
      extractField: function (doc, name) {
        var value = doc[at[name]];
        return Array.isArray(value) ? value.join('\n') : value;
      },
      processTerm: processTerm
    });
    var byId = {};
    docs.forEach(function (doc) { byId[doc[0]] = doc; });
    return {
      mini: mini, at: at, byId: byId, tags: window.NANOPEDIA_SEARCH.tags, complete: complete
    };
  }

  function positions(names) {
    var at = {};
    names.forEach(function (name, i) { at[name] = i; });
    return at;
  }

  function loadScript(src, done) {
    var el = document.createElement('script');
    el.src = src;
    el.onload = done;
    el.onerror = function () { fail('could not load ' + src); };
    document.head.appendChild(el);
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
   * Calls ok(engine) once something can be searched: first an index of the short fields of
   * search/index.js; then the text shards load and a full index is built a chunk at a time, and
   * replaces it (each form is told through `upgraded`). When every shard is already on the page
   * (the single-file bundle), the full index is built at once.
   */
  function withEngine(form, ok, failed) {
    if (engine) { ok(engine); return; }
    pending.push({ ok: ok, fail: failed || function () {} });
    if (loading) return;
    loading = true;
    announce('loading');
    var index = form.getAttribute('data-index') || '';
    var base = index.slice(0, index.lastIndexOf('/') + 1);
    var needed = [];
    if (!window.MiniSearch) needed.push(form.getAttribute('data-library'));
    if (!window.NANOPEDIA_SEARCH) needed.push(index);
    (function next() {
      if (needed.length) { loadScript(needed.shift(), next); return; }
      var data = window.NANOPEDIA_SEARCH;
      var text = data.text;
      var shards = window.NANOPEDIA_SEARCH_TEXT || [];
      var all = positions(data.fields.concat(text.fields));
      var fields = Object.keys(BOOST);
      if (text.shards.every(function (name, k) { return shards[k]; })) {
        var docs = data.docs.map(function (key, i) {
          return key.concat(shards[Math.floor(i / text.shard_size)][i % text.shard_size]);
        });
        var full = newEngine(all, fields, docs, true);
        full.mini.addAll(docs);
        ready(full);
        return;
      }
      var quickFields = fields.filter(function (f) { return data.fields.indexOf(f) >= 0; });
      var quick = newEngine(positions(data.fields), quickFields, data.docs, false);
      quick.mini.addAll(data.docs);
      ready(quick);
      buildFull(data, all, fields, base);
    })();
  }

  /* Loads the text shards one by one and indexes them a chunk per task, then swaps engines. */
  function buildFull(data, at, fields, base) {
    var text = data.text;
    var eng = newEngine(at, fields, [], true);
    var shard = 0;
    var offset = 0;
    function step() {
      var shards = window.NANOPEDIA_SEARCH_TEXT || [];
      if (shard === text.shards.length) {
        engine = eng;
        announce('complete');
        upgraded.forEach(function (fn) { fn(eng); });
        return;
      }
      if (!shards[shard]) { loadScript(base + text.shards[shard], step); return; }
      var start = shard * text.shard_size;
      var chunk = shards[shard].slice(offset, offset + CHUNK).map(function (rest, i) {
        var doc = data.docs[start + offset + i].concat(rest);
        eng.byId[doc[0]] = doc;
        return doc;
      });
      eng.mini.addAll(chunk);
      offset += CHUNK;
      if (offset >= shards[shard].length) { shard += 1; offset = 0; }
      window.setTimeout(step, 0);
    }
    step();
  }

  /* Entries for a query, best first: all words must match; when none does, any word may. */
  function query(eng, text) {
    var hits = eng.mini.search(text, searchOptions('AND'));
    if (!hits.length) hits = eng.mini.search(text, searchOptions('OR'));
    return hits;
  }

  /* Tags whose slug or title starts with one of the query's words. */
  function matchingTags(eng, text) {
    var words = text.toLowerCase().split(SEPARATOR).filter(function (w, i) {
      return i % 2 === 0 && w.length > 1;
    });
    if (!words.length) return [];
    return eng.tags.filter(function (tag) {
      var names = (tag[0] + ' ' + tag[1].toLowerCase()).split(SEPARATOR);
      return words.some(function (w) {
        return tag[0] === w || names.some(function (n) { return n.length && n.indexOf(w) === 0; });
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
    var seen = {};
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
    var doc = eng.byId[hit.id];
    var best = null;
    SHOWN.forEach(function (name) {
      var value = doc[eng.at[name]];
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
     focusable link, and the link is what a click or Enter follows. */
  function option(list, href, cls) {
    var li = document.createElement('li');
    li.setAttribute('role', 'none');
    li.className = cls;
    var a = document.createElement('a');
    a.setAttribute('role', 'option');
    a.setAttribute('aria-selected', 'false');
    a.id = list.id + '-' + list.children.length;
    a.href = href;
    a.tabIndex = -1;
    li.appendChild(a);
    list.appendChild(li);
    return a;
  }

  function addEntry(list, form, eng, hit) {
    var terms = {};
    Object.keys(hit.match).forEach(function (t) { terms[t] = true; });
    var doc = eng.byId[hit.id];
    var a = option(list, link(form.getAttribute('data-entry'), hit.id), 'search-entry');
    var title = document.createElement('span');
    title.className = 'search-title';
    appendMarked(title, doc[eng.at.title], terms);
    a.appendChild(title);
    var field = bestField(eng, hit, terms);
    if (field) {
      var line = document.createElement('span');
      line.className = 'search-field search-field-' + field.name;
      var label = document.createElement('span');
      label.className = 'search-label';
      label.textContent = LABELS[field.name];
      line.appendChild(label);
      line.appendChild(document.createTextNode(' '));
      var text = document.createElement(field.name === 'errors' ? 'code' : 'span');
      appendMarked(text, snippet(field.text, terms), terms);
      line.appendChild(text);
      a.appendChild(line);
    }
  }

  function addTag(list, form, tag) {
    var a = option(list, link(form.getAttribute('data-tag'), tag[0]), 'search-tag');
    a.textContent = '#' + tag[1] + ' (' + tag[2] + (tag[2] === 1 ? ' entry)' : ' entries)');
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

    function update() {
      var text = input.value.trim();
      if (text === shownFor) return;
      if (!text) {
        shownFor = text;
        list.textContent = '';
        show(page);
        say('');
        return;
      }
      say('Loading the search index…');
      withEngine(form, function (eng) {
        text = input.value.trim();
        if (text === shownFor) return;
        shownFor = text;
        render(eng, text);
      }, function (message) { say('Search is unavailable: ' + message); });
    }

    function render(eng, text) {
      list.textContent = '';
      active = -1;
      input.removeAttribute('aria-activedescendant');
      var tags = matchingTags(eng, text);
      var hits = text ? query(eng, text) : [];
      var limit = page ? RESULTS : SUGGESTIONS;
      hits.slice(0, limit).forEach(function (hit) { addEntry(list, form, eng, hit); });
      tags.slice(0, page ? tags.length : 3).forEach(function (tag) { addTag(list, form, tag); });
      if (!page && text) {
        var all = option(list, resultsHref(form, text), 'search-all');
        all.textContent = hits.length > limit
          ? 'All ' + hits.length + ' results for “' + text + '”'
          : 'Open the results page for “' + text + '”';
      }
      var count = hits.length === 1 ? '1 entry' : hits.length + ' entries';
      say(text ? count + ' found for “' + text + '”' : '');
      show(page || list.children.length > 0);
    }

    /* The full index replaced the first one: show its answer, keeping the selected link. */
    upgraded.push(function (eng) {
      if (!shownFor || !document.contains(form)) return;
      var opts = options();
      var href = active >= 0 && opts[active] ? opts[active].href : null;
      var wasOpen = !list.hidden;
      render(eng, shownFor);
      show(wasOpen);
      Array.prototype.forEach.call(options(), function (opt, i) {
        if (href && opt.href === href) setActive(i);
      });
    });

    /* A click, not a navigation to a.href: the single-file router resolves the link. */
    function open(opt) {
      if (opt) opt.click();
    }

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
    if ((page || focused) && input.value.trim()) update();
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
