// The part of the DOM that theme/static/search.js uses, for running it under Node: elements
// with attributes, children, text and listeners, selectors of compounds (`form[data-search]`,
// `input.search-input`, `[role=option]`) and the child combinator (`li.x > a`), fragments, and a document whose scripts load from a
// table of files as tasks of the page's own queue. Shared by the Node tests; not a test file.
'use strict';

class Node {
  constructor(doc) {
    this.ownerDocument = doc;
    this.childNodes = [];
    this.parentNode = null;
  }

  appendChild(child) {
    if (child instanceof Fragment) {
      for (const c of [...child.childNodes]) this.appendChild(c);
      return child;
    }
    if (child.parentNode) child.parentNode.removeChild(child);
    child.parentNode = this;
    this.childNodes.push(child);
    if (this.ownerDocument && this.ownerDocument.attached) this.ownerDocument.attached(child, this);
    return child;
  }

  removeChild(child) {
    this.childNodes = this.childNodes.filter((c) => c !== child);
    child.parentNode = null;
    return child;
  }

  remove() {
    if (this.parentNode) this.parentNode.removeChild(this);
  }

  get textContent() {
    return this.childNodes.map((c) => c.textContent).join('');
  }

  set textContent(value) {
    for (const c of this.childNodes) c.parentNode = null;
    this.childNodes = [];
    if (String(value) !== '') this.appendChild(new Text(this.ownerDocument, value));
  }

  contains(node) {
    for (let n = node; n; n = n.parentNode) if (n === this) return true;
    return false;
  }
}

class Text extends Node {
  constructor(doc, data) {
    super(doc);
    this.data = String(data);
  }

  get textContent() {
    return this.data;
  }
}

class Fragment extends Node {}

/* `tag.class[attr][attr=value]`: each part optional, no combinators. */
const SELECTOR = /^([a-z]*)((?:\.[\w-]+)*)((?:\[[\w-]+(?:=[\w-]+)?\])*)$/;

/* A compound, or compounds joined by ` > ` (each the parent of the next). */
function matcher(selector) {
  const parts = selector.split(/\s*>\s*/);
  if (parts.length > 1) {
    const own = compound(parts.pop());
    const parent = matcher(parts.join(' > '));
    return (el) => own(el) && el.parentNode !== null && parent(el.parentNode);
  }
  return compound(selector);
}

function compound(selector) {
  const m = SELECTOR.exec(selector);
  if (!selector || !m) throw new Error(`selector not supported by tests/js/dom.js: '${selector}'`);
  const classes = m[2].split('.').filter(Boolean);
  const attrs = [...m[3].matchAll(/\[([\w-]+)(?:=([\w-]+))?\]/g)];
  return (el) => el instanceof Element &&
    (!m[1] || el.tagName === m[1].toUpperCase()) &&
    classes.every((c) => el.className.split(/\s+/).includes(c)) &&
    attrs.every(([, name, value]) => el.hasAttribute(name) &&
      (value === undefined || el.getAttribute(name) === value));
}

/* A browser refuses an element or attribute name that is not one (InvalidCharacterError). */
function name(text) {
  if (!/^[a-z#][a-z0-9-]*$/i.test(text)) throw new Error(`InvalidCharacterError: '${text}'`);
  return text;
}

class Element extends Node {
  constructor(doc, tag) {
    super(doc);
    name(tag);
    this.tagName = tag.toUpperCase();
    this.attributes = new Map();
    this.listeners = new Map();
    this.hidden = false;
    this.value = '';
    this.tabIndex = 0;
  }

  get children() {
    return this.childNodes.filter((n) => n instanceof Element);
  }

  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }

  setAttribute(attr, value) {
    this.attributes.set(name(attr), String(value));
  }

  hasAttribute(name) {
    return this.attributes.has(name);
  }

  removeAttribute(name) {
    this.attributes.delete(name);
  }

  get id() { return this.getAttribute('id') || ''; }
  set id(value) { this.setAttribute('id', value); }
  get className() { return this.getAttribute('class') || ''; }
  set className(value) { this.setAttribute('class', value); }
  get href() { return this.getAttribute('href') || ''; }
  set href(value) { this.setAttribute('href', value); }
  get src() { return this.getAttribute('src') || ''; }
  set src(value) { this.setAttribute('src', value); }

  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }

  /* Calls the listeners of `type` with an event of `fields`; the event, to read back. */
  dispatch(type, fields = {}) {
    const event = {
      type, target: this, defaultPrevented: false,
      preventDefault() { this.defaultPrevented = true; }, ...fields
    };
    for (const fn of this.listeners.get(type) || []) fn.call(this, event);
    return event;
  }

  click() {
    this.ownerDocument.clicked.push(this);
    this.dispatch('click');
  }

  /* A copy of a form with its input, list and status line (as a page the single-file
     router shows would have). */
  cloneForm() {
    const copy = this.ownerDocument.createElement(this.tagName.toLowerCase());
    for (const [k, v] of this.attributes) if (k !== 'data-ready' && k !== 'data-index-state') copy.setAttribute(k, v);
    copy.hidden = true;
    for (const child of this.children) {
      const c = this.ownerDocument.createElement(child.tagName.toLowerCase());
      for (const [k, v] of child.attributes) c.setAttribute(k, v);
      c.hidden = child.hidden;
      copy.appendChild(c);
    }
    return copy;
  }

  scrollIntoView(options) {
    this.ownerDocument.scrolled.push([this, options]);
  }

  querySelectorAll(selector) {
    const match = matcher(selector);
    const found = [];
    const walk = (node) => node.childNodes.forEach((c) => {
      if (match(c)) found.push(c);
      walk(c);
    });
    walk(this);
    return found;
  }

  querySelector(selector) {
    return this.querySelectorAll(selector)[0] || null;
  }
}

/* A document; `files` maps a script's src to its source, which `run` runs in the page when the
   script's load task comes (a src it lacks fails to load). */
class Document extends Element {
  constructor({ files = {}, run, queue }) {
    super(null, '#document');
    this.ownerDocument = this;
    this.readyState = 'complete';
    this.files = files;
    this.requested = [];
    this.clicked = [];
    this.scrolled = [];
    this.activeElement = null;
    this.head = this.appendChild(this.createElement('head'));
    this.body = this.appendChild(this.createElement('body'));
    this.attached = (child, parent) => {
      if (parent !== this.head || child.tagName !== 'SCRIPT' || !child.src) return;
      this.requested.push(child.src);
      queue(() => {
        if (!(child.src in this.files)) { child.dispatch('error'); return; }
        run(this.files[child.src]);
        child.dispatch('load');
      });
    };
  }

  createElement(tag) { return new Element(this, tag); }
  createTextNode(data) { return new Text(this, data); }
  createDocumentFragment() { return new Fragment(this); }
  get scripts() { return this.head.querySelectorAll('script'); }
}

/* An element from a tag and attributes (true: present and empty), its children appended. */
function build(doc, tag, attrs = {}, ...children) {
  const el = doc.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === undefined) continue;
    el.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) el.appendChild(child);
  return el;
}

module.exports = { Document, build };
