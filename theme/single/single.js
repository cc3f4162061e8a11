/*
 * The single-file bundle's router: every page of the site is an inert <template id="page:PATH">;
 * this shows the one named by the location's fragment, `#/PATH` or `#/PATH#ANCHOR`.
 *
 * Pages keep the site's relative links (`../tags/bf16.html`, `#cause-x`): a click is resolved
 * against the path of the page shown, exactly as a browser would resolve it on the real site,
 * and becomes a fragment. Only links to other sites leave the file. After a page is shown, a
 * `nanopedia:page` event lets search.js wire the forms it contains.
 */
(function () {
  'use strict';

  var HOME = 'index.html';
  var main = document.getElementById('main');
  var shown = null;

  function template(path) {
    return document.getElementById('page:' + path);
  }

  /* `#/entries/x.html#cause-y` → { path: 'entries/x.html', query: '', anchor: 'cause-y' } */
  function parse(hash) {
    var raw = decodeURIComponent(hash.replace(/^#\/?/, ''));
    var at = raw.indexOf('#');
    var anchor = at >= 0 ? raw.slice(at + 1) : '';
    var path = at >= 0 ? raw.slice(0, at) : raw;
    var q = path.indexOf('?');
    return {
      path: q >= 0 ? path.slice(0, q) : path,
      query: q >= 0 ? path.slice(q) : '',
      anchor: anchor
    };
  }

  function show() {
    var hash = window.location.hash;
    var where = parse(hash);
    if (hash && !/^#\//.test(hash)) {
      /* A plain #anchor (the skip link): stay on the page shown. */
      if (shown) { scrollTo(hash.slice(1)); return; }
      where = { path: HOME, query: '', anchor: hash.slice(1) };
    }
    var tpl = template(where.path) || template(HOME);
    var key = tpl.id + where.query;
    if (key !== shown) {
      shown = key;
      main.textContent = '';
      main.appendChild(tpl.content.cloneNode(true));
      document.title = tpl.getAttribute('data-title');
      document.dispatchEvent(new CustomEvent('nanopedia:page', { detail: { query: where.query } }));
    }
    scrollTo(where.anchor);
  }

  function scrollTo(anchor) {
    var target = anchor && document.getElementById(anchor);
    if (target) { target.scrollIntoView(); return; }
    window.scrollTo(0, 0);
    main.focus({ preventScroll: true });
  }

  function current() {
    return shown ? shown.replace(/^page:/, '').replace(/\?.*$/, '') : HOME;
  }

  document.addEventListener('click', function (ev) {
    var a = ev.target.closest && ev.target.closest('a[href]');
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey) return;
    var href = a.getAttribute('href');
    if (/^#\//.test(href) || href === '#main') return;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return;
    var url = new URL(href, 'https://bundle.invalid/' + current());
    var path = url.pathname.replace(/^\//, '') || HOME;
    ev.preventDefault();
    window.location.hash = '/' + path + url.search + url.hash;
  });
  window.addEventListener('hashchange', show);
  show();
}());
