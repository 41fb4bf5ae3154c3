// The console's DOM helpers: every node is built from text nodes and attributes, never from markup.

const SVG = 'http://www.w3.org/2000/svg';
/** An element with attributes and children; strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'href') node.setAttribute('href', safeHref(value));
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Links go only to the console's own views. */
function safeHref(value) {
  return typeof value === 'string' && value.startsWith('#/') ? value : '#/root';
}

export function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

export const num = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');
export const money = (n) => (typeof n === 'number' ? n.toFixed(6) : '—');
export const pct = (n) => (typeof n === 'number' ? `${(n * 100).toFixed(1)}%` : '—');
export const cell = (value, field, cls) => el('td', { class: cls, 'data-field': field }, value);

export function table(headers, rows, attrs = {}) {
  return el(
    'table',
    attrs,
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        headers.map((h) => el('th', { class: h.startsWith('#') ? 'num' : undefined }, h.replace(/^#/, ''))),
      ),
    ),
    el('tbody', {}, rows),
  );
}

export function meta(pairs) {
  return el(
    'dl',
    { class: 'meta' },
    pairs.flatMap(([label, value, field]) => [el('dt', {}, label), el('dd', { 'data-field': field }, value)]),
  );
}
