// "Find in the registry": search the MCP Registry as you type, see what a server needs, and add
// it pinned to its exact version — secret fields are password inputs whose values go straight to
// the keychain (never kept here once sent).

import * as api from './api.js';
import { $, el, toast, setText } from './dom.js';

let chosen = null; // { name, version } of the plan shown
let timer = null;
let asked = 0;

export function initRegistry(onAdded) {
  const d = $('#registry-dialog');
  const form = $('#registry-form');
  const open = () => {
    form.reset();
    chosen = null;
    $('#registry-results').replaceChildren();
    $('#registry-chosen').hidden = true;
    $('#registry-add').disabled = true;
    setText($('#registry-status'), 'Type a name to search the registry.');
    d.showModal();
    form.elements.q.focus();
  };
  $('#find-server').addEventListener('click', open);
  // From the Add dialog: the registry instead of a command line.
  $('#find-server-form').addEventListener('click', () => { $('#server-dialog').close(); open(); });
  $('#find-server-empty').addEventListener('click', open);
  $('#registry-cancel').addEventListener('click', () => close());
  d.addEventListener('close', () => clearSecrets());
  form.elements.q.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => search(form.elements.q.value), 300);
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!chosen) return;
    const secrets = {};
    for (const input of $('#registry-secrets').querySelectorAll('input')) {
      if (input.value) secrets[input.name] = input.value;
    }
    $('#registry-add').disabled = true;
    try {
      const said = await api.registryAdd(chosen.name, chosen.version, form.elements.id.value, secrets);
      close();
      toast(said);
      onAdded();
    } catch (x) {
      setText($('#registry-error'), api.errorText(x));
      $('#registry-error').hidden = false;
      $('#registry-add').disabled = false;
    }
  });
}

function clearSecrets() {
  for (const input of $('#registry-secrets').querySelectorAll('input')) input.value = '';
}

function close() {
  clearSecrets();
  $('#registry-dialog').close();
}

async function search(text) {
  const status = $('#registry-status');
  if (!text.trim()) {
    setText(status, 'Type a name to search the registry.');
    $('#registry-results').replaceChildren();
    return;
  }
  const n = ++asked;
  setText(status, 'Searching…');
  try {
    const found = await api.registrySearch(text);
    if (n !== asked) return;
    setText(status, found.length ? `${found.length} found` : 'Nothing in the registry matches.');
    $('#registry-results').replaceChildren(...found.map((f) => {
      const b = el('button', { type: 'button', class: 'registry-pick', dataset: { name: f.name } },
        el('strong', { text: f.name }), ` ${f.version}`);
      b.addEventListener('click', () => choose(f.name));
      return el('li', {},
        b,
        el('p', { class: 'hint', lines: f.description }),
        el('p', { class: 'hint', text: `Runs as: ${f.transports.join(', ') || 'nothing it can run'}${f.needs.length ? ` · needs ${f.needs.join(', ')}` : ''}` }));
    }));
  } catch (x) {
    if (n === asked) setText(status, api.errorText(x));
  }
}

async function choose(name) {
  chosen = null;
  $('#registry-add').disabled = true;
  $('#registry-error').hidden = true;
  try {
    const plan = await api.registryPlan(name);
    $('#registry-chosen').hidden = false;
    setText($('#registry-chosen-name'), name);
    if (plan.error) {
      setText($('#registry-runs'), plan.error);
      $('#registry-secrets').replaceChildren();
      return;
    }
    setText($('#registry-runs'), `Runs ${plan.runs} — pinned to ${plan.pinned}.`);
    $('#registry-form').elements.id.value = plan.id;
    $('#registry-secrets').replaceChildren(...plan.secrets.map((s) => el('label', {},
      `${s.var}${s.required ? '' : ' (optional)'} — kept in your keychain `,
      el('input', { type: 'password', name: s.var, autocomplete: 'off', required: s.required }),
      el('small', { text: s.description }))));
    chosen = { name, version: plan.version };
    $('#registry-add').disabled = false;
  } catch (x) {
    setText($('#registry-error'), api.errorText(x));
    $('#registry-error').hidden = false;
  }
}
