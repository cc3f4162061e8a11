/* Shows the search forms (hidden without JavaScript) and loads search.js and search.css on
   the first focus of one, or at once on the results page: pages stay light until then. */
(function () {
  'use strict';
  var loaded = false;

  function load(form) {
    if (loaded || window.NanopediaSearchLoaded) return;
    loaded = true;
    var css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = form.getAttribute('data-style');
    document.head.appendChild(css);
    var js = document.createElement('script');
    js.src = form.getAttribute('data-script');
    document.head.appendChild(js);
  }

  function start() {
    var forms = document.querySelectorAll('form[data-search][data-script]');
    Array.prototype.forEach.call(forms, function (form) {
      form.hidden = false;
      if (form.hasAttribute('data-page')) load(form);
      form.addEventListener('focusin', function () { load(form); });
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}());
