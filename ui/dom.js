// Small DOM helpers. Text goes in only through setText() and el(), which show every hidden
// character (bidi controls, zero-width and format characters, controls, private-use and
// unassigned code points) as its code point — ⟨U+202E⟩ — by the core's one table
// (`gatehouse::text::hidden_ranges`), never as HTML and never interpreted.

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

// The core's table of hidden code points ([first, last] pairs, sorted); until it arrives, the
// classes every attack uses (controls, bidi, zero-width, BOM, tags, private use).
let hiddenRanges = [[0x0, 0x1f], [0x7f, 0x9f], [0xad, 0xad], [0x200b, 0x200f], [0x202a, 0x202e],
  [0x2060, 0x206f], [0xe000, 0xf8ff], [0xfe00, 0xfe0f], [0xfeff, 0xfeff], [0xe0000, 0xe0fff]];

/** Takes the core's table (app start). */
export function setHiddenRanges(ranges) {
  if (Array.isArray(ranges) && ranges.length) hiddenRanges = ranges;
}

function isHidden(cp) {
  let lo = 0;
  let hi = hiddenRanges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = hiddenRanges[mid];
    if (cp < a) hi = mid - 1;
    else if (cp > b) lo = mid + 1;
    else return true;
  }
  return false;
}

const codePoint = (cp) => `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;

/**
 * `text` as a person should see it: hidden characters as ⟨U+XXXX⟩. With `lines`, line feeds and
 * tabs stay (multi-line text); a variation selector 15/16 stays right after a visible character
 * (an emoji's presentation), as in the core.
 */
export function shown(text, lines = false) {
  const s = String(text);
  let out = '';
  let prevVisible = false;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    const keep = (lines && (cp === 0x0a || cp === 0x09))
      || ((cp === 0xfe0e || cp === 0xfe0f) && prevVisible);
    if (isHidden(cp) && !keep) {
      out += codePoint(cp);
      prevVisible = false;
    } else {
      out += ch;
      prevVisible = !isHidden(cp);
    }
  }
  return out;
}

/** Whether `text` holds a character shown() would reveal. */
export const hasHidden = (text, lines = false) => shown(text, lines) !== String(text);

/** The one way text goes into a node (hidden characters revealed; `lines`: multi-line text). */
export function setText(node, text, lines = false) {
  node.textContent = shown(text ?? '', lines);
}

/** The one way a tooltip is set. */
export function setTitle(node, text) {
  node.title = shown(text ?? '');
}

/** el('span', {class: 'badge', dataset: {id}}, 'text', child...) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'text') setText(node, v);
    else if (k === 'lines') setText(node, v, true);
    else if (k === 'title' || k === 'aria-label') node.setAttribute(k, shown(v));
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(shown(c, true)));
  }
  return node;
}

export function duration(ms) {
  if (ms < 0) ms = 0;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function clock(ms) {
  const d = new Date(ms);
  const today = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return d.toDateString() === today.toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

/**
 * The one error pattern: a view that cannot load shows the reason in its own error line (above
 * its content, `#<view>-error`) until a later load succeeds (`viewError(view, null)`); a failed
 * action (a button) says so in a toast.
 */
export function viewError(view, error) {
  const line = document.getElementById(`${view}-error`);
  if (!line) return;
  line.hidden = !error;
  setText(line, error ? errorMessage(error) : '', true);
}

export function errorMessage(e) {
  if (e && typeof e === 'object' && 'message' in e) return String(e.message);
  return String(e);
}

let toastTimer = null;
export function toast(message, kind = 'info') {
  const t = document.getElementById('toast');
  setText(t, message, true);
  t.dataset.kind = kind;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, kind === 'error' ? 8000 : 3500);
}

export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = el('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.value = '';
    area.remove();
    return ok;
  }
}

/**
 * Keeps `table` a table while it fits beside what holds it, and shows each row as a card of
 * labelled fields (its cells' `data-label`) where it would not: measured on the page — the
 * table's own content, the person's font and text size — never guessed from the window's width.
 * Checked again when its container is resized; call the returned function after the rows change.
 */
export function fitTable(table) {
  const check = () => {
    const room = table.parentElement?.clientWidth ?? 0;
    if (!room || table.hidden) return;
    table.classList.remove('stacked');
    // Wider than its pane, or a cell holding more than it shows (a word longer than its column).
    const over = table.offsetWidth > room + 1 || table.scrollWidth > table.clientWidth + 1
      || [...table.querySelectorAll('td')].some((td) => td.scrollWidth > td.clientWidth + 1);
    if (over) table.classList.add('stacked');
  };
  if (table.parentElement && 'ResizeObserver' in window) new window.ResizeObserver(check).observe(table.parentElement);
  return check;
}

/** A table cell with its column's name (`fitTable` shows it beside the value in a card). */
export function cell(label, ...content) {
  return el('td', { dataset: { label } }, ...content);
}

/** A client's self-given name as every view shows it, with the one mark of a borrowed name
 * (the core's `text::imitation::marked`): `Clаude Code ⚠ imitates “Claude Code”`. */
export function clientName(name, imitates) {
  return imitates ? `${name} ⚠ imitates “${imitates}”` : name;
}
