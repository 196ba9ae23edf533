// The Servers panel: one row per server with its live status, actions, and on expand its tools
// (with their approval flags) and a live log tail. Also the add/edit/remove form.

import * as api from './api.js';
import { $, el, duration, clock, toast, viewError } from './dom.js';

const rows = new Map(); // id -> {node, status, expanded, stopLogs}
let painted = false;

export function init() {
  $('#add-server').addEventListener('click', () => openForm(null));
  $('#add-server-empty').addEventListener('click', () => openForm(null));
  api.on('server-status', (s) => { upsert(s); refreshSoon(); });
  api.on('tools-changed', ({ server }) => {
    const row = rows.get(server);
    if (row?.expanded) loadTools(row);
  });
  setInterval(tickUptimes, 1000);
  initForm();
}

export async function refresh() {
  let list;
  try {
    list = await api.servers();
    viewError('servers', null);
  } catch (e) {
    viewError('servers', e);
    return;
  }
  const seen = new Set(list.map((s) => s.id));
  for (const [id, row] of rows) {
    if (!seen.has(id)) { row.stopLogs?.(); row.node.remove(); rows.delete(id); }
  }
  for (const s of list) upsert(s);
  reorder();
  $('#servers-empty').hidden = rows.size > 0;
  if (!painted) {
    painted = true;
    requestAnimationFrame(() => api.uiPainted(rows.size));
  }
}

export function shown() { refresh(); }

export function hidden() {}

// Servers added or removed by a reload or another front end (the CLI, an import) show up
// without waiting for the person to switch views.
let soon = null;
function refreshSoon() {
  clearTimeout(soon);
  soon = setTimeout(refresh, 400);
}

