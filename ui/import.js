// The Import view: client config files found on this machine (or one the person names), each
// server with its exact command line, credential warnings, and a choice of which to import.

import * as api from './api.js';
import { $, cell, el, fitTable, toast, viewError } from './dom.js';

let otherPath = '';
// Servers imported from this view in this run, by file and name, with the id each went in
// under (a row renamed in review is reported under its new id): shown "Imported as … ✓".
const imported = new Map();
// The person's own choices, by file and name (a row left unchecked stays unchecked when the
// view is drawn again after an import; a typed id stays typed).
const checked = new Map();
const typed = new Map();
const key = (path, name) => `${path}\0${name}`;

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
  for (const t of document.querySelectorAll('#import-sources table')) fitTable(t)();
}

function card(src) {
  const box = el('div', { class: 'card import-source', dataset: { path: src.path } },
    // A file under its client's name, with its path; the pasted snippet has no path to add.
    el('h2', { text: src.label }), src.path !== src.label ? el('p', { class: 'hint' }, el('code', { text: src.path })) : null);
  if (src.error) {
    box.append(el('p', { class: 'form-error', text: src.error }));
    return box;
  }
  const rows = src.servers.map((s) => row(src, s));
  const table = el('table', { class: 'table' },
    el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, 'Id'), el('th', {}, 'Runs'))),
    el('tbody', {}, ...rows));
  const move = el('input', { type: 'checkbox', checked: true });
  const button = el('button', { type: 'button', class: 'primary' }, 'Import selected');
  button.addEventListener('click', async () => {
    const chosen = [...table.querySelectorAll('tbody tr')]
      .filter((tr) => tr.querySelector('input[type=checkbox]').checked);
    const names = chosen.map((tr) => tr.dataset.name);
    if (!names.length) { toast('Nothing selected'); return; }
    // A server whose id is taken goes in under the id typed beside it.
    const renames = Object.fromEntries(chosen
      .filter((tr) => tr.querySelector('.rename'))
      .map((tr) => [tr.dataset.name, tr.querySelector('.rename').value.trim()]));
    button.disabled = true;
    try {
      const added = await api.importServers(src.path, names, move.checked, renames);
      for (const tr of chosen) {
        const id = renames[tr.dataset.name] || tr.dataset.id;
        if (added.includes(id)) imported.set(key(src.path, tr.dataset.name), id);
      }
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
  const offer = leakOffer(src);
  if (offer) box.append(offer);
  return box;
}

/** Servers Gatehouse runs now whose plain-text credentials are still in the client's own file:
 * an offer to take them out of it (the client then reaches them through Gatehouse). */
function leakOffer(src) {
  if (!src.client) return null;
  const left = src.servers.filter((s) => s.credentials.length
    && (s.state === 'here' || imported.has(key(src.path, s.source_name))));
  if (!left.length) return null;
  const what = left.map((s) => `${s.credentials.join(', ')} (${s.source_name})`).join('; ');
  const names = left.map((s) => s.source_name);
  const button = el('button', { type: 'button', class: 'danger' }, 'Remove them from this file');
  button.addEventListener('click', async () => {
    const question = `Remove ${names.join(', ')} from ${src.path}? ${src.label} then reaches ${names.length === 1 ? 'it' : 'them'} through Gatehouse (its entry is added). A backup of the file is kept beside it, with these credentials taken out of it.`;
    if (!await api.confirm(question, 'Remove from the file', 'Remove from the file')) return;
    button.disabled = true;
    try {
      toast(await api.removeFromClient(src.path, names));
      shown();
    } catch (e) {
      toast(api.errorText(e), 'error');
      button.disabled = false;
    }
  });
  return el('div', { class: 'leak-offer warn' },
    el('p', { text: `Gatehouse runs these now and keeps their secrets in the keychain, but the plain-text values are still in this file: ${what}.` }),
    button);
}

export function hidden() {}

/** Shows Import on `path` (what the core named a pasted snippet by): its servers to review. */
export function reviewFile(path) {
  otherPath = path;
  document.querySelector('.nav[data-view=import]')?.click();
}

/** One server of a file: what importing it does, said plainly — imported, already here, Gatehouse
 * itself, an id to choose (typed in place), or why not. */
function row(src, s) {
  const k = key(src.path, s.source_name);
  const as = imported.get(k);
  const done = as !== undefined;
  const taken = s.state === 'taken' && !done;
  const blocked = !taken && (!!s.skip || done || s.state === 'here');
  // A project server its client never approved is listed, and imported only when ticked.
  const box = el('input', { type: 'checkbox', checked: !blocked && (checked.get(k) ?? (!taken && !s.unapproved)), disabled: blocked, 'aria-label': `Import ${s.source_name}` });
  box.addEventListener('change', () => checked.set(k, box.checked));
  let status = null;
  if (done) status = el('div', { class: 'ok-line', text: as === s.id ? 'Imported ✓' : `Imported as ${as} ✓` });
  else if (s.state === 'here') status = el('div', { class: 'ok-line', text: 'Already here ✓' });
  else if (s.state === 'itself') status = el('div', { class: 'hint', text: 'Gatehouse itself: not imported (its token is its own)' });
  else if (taken) {
    const input = el('input', { class: 'rename', value: typed.get(k) ?? `${s.id}-2`, 'aria-label': `New id for ${s.source_name}`, pattern: '[a-z0-9-]{1,32}' });
    input.addEventListener('input', () => {
      typed.set(k, input.value);
      box.checked = input.value.trim() !== '';
      box.dispatchEvent(new Event('change'));
    });
    status = el('label', { class: 'rename-line' }, `The id ${s.id} is taken: import as `, input);
  } else if (s.skip) status = el('div', { class: 'hint', text: s.skip });
  const id = done ? as : s.id;
  return el('tr', { dataset: { name: s.source_name, id: s.id, state: done ? 'imported' : s.state } },
    cell('Import', box),
    cell('Id', el('span', {}, el('strong', { text: id }), id !== s.source_name ? el('span', { class: 'hint', text: ` (${s.source_name})` }) : null,
      s.scope ? el('div', { class: 'hint', text: `${s.scope} scope` }) : null)),
    cell('Runs', el('span', {}, el('code', { text: s.command_line }),
      s.credentials.length ? el('div', { class: 'warn', text: `Plain-text credential: ${s.credentials.join(', ')}` }) : null,
      s.unapproved && !done ? el('div', { class: 'warn unapproved', text: `${s.unapproved}: it never ran there, and came with the project's files — tick it only if you trust this command` }) : null,
      status)));
}
