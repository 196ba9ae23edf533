// "Find in the registry": search the MCP Registry as you type, see what a server needs, and add
// it pinned to its exact version — the exact command and every variable with its value shown
// first; a variable that changes how a runtime loads code is added only when ticked by name;
// plain values asked for in fields, secret ones in password inputs whose values go straight to
// the keychain (never kept here once sent). The outcome is the server's real state.

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
    const env = {};
    for (const input of $('#registry-fields').querySelectorAll('input')) {
      if (input.value) env[input.name] = input.value;
    }
    const allowEnv = [...$('#registry-risky').querySelectorAll('input:checked')].map((i) => i.name);
    $('#registry-add').disabled = true;
    setText($('#registry-status'), 'Adding it and waiting for it to start…');
    try {
      const added = await api.registryAdd(chosen.name, chosen.version, form.elements.id.value, secrets, env, allowEnv);
      close();
      toast(added.message, added.ok ? 'info' : 'error');
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
        el('p', { class: 'hint', text: `Runs as: ${f.transports.join(', ') || 'nothing it can run'}${f.needs.length ? ` · needs ${f.needs.join(', ')}` : ''}${f.optional.length ? ` · can take ${f.optional.join(', ')}` : ''}` }),
        f.missing && el('p', { class: 'hint warning', text: `Cannot run here yet: ${f.missing}` }));
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
      $('#registry-fields').replaceChildren();
      $('#registry-risky').replaceChildren();
      $('#registry-env').replaceChildren();
      return;
    }
    setText($('#registry-runs'), plan.command.length
      ? `Runs ${plan.runs} — pinned to ${plan.pinned}.`
      : `Connects to ${plan.runs}.`);
    // Every variable it sets, with its value: what will be written, before it is.
    $('#registry-env').replaceChildren(...Object.entries(plan.env).map(([k, v]) => el('li', {},
      el('code', { text: k }), ' = ', el('code', { text: v }))));
    $('#registry-form').elements.id.value = plan.id;
    $('#registry-fields').replaceChildren(...plan.fields.map((f) => el('label', {},
      `${f.var}${f.required ? '' : ' (optional)'} `,
      el('input', { type: 'text', name: f.var, autocomplete: 'off', required: f.required && !f.default, placeholder: f.default ?? '' }),
      el('small', { text: f.description }))));
    $('#registry-risky').replaceChildren(...plan.risky.map((r) => el('label', { class: 'check warning' },
      el('input', { type: 'checkbox', name: r.var }),
      ` Allow ${r.var} = ${plan.env[r.var] ?? '(your value)'}: ${r.why}`)));
    $('#registry-secrets').replaceChildren(...plan.secrets.map((s) => el('label', {},
      `${s.var}${s.required ? '' : ' (optional)'} — kept in your keychain `,
      el('input', { type: 'password', name: s.var, autocomplete: 'off', required: s.required }),
      el('small', { text: s.description }))));
    chosen = { name, version: plan.version };
    if (plan.missing) {
      setText($('#registry-error'), `${plan.missing}. It cannot be added until then.`);
      $('#registry-error').hidden = false;
      return;
    }
    $('#registry-add').disabled = false;
  } catch (x) {
    setText($('#registry-error'), api.errorText(x));
    $('#registry-error').hidden = false;
  }
}
