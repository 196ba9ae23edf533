// The Import view: client config files found on this machine (or one the person names), each
// server with its exact command line, credential warnings, and a choice of which to import.

import * as api from './api.js';
import { $, el, toast, viewError } from './dom.js';

let otherPath = '';

export function init() {
  $('#import-rescan').addEventListener('click', () => shown());
  $('#import-other').addEventListener('submit', (e) => {
    e.preventDefault();
    otherPath = e.target.elements.path.value.trim();
    shown();
  });
}

export async function shown() {
  let sources;
  try {
    sources = await api.importPreview(otherPath);
    viewError('import', null);
  } catch (e) {
    viewError('import', e);
    return;
  }
  $('#import-sources').replaceChildren(...sources.map(card));
  $('#import-empty').hidden = sources.length > 0;
}

function card(src) {
  const box = el('div', { class: 'card import-source', dataset: { path: src.path } },
    el('h2', { text: src.label }), el('p', { class: 'hint' }, el('code', { text: src.path })));
  if (src.error) {
    box.append(el('p', { class: 'form-error', text: src.error }));
    return box;
  }
  const rows = src.servers.map((s) => el('tr', { dataset: { name: s.source_name } },
    el('td', {}, el('input', { type: 'checkbox', checked: !s.skip, disabled: !!s.skip, 'aria-label': `Import ${s.source_name}` })),
    el('td', {}, el('strong', { text: s.id }), s.id !== s.source_name ? el('span', { class: 'hint', text: ` (${s.source_name})` }) : null,
      s.scope ? el('div', { class: 'hint', text: `${s.scope} scope` }) : null),
    el('td', {}, el('code', { text: s.command_line }),
      s.credentials.length ? el('div', { class: 'warn', text: `Plain-text credential: ${s.credentials.join(', ')}` }) : null,
      s.skip ? el('div', { class: 'hint', text: s.skip }) : null)));
  const table = el('table', { class: 'table' },
    el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, 'Id'), el('th', {}, 'Runs'))),
    el('tbody', {}, ...rows));
  const move = el('input', { type: 'checkbox', checked: true });
  const button = el('button', { type: 'button', class: 'primary' }, 'Import selected');
  button.addEventListener('click', async () => {
    const names = [...table.querySelectorAll('tbody tr')]
      .filter((tr) => tr.querySelector('input').checked)
      .map((tr) => tr.dataset.name);
    if (!names.length) { toast('Nothing selected'); return; }
    button.disabled = true;
    try {
      const added = await api.importServers(src.path, names, move.checked);
      toast(added.length ? `Imported ${added.join(', ')}` : 'Nothing imported');
      shown();
    } catch (e) {
      toast(api.errorText(e), 'error');
    } finally {
      button.disabled = false;
    }
  });
  box.append(table,
    el('div', { class: 'import-actions' },
      el('label', { class: 'check' }, move, 'Move credentials into the keychain'),
      button));
  if (!src.servers.length) box.append(el('p', { class: 'hint', text: 'No servers in this file.' }));
  return box;
}

export function hidden() {}
