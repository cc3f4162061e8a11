/* Shows the search forms; the first focus of one (or the results page) loads search.css,
   search.js and the index. */
(function () {
  'use strict';
  var loaded = false;

  function add(tag, key, url) {
    var el = document.createElement(tag);
    if (key === 'href') el.rel = 'stylesheet';
    el[key] = url;
    el.onerror = el.remove;
    document.head.appendChild(el);
  }

  function load(form) {
    if (loaded || window.NanopediaSearchLoaded) return;
    loaded = true;
    add('link', 'href', form.getAttribute('data-style'));
    add('script', 'src', form.getAttribute('data-index'));
    add('script', 'src', form.getAttribute('data-script'));
  }

  document.querySelectorAll('form[data-search][data-script]').forEach(function (form) {
    form.hidden = false;
    if (form.hasAttribute('data-page')) load(form);
    form.addEventListener('focusin', function () { load(form); });
    /* Till search.js comes: no submit; a paste kept with its lines. */
    form.onsubmit = function () { return false; };
    form.onpaste = function (e) { form.pasted = e.clipboardData.getData('text'); };
  });
}());
