/* The answer view's one script: its links ask the extension (log lines, entries, the site) and
   never navigate the view itself. */
(function () {
  'use strict';
  var vscode = acquireVsCodeApi();
  document.addEventListener('click', function (event) {
    var link = event.target.closest('a');
    if (!link) return;
    var d = link.dataset;
    var href = link.getAttribute('href') || '';
    var message = null;
    if (d.line) message = { type: 'reveal', file: d.file, line: Number(d.line) };
    else if (d.entry) message = { type: 'entry', id: d.entry };
    else if (d.site) message = { type: 'site', path: d.site };
    else if (d.source) message = { type: 'source', path: d.source };
    else if (href.charAt(0) === '#' && href.length > 1) {
      var anchor = document.getElementById(decodeURIComponent(href.slice(1)));
      if (anchor) anchor.scrollIntoView();
    } else if (href) message = { type: 'link', href: href };
    event.preventDefault();
    if (message) vscode.postMessage(message);
  });
}());
