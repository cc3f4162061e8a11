// An entry as the site renders it, for the answer view: the `<article class="entry">` of the
// built page (engine/site/entries/ID.html, copied from a `nanopedia build` when the extension is
// packaged), and where each of its links leads once it is shown inside the editor.
'use strict';

const OPEN = '<article class="entry">';
const CLOSE = '</article>';

/** The entry's article from the site's page, or null when the page has none (a redirect). */
function article(page) {
  const start = page.indexOf(OPEN);
  const end = page.lastIndexOf(CLOSE);
  return start < 0 || end < start ? null : page.slice(start, end + CLOSE.length);
}

/** The id a redirect page of the site (a renamed entry) sends to, else null. */
function movedTo(page) {
  const found = /<meta http-equiv="refresh" content="0; url=([a-z0-9-]+)\.html"/.exec(page);
  return found ? found[1] : null;
}

/**
 * Where a link of an entry page leads, seen from the page `entries/ID.html`:
 * {entry, anchor} for another entry (shown in the view), {anchor} within the page,
 * {external} for an absolute http(s) address, {site: path} for another page of the site
 * (opened under the site URL when one is set).
 */
function target(href) {
  if (href.startsWith('#')) return { anchor: href.slice(1) };
  if (/^https?:\/\//i.test(href)) return { external: href };
  const [where, anchor] = href.split('#');
  const entry = /^(?:\.\.\/entries\/)?([a-z0-9][a-z0-9-]*)\.html$/.exec(where);
  if (entry) return { entry: entry[1], anchor: anchor || null };
  const path = where.startsWith('../') ? where.slice(3) : `entries/${where}`;
  return { site: path + (anchor ? `#${anchor}` : '') };
}

module.exports = { article, movedTo, target };
