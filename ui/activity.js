// The Activity view: recent routed calls with who decided and how they ended, filterable by
// server, client profile and decision group, and exported as CSV or JSON. Arguments are shown as stored (secret
// values already masked by the core). While shown, the list refreshes every 4 s; it stops when the view is left.

import * as api from './api.js';
import { $, el, clientName, clock, fitTable, toast, viewError, setTitle } from './dom.js';

const servers = new Set();
const open = new Set(); // keys of rows whose detail is shown (kept across refreshes)
const made = new Map(); // key → { sig, tr, detail }: the rows on the page, reused while unchanged
let poller = null;
let fit = () => {};

const keyOf = (r) => `${r.time_ms}|${r.session}|${r.server}|${r.tool}`;

/** What decided a call, in the person's terms (`decided_by`, where it was answered, the rule). */
function decidedBy(r) {
  const person = { app: 'you, in the app', cli: 'you, with the CLI' }[r.answered_in] ?? 'you';
  switch (r.decided_by) {
    case 'person': return person;
    case 'rule': return `your rule ${r.rule ?? ''}`.trim();
    case 'exact': return 'your earlier answer for this exact call';
    case 'session': return 'your earlier answer for this session';
    case 'always': return 'your earlier “always” answer';
    case 'client': return r.answered_in === 'client' ? 'you, in the client (approve_via: client)' : 'the client (it gave up or went away)';
    case 'policy': return 'the policy';
    default: return r.decided_by;
  }
}

/** The detail pane of one call: who, what, and where the time went. */
function detail(r) {
  let args = r.arguments;
  try { args = JSON.stringify(JSON.parse(r.arguments), null, 2); } catch { /* shown as stored */ }
  const server = Math.max(0, r.duration_ms - (r.waited_ms ?? 0));
  // What decided it, in the person's terms: a timeout is nobody's answer, not the policy's.
  const who = r.decision === 'timed_out'
    ? 'nobody: no one answered in time'
    : decidedBy(r);
  // A call that never reached the server spent no time there: it says so, not "0 ms".
  const atServer = r.outcome === 'not_run' ? 'not run' : `${server} ms`;
  return el('tr', { class: 'activity-detail' }, el('td', { colspan: '6' },
    el('dl', { class: 'detail' },
      el('dt', { text: 'Waiting for you' }), el('dd', { text: `${r.waited_ms ?? 0} ms` }),
      el('dt', { text: 'Server' }), el('dd', { text: atServer }),
      el('dt', { text: 'Decided by' }), el('dd', { text: r.decided_via ? `${who} (${r.decided_via})` : who }),
      el('dt', { text: 'Client' }), el('dd', { text: `profile ${r.profile ?? 'default'} — ${r.client ? `says “${r.client}”` : 'gives no name'}, session ${r.session}` }),
      r.imitates && el('dt', { text: 'Warning' }),
      r.imitates && el('dd', { class: 'warning', text: `the client's name imitates “${r.imitates}”` }),
      r.hidden_characters && el('dt', { text: 'Warning' }),
      r.hidden_characters && el('dd', { class: 'warning', text: 'contains hidden characters, shown as ⟨U+XXXX⟩' }),
      el('dt', { text: 'Outcome' }), el('dd', { text: outcomeText(r) }),
      // Why it failed, as the server or Gatehouse said it (the sandbox named when it may be why).
      r.error && el('dt', { text: 'Error' }),
      r.error && el('dd', { class: 'call-error', lines: r.error })),
    el('pre', { class: 'arguments', lines: args })));
}

export function init() {
  fit = fitTable($('#activity-table'));
  $('#activity-refresh').addEventListener('click', load);
  $('#activity-server').addEventListener('change', load);
  $('#activity-client').addEventListener('change', load);
  $('#activity-decision').addEventListener('change', load);
  $('#activity-export-csv').addEventListener('click', () => exportRows('csv'));
  $('#activity-export-json').addEventListener('click', () => exportRows('json'));
  api.on('approval-resolved', () => { if (poller) setTimeout(load, 300); });
}

export function shown() {
  load();
  clearInterval(poller);
  poller = setInterval(() => { if (!document.hidden) load(); }, 4000);
}

export function hidden() {
  clearInterval(poller);
  poller = null;
}

