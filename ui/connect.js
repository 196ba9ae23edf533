// The Connect view: the gateway URL, its token (copy only, never shown), and a ready-made config
// for each AI client.

import * as api from './api.js';
import { $, el, toast, copyText, viewError } from './dom.js';

let info = null;

export function init() {
  $('#copy-url').addEventListener('click', () => copy(info?.url, 'URL copied'));
  $('#copy-token').addEventListener('click', () => copy(info?.token, 'Token copied'));
  $('#autostart').addEventListener('change', async (e) => {
    try {
      e.target.checked = await api.setAutostart(e.target.checked);
    } catch (x) {
      e.target.checked = !e.target.checked;
      toast(api.errorText(x), 'error');
    }
  });
}

async function copy(text, done) {
  if (!text) return;
  toast(await copyText(text) ? done : 'Could not copy to the clipboard', 'info');
}

function masked(text) {
  return info?.token ? text.split(info.token).join('••••••••') : text;
}

export async function shown() {
  try {
    info = await api.connectInfo();
    viewError('connect', null);
  } catch (e) {
    viewError('connect', e);
    return;
  }
  $('#gateway-url').textContent = info.url;
  $('#autostart').checked = await api.autostart().catch(() => false);
  $('#client-snippets').replaceChildren(...info.clients.map((c) => {
    const card = el('div', { class: 'card snippet', dataset: { client: c.id } },
      el('h2', { text: c.label }),
      el('p', { class: 'hint' },
        c.transport === 'http' ? 'Connects over HTTP with the token. ' : 'Launches the gatehouse connect bridge (stdio). ',
        c.path ? 'Merge into ' : '', c.path ? el('code', { text: c.path }) : ''),
      el('pre', { text: masked(c.snippet) }),
      el('div', { class: 'row-actions left' },
        el('button', { type: 'button', dataset: { act: 'copy' } }, 'Copy'),
        c.path ? el('button', { type: 'button', dataset: { act: 'write' } }, `Write to ${c.label}'s config`) : null));
    card.querySelector('[data-act=copy]').addEventListener('click', () => copy(c.snippet, `${c.label} config copied`));
    card.querySelector('[data-act=write]')?.addEventListener('click', async () => {
      if (!await api.confirm(`Add Gatehouse to ${c.path}? Its other entries are kept and a backup is made.`, `Write to ${c.label}`, 'Write')) return;
      try {
        toast(await api.writeClientConfig(c.id));
      } catch (e) {
        toast(api.errorText(e), 'error');
      }
    });
    return card;
  }));
}

export function hidden() {}
