// Servers' summary of the AI clients' files changed outside Gatehouse (the hub's watch): each
// file with what was added, who owns it when that is not you, the diff, and the two actions —
// put the file back as Gatehouse last read it, or keep the change.

import * as api from './api.js';
import { $, el, clock, toast, viewError } from './dom.js';

const CHANGE = {
  hook: 'a hook (runs at every session)',
  task: 'a task run when the folder opens',
  server: 'an MCP server entry',
  other: 'a setting that runs a command or widens what the client may do',
};

export function init() {
  api.on('client-file-changed', refresh);
  api.on('client-file-settled', refresh);
}

export async function refresh() {
  let alerts;
  try {
    alerts = await api.clientFileAlerts();
  } catch {
    return; // the hub is not running: Servers says so
  }
  const box = $('#client-files');
  box.replaceChildren(...alerts.map(card));
  box.hidden = alerts.length === 0;
}

function card(a) {
  const restore = el('button', { type: 'button', class: 'primary', disabled: !a.restorable }, 'Put it back');
  const keep = el('button', { type: 'button' }, 'Keep the change');
  restore.addEventListener('click', () => act(api.restoreClientFile(a.path), restore));
  keep.addEventListener('click', () => act(api.ackClientFile(a.path).then(() => `Kept the change to ${a.path}`), keep));
  return el('article', { class: 'client-file banner', dataset: { path: a.path, change: a.change } },
    el('div', {},
      el('strong', { text: `${a.path} changed outside Gatehouse` }),
      el('p', {}, `${a.client} reads it. Added or changed: ${a.what.join(', ')} — ${CHANGE[a.change] || a.change}. Seen ${clock(a.seen_ms)}.`),
      a.by ? el('p', { class: 'warning' }, `The file is ${a.by}.`) : null,
      el('details', {},
        el('summary', {}, 'Show the change'),
        el('pre', { class: 'diff', lines: a.diff })),
      el('p', { class: 'row-actions left' }, restore, keep)));
}

async function act(promise, button) {
  button.disabled = true;
  try {
    const said = await promise;
    toast(said);
    viewError('servers', null);
  } catch (e) {
    viewError('servers', e);
  } finally {
    button.disabled = false;
    refresh();
  }
}
