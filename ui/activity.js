// The Activity view: recent routed calls with who decided and how they ended, filterable by
// server, client profile and decision group. Arguments are shown as stored (secret values already masked by the
// core). While shown, the list refreshes every 4 s; it stops when the view is left.

import * as api from './api.js';
import { $, el, clock, viewError } from './dom.js';

const servers = new Set();
let poller = null;

export function init() {
  $('#activity-refresh').addEventListener('click', load);
  $('#activity-server').addEventListener('change', load);
  $('#activity-client').addEventListener('change', load);
  $('#activity-decision').addEventListener('change', load);
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

function label(decision) {
  return decision.replace(/_/g, ' ');
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
  const body = $('#activity-table tbody');
  body.replaceChildren(...rows.map((r) => {
    const by = { ui: ' by you (app)', cli: ' by you (CLI)' }[r.decided_by] ?? '';
    const tr = el('tr', { class: `decision-${r.decision}` },
      el('td', { text: clock(r.time_ms) }),
      el('td', { text: r.profile ? `${r.client ?? '—'} (${r.profile})` : (r.client ?? '—') }),
      el('td', {}, el('code', { text: `${r.server}__${r.tool}` })),
      el('td', {}, el('span', { class: `badge decision ${r.group}`, text: label(r.decision) }), by),
      el('td', { text: `${r.duration_ms} ms` }),
      el('td', { text: label(r.outcome) }));
    tr.title = `Arguments: ${r.arguments}`;
    return tr;
  }));
  const empty = rows.length === 0;
  $('#activity-empty').hidden = !empty;
  $('#activity-table').hidden = empty;
}
