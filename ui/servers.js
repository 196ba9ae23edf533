// The Servers panel: one row per server with its live status, actions, and on expand its tools
// (with their approval flags) and a live log tail. The add/edit/remove form is server-form.js.

import * as api from './api.js';
import { menuButton } from './menu.js';
import { $, el, duration, clock, fitTable, toast, viewError, setText, setTitle } from './dom.js';
import { initForm, openForm } from './server-form.js';
import { initRegistry } from './registry.js';

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
  initForm(refresh);
  initRegistry(refresh);
  // The empty state's first offer: the servers the person's AI clients already have.
  $('#import-empty').addEventListener('click', () => $('.nav[data-view=import]').click());
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
  const rank = (id) => (['invalid', 'failed', 'needs_sign_in'].includes(rows.get(id).status.state) ? 0 : 1);
  const ids = [...rows.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  ids.forEach((id, i) => {
    if (list.children[i] !== rows.get(id).node) list.insertBefore(rows.get(id).node, list.children[i] ?? null);
  });
  summarize();
}

function summarize() {
  const all = [...rows.values()].map((r) => r.status);
  const count = (st) => all.filter((s) => s.state === st).length;
  const tools = all.reduce((n, s) => n + (['running', 'idle'].includes(s.state) ? s.tools : 0), 0);
  const parts = [`${count('running')} running`];
  if (count('idle')) parts.push(`${count('idle')} idle (start when called)`);
  if (count('invalid')) parts.push(`${count('invalid')} not readable`);
  if (count('failed')) parts.push(`${count('failed')} failed`);
  if (count('needs_sign_in')) parts.push(`${count('needs_sign_in')} waiting for a sign-in`);
  if (count('restarting')) parts.push(`${count('restarting')} restarting`);
  if (count('stopped')) parts.push(`${count('stopped')} stopped`);
  parts.push(`${tools} tool${tools === 1 ? '' : 's'} exposed`);
  const line = $('#servers-summary');
  setText(line, all.length ? parts.join(' · ') : '');
  line.dataset.failed = count('failed') + count('invalid');
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
      // Reached from the keyboard through the menu ("Show tools and log"): a row is two Tab stops.
      el('button', { type: 'button', class: 'expand', tabindex: '-1', 'aria-expanded': 'false', 'aria-label': `Show tools and log of ${id}` }, '▸'),
      el('span', { class: 'title' },
        el('span', { class: 'name', text: id }),
        el('span', { class: 'display-name' }),
        el('span', { class: 'badge' }),
        el('span', { class: 'shield', hidden: true })),
      el('span', { class: 'meta' },
        el('span', { class: 'pid' }), el('span', { class: 'uptime' }),
        el('span', { class: 'restarts' }), el('span', { class: 'tools-count' })),
      // One action that fits the state (Start, Restart or Sign in), and a menu for the rest.
      el('span', { class: 'actions' },
        el('button', { type: 'button', class: 'primary-act' }, 'Start'),
        menuButton(`More actions for ${id}`, [
          el('button', { type: 'button', dataset: { act: 'start' } }, 'Start'),
          el('button', { type: 'button', dataset: { act: 'stop' } }, 'Stop'),
          el('button', { type: 'button', dataset: { act: 'restart' } }, 'Restart'),
          el('button', { type: 'button', dataset: { act: 'sign-in' } }, 'Sign in'),
          el('button', { type: 'button', dataset: { act: 'edit' } }, 'Edit…'),
          el('button', { type: 'button', dataset: { act: 'disable' } }, 'Turn off (stays stopped)'),
          el('button', { type: 'button', dataset: { act: 'enable' } }, 'Turn on (starts with Gatehouse)'),
          el('button', { type: 'button', dataset: { act: 'expand' } }, 'Show tools and log'),
        ], (item) => action(id, item.dataset.act, item.closest('.actions').querySelector('.primary-act'))))),
    el('p', { class: 'recovered hint', hidden: true }),
    el('code', { class: 'target' }),
    el('p', { class: 'last-error', hidden: true }),
    el('button', { type: 'button', class: 'link error-more', hidden: true }, 'show all'),
    el('ul', { class: 'warnings', hidden: true }),
    el('div', { class: 'details', hidden: true },
      el('h3', {}, el('span', { class: 'tools-title', text: 'Tools' }), ' ',
        el('button', { type: 'button', class: 'refresh-tools', 'aria-label': `List the tools of ${id} again` }, 'Refresh')),
      el('input', { type: 'search', class: 'tools-filter', placeholder: 'Filter tools by name or description', 'aria-label': `Filter the tools of ${id}`, hidden: true }),
      el('table', { class: 'table tools' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Exposed as'), el('th', {}, 'Description'), el('th', {}, 'Calls'))),
        el('tbody')),
      el('p', { class: 'tools-empty hint', hidden: true }),
      el('h3', {}, 'Log'),
      el('pre', { class: 'log', tabindex: '0', 'aria-label': `Log of ${id}` })));
  node.querySelector('.expand').addEventListener('click', () => toggle(id));
  node.querySelector('.primary-act').addEventListener('click', (e) => action(id, e.target.dataset.act, e.target));
  node.querySelector('.refresh-tools').addEventListener('click', (e) => refreshTools(id, e.target));
  node.querySelector('.error-more').addEventListener('click', () => {
    const row = rows.get(id);
    if (!row) return;
    row.errorOpen = !row.errorOpen;
    render(row);
  });
  node.querySelector('.tools-filter').addEventListener('input', (e) => filterTools(node, e.target.value));
  return node;
}