/** Servers that need you (failed, or waiting for a sign-in) first, then by id; and the summary line. */
function reorder() {
  const list = $('#server-list');
  const rank = (id) => (['failed', 'needs_sign_in'].includes(rows.get(id).status.state) ? 0 : 1);
  const ids = [...rows.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  ids.forEach((id, i) => {
    if (list.children[i] !== rows.get(id).node) list.insertBefore(rows.get(id).node, list.children[i] ?? null);
  });
  summarize();
}

function summarize() {
  const all = [...rows.values()].map((r) => r.status);
  const count = (st) => all.filter((s) => s.state === st).length;
  const tools = all.reduce((n, s) => n + (s.state === 'running' ? s.tools : 0), 0);
  const parts = [`${count('running')} running`];
  if (count('failed')) parts.push(`${count('failed')} failed`);
  if (count('needs_sign_in')) parts.push(`${count('needs_sign_in')} waiting for a sign-in`);
  if (count('restarting')) parts.push(`${count('restarting')} restarting`);
  if (count('stopped')) parts.push(`${count('stopped')} stopped`);
  parts.push(`${tools} tool${tools === 1 ? '' : 's'} exposed`);
  const line = $('#servers-summary');
  line.textContent = all.length ? parts.join(' · ') : '';
  line.dataset.failed = count('failed');
}

function upsert(s) {
  let row = rows.get(s.id);
  if (!row) {
    if (s.target === undefined) { refresh(); return; } // a status event for a server we have not listed yet
    row = { node: buildRow(s.id), status: s, expanded: false };
    rows.set(s.id, row);
    $('#server-list').append(row.node);
    reorder();
    $('#servers-empty').hidden = true;
  }
  const was = row.status.state;
  row.status = { ...row.status, ...s };
  render(row);
  if (was !== row.status.state) reorder(); else summarize();
}

function buildRow(id) {
  const node = el('article', { class: 'server', dataset: { id } },
    el('header', { class: 'server-head' },
      el('button', { type: 'button', class: 'expand', 'aria-expanded': 'false', 'aria-label': `Show tools and log of ${id}` }, '▸'),
      el('span', { class: 'name', text: id }),
      el('span', { class: 'display-name' }),
      el('span', { class: 'badge' }),
      el('span', { class: 'meta' },
        el('span', { class: 'pid' }), el('span', { class: 'uptime' }),
        el('span', { class: 'restarts' }), el('span', { class: 'tools-count' })),
      el('span', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', dataset: { act: 'sign-in' }, hidden: true }, 'Sign in'),
        el('button', { type: 'button', dataset: { act: 'start' } }, 'Start'),
        el('button', { type: 'button', dataset: { act: 'stop' } }, 'Stop'),
        el('button', { type: 'button', dataset: { act: 'restart' } }, 'Restart'),
        el('button', { type: 'button', dataset: { act: 'edit' } }, 'Edit'),
        el('label', { class: 'toggle', title: 'Enabled: starts with Gatehouse (kept in the config)' },
          el('input', { type: 'checkbox', class: 'enabled-toggle', 'aria-label': `${id} enabled` }), ' On'))),
    el('p', { class: 'recovered hint', hidden: true }),
    el('code', { class: 'target' }),
    el('p', { class: 'last-error', hidden: true }),
    el('ul', { class: 'warnings', hidden: true }),
    el('div', { class: 'details', hidden: true },
      el('h3', {}, 'Tools ', el('button', { type: 'button', class: 'refresh-tools', 'aria-label': `List the tools of ${id} again` }, 'Refresh')),
      el('table', { class: 'table tools' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Exposed as'), el('th', {}, 'Description'), el('th', {}, 'Calls'))),
        el('tbody')),
      el('p', { class: 'tools-empty hint', hidden: true }),
      el('h3', {}, 'Log'),
      el('pre', { class: 'log', tabindex: '0', 'aria-label': `Log of ${id}` })));
  node.querySelector('.expand').addEventListener('click', () => toggle(id));
  node.querySelector('.enabled-toggle').addEventListener('change', async (e) => {
    const on = e.target.checked;
    e.target.disabled = true;
    try {
      await api.setServerEnabled(id, on);
      toast(on ? `${id} is enabled and starting` : `${id} is disabled and stopped (kept in the config)`);
    } catch (x) {
      e.target.checked = !on;
      toast(api.errorText(x), 'error');
    } finally {
      e.target.disabled = false;
    }
  });
  node.querySelector('.refresh-tools').addEventListener('click', (e) => refreshTools(id, e.target));
  node.querySelector('.actions').addEventListener('click', (e) => {
    const act = e.target.closest('button')?.dataset.act;
    if (act) action(id, act, e.target);
  });
  return node;
}

function render(row) {
  const s = row.status;
  const n = row.node;
  n.dataset.state = s.state;
  const badge = n.querySelector('.badge');
  badge.textContent = s.state === 'needs_sign_in' ? 'needs sign-in' : s.state;
  badge.className = `badge state-${s.state}`;
  if (s.state === 'restarting' && s.next_retry_ms) {
    badge.title = `next attempt at ${clock(s.next_retry_ms)} (failure ${s.consecutive_failures})`;
  } else badge.title = '';
  n.querySelector('.pid').textContent = s.pid ? `pid ${s.pid}` : '';
  n.querySelector('.pid').dataset.pid = s.pid ?? '';
  n.querySelector('.restarts').textContent = `${s.restarts} restart${s.restarts === 1 ? '' : 's'}`;
  n.querySelector('.restarts').dataset.restarts = s.restarts;
  n.querySelector('.tools-count').textContent = `${s.tools} tool${s.tools === 1 ? '' : 's'}`;
  n.querySelector('.tools-count').dataset.tools = s.tools;
  if (s.target !== undefined) n.querySelector('.target').textContent = s.target;
  const err = n.querySelector('.last-error');
  const showErr = s.last_error && s.state !== 'running' && s.state !== 'stopped';
  err.hidden = !showErr && !(s.state === 'failed');
  n.querySelector('[data-act=sign-in]').hidden = s.state !== 'needs_sign_in';
  err.textContent = s.last_error || '';
  n.querySelector('.enabled-toggle').checked = !!s.enabled;
  // A crash the server recovered from stays visible for this run.
  const rec = n.querySelector('.recovered');
  rec.hidden = !(s.state === 'running' && s.last_crash);
  if (!rec.hidden) rec.textContent = `Recovered; last failure at ${clock(s.last_crash_ms)}: ${s.last_crash}`;
  // Things to know that do not stop the server (a policy key naming no tool, a slow list…).
  const warnings = n.querySelector('.warnings');
  const list = s.warnings ?? [];
  warnings.hidden = list.length === 0;
  warnings.replaceChildren(...list.map((w) => el('li', { text: w })));
  n.querySelector('.display-name').textContent = s.name ? s.name : '';
  const running = s.state === 'running' || s.state === 'starting' || s.state === 'restarting';
  n.querySelector('[data-act=start]').disabled = running;
  n.querySelector('[data-act=stop]').disabled = s.state === 'stopped';
  n.querySelector('[data-act=restart]').disabled = !s.enabled && s.state === 'stopped';
  tickUptime(row);
}

function tickUptime(row) {
  const s = row.status;
  const up = row.node.querySelector('.uptime');
  up.textContent = s.state === 'running' ? `up ${duration(Date.now() - s.since_ms)}` : '';
}

function tickUptimes() {
  for (const row of rows.values()) tickUptime(row);
}

async function action(id, act, button) {
  if (act === 'edit') { openForm(id); return; }
  if (act === 'sign-in') { signIn(id, button); return; }
  button.disabled = true;
  if (act === 'start' && rows.get(id)?.status.state === 'failed') toast(`Starting ${id} again…`);
  try {
    if (act === 'start') await api.startServer(id);
    if (act === 'stop') await api.stopServer(id);
    if (act === 'restart') await api.restartServer(id);
  } catch (e) {
    toast(api.errorText(e), 'error');
  } finally {
    const row = rows.get(id);
    if (row) render(row);
  }
}

/** Signs in to a remote server: the browser opens on its authorization page; Gatehouse waits. */
async function signIn(id, button) {
  button.disabled = true;
  button.textContent = 'Waiting for the browser…';
  toast(`Opening your browser to sign in to ${id}…`);
  try {
    await api.signIn(id);
    toast(`Signed in to ${id}`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  } finally {
    button.disabled = false;
    button.textContent = 'Sign in';
    const row = rows.get(id);
    if (row) render(row);
  }
}

async function toggle(id) {
  const row = rows.get(id);
  if (!row) return;
  row.expanded = !row.expanded;
  row.node.querySelector('.expand').setAttribute('aria-expanded', String(row.expanded));
  row.node.querySelector('.expand').textContent = row.expanded ? '▾' : '▸';
  row.node.querySelector('.details').hidden = !row.expanded;
  if (row.expanded) {
    loadTools(row);
    const log = row.node.querySelector('.log');
    log.textContent = '';
    try {
      const f = await api.followLogs(id, (line) => appendLog(log, line));
      for (const line of f.lines) appendLog(log, line);
      row.stopLogs = f.stop;
    } catch (e) {
      log.textContent = api.errorText(e);
    }
  } else {
    row.stopLogs?.();
    row.stopLogs = null;
  }
}

function appendLog(pre, line) {
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  const tag = line.stream === 'gatehouse' ? '· ' : '';
  pre.append(el('span', { class: `log-${line.stream}` }, `${clock(line.time_ms)} ${tag}${line.line}\n`));
  while (pre.childNodes.length > 1000) pre.firstChild.remove();
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

const FLAG_LABELS = { ask: 'asks you', allow: 'runs', disabled: 'disabled' };

async function loadTools(row) {
  const id = row.status.id;
  const body = row.node.querySelector('.tools tbody');
  const empty = row.node.querySelector('.tools-empty');
  let tools = [];
  let entry = {};
  let grants = [];
  try {
    [tools, entry] = await Promise.all([api.serverTools(id), api.serverEntry(id)]);
    grants = await api.grants().catch(() => []);
  } catch (e) {
    empty.textContent = api.errorText(e);
  }
  // "Always" answers of this server's tools: a tool that asks says it will not, for whom, since when.
  const always = (tool) => grants.filter((g) => g.scope === 'always' && g.server === id && g.tool === tool);
  body.replaceChildren(...tools.map((t) => {
    const policy = (entry.tools ?? {})[t.tool] ?? {};
    const explicit = policy.enabled === false ? 'disabled'
      : policy.requires_approval === true ? 'ask'
        : policy.requires_approval === false ? 'allow' : '';
    const select = el('select', { class: 'tool-policy', 'aria-label': `Calls to ${t.name}` },
      el('option', { value: '', text: 'Default policy' }),
      el('option', { value: 'ask', text: 'Always ask' }),
      el('option', { value: 'allow', text: 'Never ask' }),
      el('option', { value: 'disabled', text: 'Disabled' }));
    select.value = explicit;
    select.addEventListener('change', () => setToolPolicy(row, t.tool, select.value));
    return el('tr', { dataset: { tool: t.tool } },
      el('td', {}, el('code', { text: t.name })),
      el('td', { text: t.title ? `${t.title} — ${t.description ?? ''}` : (t.description ?? '') }),
      el('td', {},
        el('span', { class: `flag flag-${t.approval}`, text: FLAG_LABELS[t.approval] }),
        ...always(t.tool).map((g) => el('span', {
          class: 'flag flag-always',
          title: 'Revoke in Permissions',
          text: `always allowed (${g.profile ?? 'default'}) since ${g.since_ms ? clock(g.since_ms) : 'earlier'}`,
        })),
        select));
  }));
  empty.hidden = tools.length > 0;
  if (!tools.length) empty.textContent = row.status.state === 'running' ? 'This server lists no tools.' : 'Tools appear once the server is running.';
}

/** Lists a server's tools again without restarting it (e.g. after it changed them). */
async function refreshTools(id, button) {
  const row = rows.get(id);
  if (!row) return;
  button.disabled = true;
  try {
    await api.refreshTools(id);
    toast(`Listed the tools of ${id} again`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  } finally {
    button.disabled = false;
  }
  loadTools(row);
}

/** Saves one tool's flag in the server's entry (the core validates and writes the config). */
async function setToolPolicy(row, tool, value) {
  const id = row.status.id;
  try {
    const entry = await api.serverEntry(id);
    const tools = { ...(entry.tools ?? {}) };
    if (value === '') delete tools[tool];
    else if (value === 'disabled') tools[tool] = { enabled: false };
    else tools[tool] = { requires_approval: value === 'ask' };
    if (Object.keys(tools).length) entry.tools = tools; else delete entry.tools;
    await api.saveServer(id, id, entry);
    toast(`${id}__${tool}: ${value === '' ? 'follows the default policy' : { ask: 'always asks', allow: 'never asks', disabled: 'disabled' }[value]}`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  }
  loadTools(row);
}

// ---- add / edit / remove ----

let editing = null; // original id, or null when adding
let baseEntry = {};

function initForm() {
  const form = $('#server-form');
  for (const r of form.querySelectorAll('input[name=kind]')) r.addEventListener('change', syncKind);
  $('#server-cancel').addEventListener('click', () => $('#server-dialog').close());
  $('#server-remove').addEventListener('click', removeCurrent);
  $('#server-test').addEventListener('click', testCurrent);
  form.elements.command.addEventListener('change', () => splitPasted(form).catch(() => {}));
  form.addEventListener('input', (e) => clearFieldError(form, e.target.name));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    let entry;
    try {
      await splitPasted(form);
      entry = entryFromForm(form);
    } catch (err) {
      showError(form, err);
      return;
    }
    $('#server-save').disabled = true;
    try {
      await api.saveServer(editing, form.elements.id.value.trim(), entry);
      $('#server-dialog').close();
      toast(editing ? 'Saved' : 'Server added');
      refresh();
    } catch (err) {
      showError(form, err);
    } finally {
      $('#server-save').disabled = false;
    }
  });
}

/**
 * Shows a refusal next to the field it is about (the core names it in `field`; the form's own
 * checks set it too), with the input marked invalid and focused; else in the box above the
 * buttons. Hidden fields (the other kind's) fall back to the box.
 */
function showError(form, err) {
  const field = err?.field;
  const input = field ? form.elements[field] : null;
  const radios = input && !input.tagName; // a RadioNodeList: the Kind choice
  const anchor = radios ? form.querySelector('fieldset.kind') : input;
  if (!anchor || anchor.closest('[hidden]')) {
    const box = $('#server-form-error');
    box.textContent = api.errorText(err);
    box.hidden = false;
    return;
  }
  let note = form.querySelector(`.field-error[data-field="${field}"]`);
  if (!note) {
    note = el('small', { class: 'field-error', id: `field-error-${field}`, 'data-field': field, role: 'alert' });
    anchor.insertAdjacentElement('afterend', note);
  }
  note.textContent = api.errorText(err);
  note.hidden = false;
  if (!radios) {
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-errormessage', note.id);
    input.focus();
  }
}

function clearFieldError(form, field) {
  if (!field) return;
  const note = form.querySelector(`.field-error[data-field="${field}"]`);
  if (note) note.hidden = true;
  form.elements[field]?.removeAttribute?.('aria-invalid');
}

function clearErrors(form) {
  $('#server-form-error').hidden = true;
  for (const note of form.querySelectorAll('.field-error')) clearFieldError(form, note.dataset.field);
}

/**
 * A whole command line pasted into Command (`npx -y @scope/pkg arg`) becomes the program and
 * its arguments, split with the shell's quoting rules by the core, and the form shows the result.
 * Only when Arguments is empty: what the person typed there is never overwritten.
 */
async function splitPasted(form) {
  const f = form.elements;
  const line = f.command.value.trim();
  if (!/\s/.test(line) || f.args.value.trim()) return;
  const words = await api.splitCommand(line);
  if (words.length < 2) return;
  f.command.value = words[0];
  f.args.value = words.slice(1).join('\n');
  const hint = $('#command-split');
  hint.textContent = `Split into the program ${words[0]} and ${words.length - 1} argument${words.length === 2 ? '' : 's'}.`;
  hint.hidden = false;
}

/** Starts the form's server on its own (never the running hub's copy) and shows the report. */
async function testCurrent() {
  const form = $('#server-form');
  const out = $('#server-test-report');
  clearErrors(form);
  let entry;
  try {
    entry = entryFromForm(form);
  } catch (err) {
    showError(form, err);
    return;
  }
  const button = $('#server-test');
  button.disabled = true;
  out.hidden = false;
  out.textContent = 'Starting it on its own…';
  try {
    out.textContent = reportText(await api.testServer(form.elements.id.value, entry));
  } catch (err) {
    if (err?.field) {
      out.hidden = true;
      showError(form, err);
    } else {
      out.textContent = api.errorText(err);
    }
  } finally {
    button.disabled = false;
  }
}

/** A probe report as plain lines (the same facts `gatehouse test` prints). */
function reportText(r) {
  const lines = [];
  if (r.ok) lines.push(`Ready in ${r.elapsed_ms} ms (protocol ${r.protocol_version ?? '?'})`);
  else lines.push(`Not ready after ${r.elapsed_ms} ms: ${r.error ?? 'unknown error'}`);
  if (r.server_name) lines.push(`Server: ${r.server_name} ${r.server_version ?? ''}`);
  if (r.ok) {
    lines.push(`${r.tools.length} tool${r.tools.length === 1 ? '' : 's'}:`);
    for (const t of r.tools) {
      const hints = [t.read_only ? 'read-only' : '', t.destructive === true ? 'destructive' : ''].filter(Boolean);
      lines.push(`  ${t.name}${hints.length ? ` (${hints.join(', ')})` : ''}`);
    }
  }
  if (r.prompts !== null && r.prompts !== undefined) lines.push(`Prompts: ${r.prompts}`);
  if (r.resources !== null && r.resources !== undefined) lines.push(`Resources: ${r.resources}`);
  for (const w of r.warnings) lines.push(`Warning: ${w}`);
  if (r.fix) lines.push(`Fix: ${r.fix}`);
  if (!r.ok && r.stderr.length) lines.push('Last stderr lines:', ...r.stderr.map((l) => `  ${l}`));
  return lines.join('\n');
}

function syncKind() {
  const form = $('#server-form');
  const remote = form.elements.kind.value === 'remote';
  form.querySelector('.stdio-only').hidden = remote;
  form.querySelector('.remote-only').hidden = !remote;
}

function valueText(v) {
  if (typeof v === 'string') return v;
  if (v.env) return `env:${v.env}`;
  return `${v.prefix ?? ''}secret:${v.secret}`;
}

/** A value as typed: `env:VAR`, `[prefix]secret:NAME` (a name the keychain cannot hold is
 * refused, never kept as plain text), or plain text. */
function parseValue(text, field) {
  const e = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(text);
  if (e) return { env: e[1] };
  const m = /^(.*?)secret:(\S*)$/.exec(text);
  if (!m) return text;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(m[2])) {
    throw Object.assign(new Error(`"${m[2]}" is not a secret name: use 1 to 64 of a–z, A–Z, 0–9, ".", "_" and "-"`), { field });
  }
  return m[1] ? { secret: m[2], prefix: m[1] } : { secret: m[2] };
}

/** `NAME=value` (or `Name: value`) lines; a bad line is refused next to its field. */
function parsePairs(text, sep, what, field) {
  const out = {};
  text.split('\n').map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
    const at = line.indexOf(sep);
    if (at <= 0) {
      throw Object.assign(new Error(`${what} line ${i + 1} ("${line}") needs the form NAME${sep === '=' ? '=' : ': '}value`), { field });
    }
    out[line.slice(0, at).trim()] = parseValue(line.slice(at + 1).trim(), field);
  });
  return out;
}

function entryFromForm(form) {
  const f = form.elements;
  // Start from the entry being edited so settings the form does not show (per-tool flags,
  // startup timeout) are kept.
  const entry = { ...baseEntry };
  for (const k of ['command', 'args', 'env', 'cwd', 'url', 'headers', 'allow_insecure', 'requires_approval', 'enabled']) delete entry[k];
  if (f.kind.value === 'remote') {
    entry.url = f.url.value.trim();
    const headers = parsePairs(f.headers.value, ':', 'Headers', 'headers');
    if (Object.keys(headers).length) entry.headers = headers;
    if (f.allow_insecure.checked) entry.allow_insecure = true;
  } else {
    entry.command = f.command.value.trim();
    const args = f.args.value.split('\n').map((a) => a.trim()).filter(Boolean);
    if (args.length) entry.args = args;
    const env = parsePairs(f.env.value, '=', 'Environment', 'env');
    if (Object.keys(env).length) entry.env = env;
    if (f.cwd.value.trim()) entry.cwd = f.cwd.value.trim();
  }
  if (f.requires_approval.value) entry.requires_approval = f.requires_approval.value === 'true';
  if (!f.enabled.checked) entry.enabled = false;
  return entry;
}

async function openForm(id) {
  const form = $('#server-form');
  form.reset();
  clearErrors(form);
  $('#server-test-report').hidden = true;
  $('#command-split').hidden = true;
  $('#server-test-report').textContent = '';
  editing = id;
  baseEntry = {};
  $('#server-dialog-title').textContent = id ? `Edit ${id}` : 'Add server';
  $('#server-remove').hidden = !id;
  if (id) {
    try {
      baseEntry = await api.serverEntry(id);
    } catch (e) {
      toast(api.errorText(e), 'error');
      return;
    }
    const f = form.elements;
    f.id.value = id;
    f.kind.value = baseEntry.url ? 'remote' : 'stdio';
    f.command.value = baseEntry.command ?? '';
    f.args.value = (baseEntry.args ?? []).join('\n');
    f.env.value = Object.entries(baseEntry.env ?? {}).map(([k, v]) => `${k}=${valueText(v)}`).join('\n');
    f.cwd.value = baseEntry.cwd ?? '';
    f.url.value = baseEntry.url ?? '';
    f.headers.value = Object.entries(baseEntry.headers ?? {}).map(([k, v]) => `${k}: ${valueText(v)}`).join('\n');
    f.allow_insecure.checked = !!baseEntry.allow_insecure;
    f.requires_approval.value = baseEntry.requires_approval === undefined ? '' : String(baseEntry.requires_approval);
    f.enabled.checked = baseEntry.enabled !== false;
  }
  syncKind();
  $('#server-dialog').showModal();
  form.elements.id.focus();
}

async function removeCurrent() {
  const id = editing;
  if (!id) return;
  const sure = await api.confirm(`Remove "${id}"? It is stopped and taken out of your config (a backup of the config is kept).`, 'Remove server');
  if (!sure) return;
  try {
    await api.removeServer(id);
    $('#server-dialog').close();
    toast(`Removed ${id}`);
    refresh();
  } catch (e) {
    showError($('#server-form'), e);
  }
}
