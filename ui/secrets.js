// The Secrets view: the names the config refers to, whether each is set, who uses it; set,
// replace or delete a value. Values are typed into a password field and cleared at once.

import * as api from './api.js';
import { $, cell, el, fitTable, toast, viewError, setText } from './dom.js';

let fit = () => {};

export function init() {
  fit = fitTable($('#secrets-table'));
  $('#add-secret').addEventListener('click', () => openForm(null));
  $('#secret-cancel').addEventListener('click', closeForm);
  $('#secret-dialog').addEventListener('close', () => { $('#secret-form').elements.value.value = ''; });
  $('#secret-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const name = f.name.value.trim();
    const value = f.value.value;
    f.value.value = '';
    const err = $('#secret-form-error');
    $('#secret-save').disabled = true;
    try {
      const restarted = await api.setSecret(name, value);
      closeForm();
      toast(restarted.length ? `Saved ${name}; restarted ${restarted.join(', ')}` : `Saved ${name}`);
      shown();
    } catch (x) {
      setText(err, api.errorText(x));
      err.hidden = false;
    } finally {
      $('#secret-save').disabled = false;
    }
  });
}

function openForm(name) {
  const f = $('#secret-form').elements;
  $('#secret-form').reset();
  $('#secret-form-error').hidden = true;
  f.name.value = name ?? '';
  f.name.readOnly = !!name;
  setText($('#secret-dialog-title'), name ? `Set ${name}` : 'Add secret');
  $('#secret-dialog').showModal();
  (name ? f.value : f.name).focus();
}

function closeForm() {
  $('#secret-form').elements.value.value = '';
  if ($('#secret-dialog').open) $('#secret-dialog').close();
}

export async function shown() {
  let rows;
  try {
    rows = await api.secrets();
    viewError('secrets', null);
  } catch (e) {
    viewError('secrets', e);
    return;
  }
  const body = $('#secrets-table tbody');
  body.replaceChildren(...rows.map((s) => {
    const label = { set: 'set', missing: 'not set', unknown: 'keychain unavailable' }[s.state];
    const actions = el('td', { class: 'row-actions' },
      el('button', { type: 'button', dataset: { act: 'set' } }, s.state === 'set' ? 'Replace' : 'Set'),
      s.state === 'set' ? el('button', { type: 'button', class: 'danger', dataset: { act: 'delete' } }, 'Delete') : null);
    actions.addEventListener('click', (e) => {
      const act = e.target.closest('button')?.dataset.act;
      if (act === 'set') openForm(s.name);
      if (act === 'delete') remove(s.name);
    });
    return el('tr', { dataset: { secret: s.name } },
      cell('Name', el('code', { text: s.name })),
      cell('State', el('span', { class: `badge secret-${s.state}`, title: s.error ?? '', text: label })),
      cell('Used by', s.used_by.join(', ')),
      actions);
  }));
  $('#secrets-empty').hidden = rows.length > 0;
  $('#secrets-table').hidden = rows.length === 0;
  fit();
}

async function remove(name) {
  if (!await api.confirmDelete(`Delete the value of "${name}" from the keychain? Servers that use it stop working until it is set again.`, 'Delete secret')) return;
  try {
    const restarted = await api.deleteSecret(name);
    toast(restarted.length ? `Deleted ${name}; restarted ${restarted.join(', ')}` : `Deleted ${name}`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  }
  shown();
}

export function hidden() {}