function render(row) {
  const s = row.status;
  const n = row.node;
  n.dataset.state = s.state;
  const badge = n.querySelector('.badge');
  setText(badge, { needs_sign_in: 'needs sign-in', invalid: 'cannot be read', idle: 'idle' }[s.state] ?? s.state);
  badge.className = `badge state-${s.state}`;
  if (s.state === 'restarting' && s.next_retry_ms) {
    setTitle(badge, `next attempt at ${clock(s.next_retry_ms)} (failure ${s.consecutive_failures})`);
  } else if (s.state === 'idle') {
    setTitle(badge, 'Not running: starts when a call needs it (its tools are listed meanwhile)');
  } else setTitle(badge, '');
  // The sandbox, on every local server's row: a shield when confined, a warning when not.
  const shield = n.querySelector('.shield');
  shield.hidden = !s.sandbox;
  if (s.sandbox) {
    setText(shield, s.sandbox.confined ? 'sandboxed' : 'unconfined');
    shield.className = `shield ${s.sandbox.confined ? 'confined' : 'open'}`;
    const says = s.sandbox.confined ? confinedWords(s.sandbox) : `Not sandboxed: ${s.sandbox.mechanism}`;
    setTitle(shield, says);
    shield.setAttribute('aria-label', says);
    shield.setAttribute('role', 'img');
  }
  setText(n.querySelector('.pid'), s.pid ? `pid ${s.pid}` : '');
  n.querySelector('.pid').dataset.pid = s.pid ?? '';
  setText(n.querySelector('.restarts'), `${s.restarts} restart${s.restarts === 1 ? '' : 's'}`);
  n.querySelector('.restarts').dataset.restarts = s.restarts;
  setText(n.querySelector('.tools-count'), `${s.tools} tool${s.tools === 1 ? '' : 's'}`);
  n.querySelector('.tools-count').dataset.tools = s.tools;
  if (s.target !== undefined) setText(n.querySelector('.target'), s.target);
  const err = n.querySelector('.last-error');
  const showErr = s.last_error && !['running', 'stopped', 'idle'].includes(s.state);
  err.hidden = !showErr && !(s.state === 'failed');
  // Waiting for a sign-in is not an error: said in the app's words, beside its Sign in button.
  const waiting = s.state === 'needs_sign_in';
  err.classList.toggle('waiting', waiting);
  if (waiting) {
    const why = (s.last_error ?? '').replace(/^needs a sign-in: /, '').split('; sign in from')[0];
    setText(err, `Waiting for you to sign in: press Sign in and finish in your browser.${why ? ` (${why})` : ''}`);
  } else {
    // A long error (a stderr tail, a PATH dump) is one line until the person asks for all of it.
    const full = s.last_error || '';
    const long = full.includes('\n') || full.length > 240;
    const more = n.querySelector('.error-more');
    more.hidden = err.hidden || !long;
    setText(more, row.errorOpen ? 'show less' : 'show all');
    more.setAttribute('aria-expanded', String(!!row.errorOpen));
    setText(err, long && !row.errorOpen ? `${full.split('\n')[0].slice(0, 240)} …` : full, true);
  }
  if (waiting) n.querySelector('.error-more').hidden = true;

  // A crash the server recovered from stays visible for this run.
  const rec = n.querySelector('.recovered');
  // Shown for 15 minutes after the failure, then the row is quiet again (the log keeps it).
  const recent = s.last_crash_ms && Date.now() - s.last_crash_ms < 15 * 60 * 1000;
  rec.hidden = !(s.state === 'running' && s.last_crash && recent);
  if (!rec.hidden) setText(rec, `Recovered; last failure at ${clock(s.last_crash_ms)}: ${s.last_crash}`);
  // Things to know that do not stop the server (a policy key naming no tool, a slow list…).
  const warnings = n.querySelector('.warnings');
  const list = s.warnings ?? [];
  warnings.hidden = list.length === 0;
  warnings.replaceChildren(...list.map((w) => el('li', { text: w })));
  setText(n.querySelector('.display-name'), s.name ? s.name : '');
  // The one action that fits, when one does: Sign in when it waits for one, Fix… for an entry
  // that cannot be read, Start when it is stopped or failed. A server that runs (or is on its
  // way) needs nothing: its actions — each one disruptive — are in the menu, a deliberate
  // second click, never the row's default.
  const running = s.state === 'running' || s.state === 'starting' || s.state === 'restarting';
  const invalid = s.state === 'invalid';
  const primary = invalid ? 'edit'
    : s.state === 'needs_sign_in' ? 'sign-in'
      : running || s.state === 'stopping' ? null
        : 'start';
  const main = n.querySelector('.primary-act');
  // Left alone while a sign-in waits for the browser (it says so on the button).
  if (!main.dataset.busy) {
    main.hidden = !primary;
    main.dataset.act = primary ?? '';
    setText(main, { 'sign-in': 'Sign in', start: 'Start', edit: 'Fix…' }[primary] ?? '');
    main.classList.toggle('primary', primary === 'sign-in' || primary === 'edit');
    main.setAttribute('aria-label', `${main.textContent} ${s.id}`);
    main.disabled = false;
  }
  const item = (act) => n.querySelector(`.menu [data-act=${act}]`);
  item('start').hidden = primary === 'start' || running || invalid;
  item('stop').hidden = s.state === 'stopped' || s.state === 'idle' || invalid;
  item('restart').hidden = (!s.enabled && s.state === 'stopped') || invalid || s.state === 'idle';
  item('sign-in').hidden = primary === 'sign-in' || s.state !== 'needs_sign_in';
  item('edit').hidden = invalid;
  item('disable').hidden = !s.enabled || invalid;
  item('enable').hidden = !!s.enabled || invalid;
  setText(item('expand'), row.expanded ? 'Hide tools and log' : 'Show tools and log');
  n.dataset.enabled = s.enabled ? 'true' : 'false';
  tickUptime(row);
}

