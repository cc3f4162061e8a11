/* Entry pages: the contents box marks the section read; code blocks get a Copy button. Plain
   script for file:// and the CSP; the single-file bundle reruns it (nanopedia:page). */
(function () {
  'use strict';

  /* A polite live region: screen readers hear "Copied" without moving focus. */
  function liveRegion() {
    var region = document.getElementById('copy-status');
    if (!region) {
      region = document.createElement('p');
      region.id = 'copy-status';
      region.className = 'visually-hidden';
      region.setAttribute('role', 'status');
      region.setAttribute('aria-live', 'polite');
      document.body.appendChild(region);
    }
    return region;
  }

  /* navigator.clipboard is refused on some file:// pages: copy a selected textarea. */
  function copyBySelection(text) {
    var area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'copy-buffer';
    document.body.appendChild(area);
    area.select();
    var ok;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    document.body.removeChild(area);
    return ok;
  }

  function copy(text, done) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); },
        function () { done(copyBySelection(text)); });
    } else {
      done(copyBySelection(text));
    }
  }

  function addCopyButtons(root) {
    var region = liveRegion();
    Array.prototype.forEach.call(root.querySelectorAll('pre'), function (pre) {
      if (pre.parentNode.classList.contains('code-block')) return;
      /* It may scroll: the keyboard must reach it. */
      if (!pre.hasAttribute('tabindex')) pre.setAttribute('tabindex', '0');
      var box = document.createElement('div');
      box.className = 'code-block';
      pre.parentNode.insertBefore(box, pre);
      box.appendChild(pre);
      var button = document.createElement('button');
      button.type = 'button';
      button.className = 'copy';
      button.textContent = 'Copy';
      button.addEventListener('click', function () {
        var text = (pre.querySelector('code') || pre).textContent;
        copy(text, function (ok) {
          button.textContent = region.textContent = ok ? 'Copied' : 'Copy failed';
          window.setTimeout(function () { button.textContent = 'Copy'; region.textContent = ''; }, 2000);
        });
      });
      box.appendChild(button);
    });
  }

  var observer = null;

  /* aria-current on the contents link of the first section in view. */
  function watchSections(root) {
    if (observer) observer.disconnect();
    var toc = root.querySelector('.toc');
    if (!toc || !window.IntersectionObserver) return;
    var links = {};
    var order = [];
    Array.prototype.forEach.call(toc.querySelectorAll('a[href^="#"]'), function (a) {
      var section = document.getElementById(a.getAttribute('href').slice(1));
      if (section) { links[section.id] = a; order.push(section); }
    });
    var visible = {};
    function mark() {
      var current = null;
      order.forEach(function (s) { if (visible[s.id]) current = current || s; });
      if (!current) return;
      Object.keys(links).forEach(function (id) {
        if (id === current.id) links[id].setAttribute('aria-current', 'true');
        else links[id].removeAttribute('aria-current');
      });
    }
    /* In view: crossing the band from 10% to 40% of the viewport height. */
    observer = new IntersectionObserver(function (changes) {
      changes.forEach(function (c) { visible[c.target.id] = c.isIntersecting; });
      mark();
    }, { rootMargin: '-10% 0px -60% 0px' });
    order.forEach(function (s) { observer.observe(s); });
  }

  function start() {
    var main = document.getElementById('main') || document.body;
    if (!main.querySelector('.entry')) return;
    addCopyButtons(main);
    watchSections(main);
  }

  document.addEventListener('nanopedia:page', start);
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}());