/** Saves every call matching the filters (not only the rows shown) and says where. */
async function exportRows(format) {
  try {
    const r = await api.exportActivity(format, $('#activity-server').value, $('#activity-client').value, $('#activity-decision').value);
    toast(`Exported ${r.rows} call${r.rows === 1 ? '' : 's'} to ${r.path}`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  }
}

function label(decision) {
  return decision.replace(/_/g, ' ');
}

/** How a call ended, in words: what happened, never a protocol term; a failure the sandbox may
 * have caused says so. */
function outcomeText(r) {
  const said = {
    ok: 'answered',
    is_error: 'the tool reported an error',
    protocol_error: 'the server answered with an error',
    lost: 'the server went away',
    not_run: 'not run',
    cancelled: 'cancelled by the client',
    timed_out: 'timed out',
  }[r.outcome] ?? label(r.outcome);
  return r.error?.includes('the sandbox may have caused this') ? `${said} — the sandbox may be why` : said;
}

/** One call's row; a click or Enter shows or hides its detail. */
function row(r, key) {
  const by = r.decided_by === 'person'
    ? ({ app: ' by you (app)', cli: ' by you (CLI)' }[r.answered_in] ?? ' by you')
    : ({ rule: ' by a rule', exact: ' (exact call)', client: r.answered_in === 'client' ? ' by you (client)' : '' }[r.decided_by] ?? '');
  // Each cell's content in one box and its column's name on it: a narrow pane shows a call
  // as labelled fields instead of columns running out of the window.
  const cell = (name, ...content) => el('td', { dataset: { label: name } }, el('span', {}, ...content));
  const tr = el('tr', { class: `decision-${r.decision}` },
    cell('Time', clock(r.time_ms)),
    cell('Client', el('span', { class: r.imitates ? 'warning' : undefined },
      r.profile ? `${r.client ? clientName(r.client, r.imitates) : '—'} (${r.profile})` : (r.client ? clientName(r.client, r.imitates) : '—'))),
    cell('Tool', el('code', { text: `${r.server}__${r.tool}` })),
    cell('Decision', el('span', { class: `badge decision ${r.group}`, text: label(r.decision) }), by),
    cell('Duration', `${r.duration_ms} ms`),
    cell('Outcome', outcomeText(r)));
  setTitle(tr, 'Show the details');
  tr.tabIndex = 0;
  tr.dataset.key = key;
  const toggle = () => {
    if (open.has(key)) open.delete(key); else open.add(key);
    load();
  };
  tr.addEventListener('click', toggle);
  tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') toggle(); });
  return tr;
}

async function load() {
  const server = $('#activity-server').value;
  const client = $('#activity-client').value;
  const group = $('#activity-decision').value;
  let rows;
  try {
    rows = await api.activity(server, client);
    viewError('activity', null);
  } catch (e) {
    viewError('activity', e);
    return;
  }
  for (const r of rows) servers.add(r.server);
  try {
    for (const s of await api.servers()) servers.add(s.id);
  } catch { /* the hub is not running: the error line above says so */ }
  const select = $('#activity-server');
  const have = new Set([...select.options].map((o) => o.value));
  for (const s of [...servers].sort()) if (!have.has(s)) select.append(el('option', { value: s, text: s }));
  // Client profiles, for the client filter.
  try {
    const clients = $('#activity-client');
    const known = new Set([...clients.options].map((o) => o.value));
    for (const p of await api.clientProfiles()) {
      if (!known.has(p.id)) clients.append(el('option', { value: p.id, text: p.id }));
    }
  } catch { /* the hub is not running: the error line above says so */ }
  if (group) rows = rows.filter((r) => r.group === group);
  // Rows already made are kept and reused while their call reads the same: a refresh every 4 s
  // of up to 300 calls makes only what is new (a window left open all day keeps its memory).
  // Two calls alike in the same millisecond are told apart by their order.
  const seen = new Map();
  const keys = rows.map((r) => {
    const k = keyOf(r);
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    return n ? `${k}#${n}` : k;
  });
  const nodes = rows.flatMap((r, i) => {
    const key = keys[i];
    const sig = JSON.stringify(r);
    let m = made.get(key);
    if (!m || m.sig !== sig) {
      m = { sig, tr: row(r, key), detail: null };
      made.set(key, m);
    }
    if (!open.has(key)) return [m.tr];
    m.detail ??= detail(r);
    return [m.tr, m.detail];
  });
  const keep = new Set(keys);
  for (const key of made.keys()) if (!keep.has(key)) made.delete(key);
  for (const key of open) if (!keep.has(key)) open.delete(key);
  const body = $('#activity-table tbody');
  const same = body.children.length === nodes.length && nodes.every((n, i) => body.children[i] === n);
  if (!same) body.replaceChildren(...nodes);
  const empty = rows.length === 0;
  $('#activity-empty').hidden = !empty;
  $('#activity-table').hidden = empty;
  if (!same) fit();
}