function tickUptime(row) {
  const s = row.status;
  const up = row.node.querySelector('.uptime');
  if (s.state === 'running') setText(up, `up ${duration(Date.now() - s.since_ms)}`);
  else if (s.state === 'idle') setText(up, 'starts when called');
  else setText(up, '');
}

function tickUptimes() {
  for (const row of rows.values()) tickUptime(row);
}

async function action(id, act, button) {
  if (act === 'edit') { openForm(id); return; }
  if (act === 'expand') { toggle(id); return; }
  if (act === 'sign-in') { signIn(id, button); return; }
  if (act === 'enable' || act === 'disable') { setEnabled(id, act === 'enable'); return; }
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

/** Turns a server on (it starts, and starts with Gatehouse) or off (stopped, kept in the config). */
async function setEnabled(id, on) {
  try {
    await api.setServerEnabled(id, on);
    toast(on ? `${id} is enabled and starting` : `${id} is disabled and stopped (kept in the config)`);
  } catch (x) {
    toast(api.errorText(x), 'error');
  }
}

/** Signs in to a remote server: the browser opens on its authorization page; Gatehouse waits. */
async function signIn(id, button) {
  button.dataset.busy = 'sign-in';
  button.disabled = true;
  setText(button, 'Waiting for the browser…');
  toast(`Opening your browser to sign in to ${id}…`);
  try {
    await api.signIn(id);
    toast(`Signed in to ${id}`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  } finally {
    delete button.dataset.busy;
    const row = rows.get(id);
    if (row) render(row);
  }
}

async function toggle(id) {
  const row = rows.get(id);
  if (!row) return;
  row.expanded = !row.expanded;
  row.node.querySelector('.expand').setAttribute('aria-expanded', String(row.expanded));
  setText(row.node.querySelector('.menu [data-act=expand]'), row.expanded ? 'Hide tools and log' : 'Show tools and log');
  setText(row.node.querySelector('.expand'), row.expanded ? '▾' : '▸');
  row.node.querySelector('.details').hidden = !row.expanded;
  if (row.expanded) {
    loadTools(row);
    const log = row.node.querySelector('.log');
    setText(log, '');
    try {
      const f = await api.followLogs(id, (line) => appendLog(log, line));
      for (const line of f.lines) appendLog(log, line);
      row.stopLogs = f.stop;
    } catch (e) {
      setText(log, api.errorText(e));
    }
  } else {
    row.stopLogs?.();
    row.stopLogs = null;
    // A closed log keeps no lines (up to 1000 a row): they are read again when it opens.
    row.node.querySelector('.log').replaceChildren();
  }
}

function appendLog(pre, line) {
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  const tag = line.stream === 'gatehouse' ? '· ' : '';
  pre.append(el('span', { class: `log-${line.stream}` }, `${clock(line.time_ms)} ${tag}${line.line}\n`));
  while (pre.childNodes.length > 1000) pre.firstChild.remove();
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

/** What a confined server may do, in words (the kernel's mechanism is in `gatehouse status`). */
function confinedWords(sb) {
  const level = sb.summary.split(',')[0];
  const reads = level === 'strict'
    ? 'reads only the system, its own program and what its entry names'
    : 'reads the system, its own program and what its entry names, not the rest of your home';
  const net = sb.summary.includes('no network') ? 'no network' : 'network allowed';
  const left = sb.left_out?.length ? `; ${sb.left_out.length} place${sb.left_out.length === 1 ? '' : 's'} it names left out (see its warnings)` : '';
  return `Sandboxed (${level}): it ${reads}, writes only its own folders and the places it was given; ${net}${left}`;
}

const FLAG_LABELS = { ask: 'asks you', allow: 'runs', disabled: 'disabled' };

/** The argument rules that may decide a call to `tool` of server `id`: the server's own, and
 * each client profile's for its exposed name (`id__tool`, or a pattern ending in `*`). */
function rulesOf(rules, id, tool) {
  const exposed = `${id}__${tool}`;
  return rules.filter((r) => (r.kind === 'server'
    ? r.owner === id && r.tool === tool
    : r.tool === exposed || (r.tool.endsWith('*') && exposed.startsWith(r.tool.slice(0, -1)))));
}

/** A filter box from this many tools on. */
const FILTER_FROM = 11;

/** Shows the tool rows whose name or description holds `text` (case-insensitive). */
function filterTools(node, text) {
  const want = text.trim().toLowerCase();
  for (const tr of node.querySelectorAll('.tools tbody tr')) {
    tr.hidden = want !== '' && !tr.textContent.toLowerCase().includes(want);
  }
}

/** A description kept to two lines, with "more" to read the rest when it is longer. */
function description(text) {
  const body = el('div', { class: 'tool-desc', lines: text });
  if (text.length <= 140) return body;
  const more = el('button', { type: 'button', class: 'link more', 'aria-expanded': 'false' }, 'more');
  more.addEventListener('click', () => {
    const open = body.classList.toggle('open');
    setText(more, open ? 'less' : 'more');
    more.setAttribute('aria-expanded', String(open));
  });
  return el('div', {}, body, more);
}

/** A tool name as text with a break opportunity after each underscore: a narrow table wraps it
 * between its words, never inside one. */
function breakable(name) {
  return name.split(/(?<=_)/).flatMap((part, i) => (i ? [el('wbr'), part] : [part]));
}

/** Revokes an "always" answer from the tools table; the table is listed again. */
async function revokeFromTable(row, grant, button) {
  button.disabled = true;
  try {
    await api.revokeGrant(grant);
    toast(`${grant.server}__${grant.tool}: asks again`);
  } catch (e) {
    toast(api.errorText(e), 'error');
  }
  loadTools(row);
}

async function loadTools(row) {
  const id = row.status.id;
  const body = row.node.querySelector('.tools tbody');
  const empty = row.node.querySelector('.tools-empty');
  let tools = [];
  let entry = {};
  let grants = [];
  let rules = [];
  try {
    [tools, entry] = await Promise.all([api.serverTools(id), api.serverEntry(id)]);
    grants = await api.grants().catch(() => []);
    rules = await api.rules().catch(() => []);
  } catch (e) {
    setText(empty, api.errorText(e));
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
    // A tool that asks but was allowed always (for a profile) says that, with Revoke — never
    // "asks you" beside "always allowed".
    const answers = t.approval === 'ask' ? always(t.tool) : [];
    const flags = answers.length
      ? answers.map((g) => {
        const revoke = el('button', { type: 'button', class: 'link danger', dataset: { act: 'revoke' } }, 'Revoke');
        revoke.addEventListener('click', () => revokeFromTable(row, g, revoke));
        return el('span', { class: 'flag flag-always', dataset: { profile: g.profile ?? 'default' } },
          `always allowed (${g.profile ?? 'default'}) since ${g.since_ms ? clock(g.since_ms) : 'earlier'} — `, revoke);
      })
      : [el('span', { class: `flag flag-${t.approval}`, text: FLAG_LABELS[t.approval] })];
    // Its argument rules decide before the policy does: said beside it, with whom each covers —
    // never a bare "asks you" for a tool a rule allows.
    const decided = rulesOf(rules, id, t.tool);
    if (decided.length && t.approval !== 'disabled') {
      flags.push(el('span', { class: 'flag flag-rule', dataset: { rules: decided.length } },
        `unless a rule decides: ${decided.map((r) => `${r.text} (${r.kind === 'client' ? `profile ${r.owner} only` : 'every client'})`).join('; ')}`));
    }
    // The name the gateway token's clients see (the server's own where it is unique).
    return el('tr', { dataset: { tool: t.tool } },
      el('td', {}, el('code', { title: t.shown && t.shown !== t.name ? `also ${t.name}` : '' }, ...breakable(t.shown ?? t.name))),
      el('td', {}, description(t.title ? `${t.title} — ${t.description ?? ''}` : (t.description ?? ''))),
      el('td', { class: 'calls' }, ...flags, select));
  }));
  row.fitTools ??= fitTable(row.node.querySelector('.tools'));
  row.fitTools();
  setText(row.node.querySelector('.tools-title'), tools.length ? `Tools (${tools.length})` : 'Tools');
  const filter = row.node.querySelector('.tools-filter');
  filter.hidden = tools.length < FILTER_FROM;
  filterTools(row.node, filter.hidden ? '' : filter.value);
  empty.hidden = tools.length > 0;
  if (!tools.length) setText(empty, row.status.state === 'running' ? 'This server lists no tools.' : 'Tools appear once the server is running.');
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
