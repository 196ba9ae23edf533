// The Activity view: recent routed calls with who decided and how they ended, filterable by
// server and decision. Arguments are shown as stored (secret values already masked by the core).

import * as api from './api.js';
import { $, el, clock } from './dom.js';

let visible = false;
let servers = new Set();

const DECISIONS = {
  allowed: (d) => d === 'allowed',
  approved: (d) => d.startsWith('approved_'),
  remembered: (d) => d.startsWith('remembered_'),
  denied: (d) => d === 'denied',
  timed_out: (d) => d === 'timed_out',
  refused: (d) => d === 'disabled' || d === 'not_running' || d === 'withdrawn',
};

export function init() {
  $('#activity-refresh').addEventListener('click', load);
  $('#activity-server').addEventListener('change', load);
  $('#activity-decision').addEventListener('change', load);
  api.on('approval-resolved', () => { if (visible) setTimeout(load, 300); });
  setInterval(() => { if (visible && !document.hidden) load(); }, 4000);
  for (const b of document.querySelectorAll('.nav')) {
    b.addEventListener('click', () => { visible = b.dataset.view === 'activity'; });
  }
}

export function shown() {
  visible = true;
  load();
}

function label(decision) {
  return decision.replace(/_/g, ' ');
}

async function load() {
  const server = $('#activity-server').value;
  const decision = $('#activity-decision').value;
  let rows = [];
  try {
    rows = await api.activity(server);
  } catch {
    rows = [];
  }
  for (const r of rows) servers.add(r.server);
  try {
    for (const s of await api.servers()) servers.add(s.id);
  } catch { /* not running */ }
  const select = $('#activity-server');
  const have = new Set([...select.options].map((o) => o.value));
  for (const s of [...servers].sort()) if (!have.has(s)) select.append(el('option', { value: s, text: s }));
  if (decision) rows = rows.filter((r) => DECISIONS[decision]?.(r.decision));
  const body = $('#activity-table tbody');
  body.replaceChildren(...rows.map((r) => {
    const tr = el('tr', { class: `decision-${r.decision}` },
      el('td', { text: clock(r.time_ms) }),
      el('td', { text: r.client ?? '—' }),
      el('td', {}, el('code', { text: `${r.server}__${r.tool}` })),
      el('td', {}, el('span', { class: `badge decision ${r.decision.split('_')[0]}`, text: label(r.decision) }), r.decided_by !== 'policy' ? ` by ${r.decided_by === 'ui' ? 'you (app)' : 'you (CLI)'}` : ''),
      el('td', { text: `${r.duration_ms} ms` }),
      el('td', { text: label(r.outcome) }));
    tr.title = `Arguments: ${r.arguments}`;
    return tr;
  }));
  const empty = rows.length === 0;
  $('#activity-empty').hidden = !empty;
  $('#activity-table').hidden = empty;
}
