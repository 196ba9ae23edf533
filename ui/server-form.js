// The add / edit / remove form of the Servers panel: a server entry in the file's format, checked
// by the core field by field, tested before it is saved. It calls back into the list (given to
// initForm) after a change, and imports nothing of it.

import * as api from './api.js';
import { $, el, toast, setText } from './dom.js';
import { reviewFile } from './import.js';

let editing = null; // original id, or null when adding
let baseEntry = {};
let refresh = () => {}; // the list's, given to initForm

export function initForm(onChange) {
  refresh = onChange;
  const form = $('#server-form');
  for (const r of form.querySelectorAll('input[name=kind]')) r.addEventListener('change', syncKind);
  $('#server-cancel').addEventListener('click', () => $('#server-dialog').close());
  $('#server-remove').addEventListener('click', removeCurrent);
  $('#server-test').addEventListener('click', () => testCurrent());
  $('#server-compare').addEventListener('click', () => testCurrent(true));
  form.elements.command.addEventListener('change', () => splitPasted(form).catch(() => {}));
  // A paste is read at once: a JSON snippet fills the form (never sitting flattened in the
  // one-line field), a command line is split.
  form.elements.command.addEventListener('paste', (e) => {
    const text = e.clipboardData?.getData('text') ?? '';
    if (!text.trim()) return;
    e.preventDefault();
    form.elements.command.value = text.trim();
    splitPasted(form).catch((err) => showError(form, err));
  });
  form.addEventListener('input', (e) => clearFieldError(form, e.target.name));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    let entry;
    try {
      // Several pasted servers went to Import: nothing to save here.
      if (await splitPasted(form) === 'import') return;
      entry = entryFromForm(form);
    } catch (err) {
      showError(form, err);
      return;
    }
    $('#server-save').disabled = true;
    try {
      const id = form.elements.id.value.trim();
      await api.saveServer(editing, id, entry);
      $('#server-dialog').close();
      refresh();
      // What really happened, not a bare "added": started, still starting, or why it failed.
      toast(await outcome(id, editing ? 'saved' : 'added'));
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
    setText(box, api.errorText(err));
    box.hidden = false;
    return;
  }
  let note = form.querySelector(`.field-error[data-field="${field}"]`);
  if (!note) {
    note = el('small', { class: 'field-error', id: `field-error-${field}`, 'data-field': field, role: 'alert' });
    anchor.insertAdjacentElement('afterend', note);
  }
  setText(note, api.errorText(err));
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

/** How long after a save the form waits before it says "still starting", and how long the
 * follow-up keeps watching (a first `npx` start may download for a minute). */
const SAVE_WAIT_MS = 6000;
const FOLLOW_UP_MS = 180000;

/** The server's state in a sentence once it has settled (running, failed, waiting for a
 * sign-in, disabled), or null while it is on its way. */
async function settled(id, did) {
  const row = (await api.servers().catch(() => [])).find((r) => r.id === id);
  if (row?.state === 'running') return `${id} ${did} — running (${row.tools} tool${row.tools === 1 ? '' : 's'})`;
  if (row && ['failed', 'restarting', 'needs_sign_in'].includes(row.state)) {
    return `${id} ${did} — ${row.state === 'needs_sign_in' ? 'it needs a sign-in' : `failed to start: ${row.last_error ?? 'see its log'}`}`;
  }
  if (row?.state === 'stopped' && row.enabled === false) return `${id} ${did} — disabled`;
  if (row?.state === 'idle') return `${id} ${did} — idle: it starts when a call needs it`;
  return null;
}

/** The server's state a few seconds after a save, in a sentence; when it is still starting by
 * then, that, and its outcome in a second message when it comes. */
async function outcome(id, did) {
  const waited = Date.now();
  while (Date.now() - waited < SAVE_WAIT_MS) {
    const said = await settled(id, did);
    if (said) return said;
    await new Promise((r) => setTimeout(r, 250));
  }
  followUp(id, did);
  return `${id} ${did} — still starting (you will be told when it is up)`;
}

async function followUp(id, did) {
  const began = Date.now();
  while (Date.now() - began < FOLLOW_UP_MS) {
    await new Promise((r) => setTimeout(r, 1000));
    const said = await settled(id, did);
    if (said) {
      toast(said, said.includes('failed') ? 'error' : undefined);
      return;
    }
  }
  toast(`${id} ${did} — still not running after ${FOLLOW_UP_MS / 60000} minutes: its log says why`, 'error');
}

/**
 * A snippet pasted from a README: an `mcpServers` (or VS Code `servers`, Zed `context_servers`)
 * block, a `"name": {…}` pair or a single entry. Returns [[name, entry], …], or null when the
 * text is not JSON at all.
 */
function pastedJson(text) {
  let v = null;
  for (const t of [text, `{${text}}`]) {
    try { v = JSON.parse(t); break; } catch { /* try the next reading */ }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const isEntry = (e) => e && typeof e === 'object' && (e.command || e.url || e.serverUrl || e.httpUrl);
  const block = v.mcpServers ?? v.servers ?? v.context_servers ?? v.mcp;
  if (block && typeof block === 'object') return Object.entries(block).filter(([, e]) => isEntry(e));
  if (isEntry(v)) return [[null, v]];
  return Object.entries(v).filter(([, e]) => isEntry(e));
}

/** Fills the form from one pasted entry (its other settings kept as the entry being edited). */
function fillFrom(form, name, e) {
  const f = form.elements;
  if (name && !f.id.value.trim()) f.id.value = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 32);
  const url = e.url ?? e.serverUrl ?? e.httpUrl;
  f.kind.value = url ? 'remote' : 'stdio';
  f.command.value = Array.isArray(e.command) ? e.command[0] : (e.command ?? '');
  const args = Array.isArray(e.command) ? e.command.slice(1) : (e.args ?? []);
  f.args.value = args.map(String).join('\n');
  const text = (o) => Object.entries(o ?? {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n');
  f.env.value = text(e.env ?? e.environment);
  f.url.value = url ?? '';
  f.headers.value = Object.entries(e.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n');
  syncKind();
}

/**
 * What was pasted into Command becomes the form: a JSON snippet from a README fills every field
 * (several servers are sent to Import); a whole command line (`npx -y @scope/pkg arg`) becomes
 * the program and its arguments, split with the shell's quoting rules by the core — only when
 * Arguments is empty: what the person typed there is never overwritten.
 */
async function splitPasted(form) {
  const f = form.elements;
  const line = f.command.value.trim();
  if (line.startsWith('{') || line.startsWith('"')) {
    const found = pastedJson(line);
    const hint = $('#command-split');
    if (!found || !found.length) {
      throw Object.assign(new Error('This looks like JSON but is not a server entry Gatehouse can read: paste one server\'s entry, an "mcpServers" block, or a command line'), { field: 'command' });
    }
    if (found.length > 1) {
      // Several servers: Import reviews each (the core keeps the snippet in memory only).
      const path = await api.importPaste(line);
      $('#server-dialog').close();
      toast(`${found.length} servers pasted (${found.map(([n]) => n).join(', ')}): review them in Import`);
      reviewFile(path);
      return 'import';
    }
    const [[name, entry]] = found;
    fillFrom(form, name, entry);
    setText(hint, `Filled from the pasted snippet${name ? ` (${name})` : ''}: check the fields, then Save.`);
    hint.hidden = false;
    return;
  }
  // A server's address: a remote server.
  if (/^https?:\/\/\S+$/i.test(line)) {
    fillFrom(form, suggestedId([], line), { url: line });
    const hint = $('#command-split');
    setText(hint, 'Filled as a remote server at this address: check the fields, then Save.');
    hint.hidden = false;
    return;
  }
  if (!/\s/.test(line) || f.args.value.trim()) return;
  const words = await api.splitCommand(line);
  if (words.length < 2) return;
  f.command.value = words[0];
  f.args.value = words.slice(1).join('\n');
  if (!f.id.value.trim()) f.id.value = suggestedId(words, '');
  const hint = $('#command-split');
  setText(hint, `Split into the program ${words[0]} and ${words.length - 1} argument${words.length === 2 ? '' : 's'}.`);
  hint.hidden = false;
}

/** An id for a server from what runs it: the package a runner starts (`npx -y
 * @modelcontextprotocol/server-filesystem` → `filesystem`, `uvx mcp-server-time` → `time`), the
 * program's own name, or a remote address's host (`https://mcp.example.com/mcp` → `example`). */
function suggestedId(words, url) {
  const clean = (t) => t.toLowerCase()
    .replace(/^@[^/]+\//, '') // @scope/
    .replace(/@[^@]*$/, '') // @1.2.3
    .replace(/==.*$/, '') // ==1.2.3
    .replace(/^(mcp-server-|server-|mcp-)/, '')
    .replace(/(-mcp-server|-mcp|-server)$/, '')
    .replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '')
    .slice(0, 32);
  if (url) {
    let host = '';
    try { host = new URL(url).hostname; } catch { /* not a URL */ }
    const labels = host.split('.').filter((l) => !['mcp', 'api', 'www'].includes(l));
    return clean(labels.length > 1 ? labels[labels.length - 2] : (labels[0] ?? ''));
  }
  const [program, ...rest] = words;
  const base = (program ?? '').split('/').pop();
  if (['npx', 'pnpx', 'bunx', 'uvx', 'pipx'].includes(base) || (base === 'docker' && rest[0] === 'run')) {
    const pkg = rest.find((w, i) => !w.startsWith('-') && !(base === 'docker' && i === 0));
    // The package's own name: without its scope or registry path, version or image tag.
    if (pkg) return clean(pkg.split('/').pop().split(':')[0]);
  }
  return clean(base);
}

/** Starts the form's server on its own (never the running hub's copy) and shows the report;
 * with `compare`, twice — confined and with the sandbox off — and the difference. */
async function testCurrent(compare = false) {
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
  const button = $(compare ? '#server-compare' : '#server-test');
  button.disabled = true;
  out.hidden = false;
  setText(out, compare ? 'Starting it confined, then with the sandbox off…' : 'Starting it on its own…');
  try {
    const id = form.elements.id.value;
    setText(out, compare ? compareText(await api.compareServer(id, entry)) : reportText(await api.testServer(id, entry)), true);
  } catch (err) {
    if (err?.field) {
      out.hidden = true;
      showError(form, err);
    } else {
      setText(out, api.errorText(err));
    }
  } finally {
    button.disabled = false;
  }
}

/** Both runs of a comparison and the difference (the lines `gatehouse test --compare` prints). */
function compareText(c) {
  const line = (r) => (r.ok
    ? `ready, ${r.tools.length} tool${r.tools.length === 1 ? '' : 's'} (${(r.elapsed_ms / 1000).toFixed(1)} s)`
    : `failed (${(r.elapsed_ms / 1000).toFixed(1)} s): ${r.error ?? 'no reason given'}`);
  return [`confined: ${line(c.confined)}`, `unconfined: ${line(c.unconfined)}`, c.difference].join('\n');
}

/** A probe report as plain lines (the same facts `gatehouse test` prints). */
function reportText(r) {
  const lines = [];
  if (r.ok) lines.push(`Ready in ${r.elapsed_ms} ms (protocol ${r.protocol_version ?? '?'})`);
  else lines.push(`Not ready after ${r.elapsed_ms} ms: ${r.error ?? 'unknown error'}`);
  if (r.package) lines.push(`Package: ${r.package}`);
  if (r.server_name) lines.push(`Server: ${r.server_name}${r.server_version ? ` (version ${r.server_version})` : ''}`);
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
  for (const l of r.sandbox?.left_out_why ?? []) lines.push(`Sandbox: ${l.path} (${l.from}) was not opened for writing: ${l.why}; to allow it, ${l.rename ? `name "${l.rename}" in place of "${l.path}" and ` : ''}add ${l.allow} to the entry`);
  if (r.fix) lines.push(`Fix: ${r.fix}`);
  if (!r.ok && r.stderr.length) lines.push('Last stderr lines:', ...r.stderr.map((l) => `  ${l}`));
  return lines.join('\n');
}

function syncKind() {
  const form = $('#server-form');
  const remote = form.elements.kind.value === 'remote';
  form.querySelector('.stdio-only').hidden = remote;
  // A remote server runs elsewhere: no sandbox of Gatehouse's to compare with.
  $('#server-compare').hidden = remote;
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

/** The entry's "sandbox" from the form (undefined for the default); the paths it reads, its network
 * allow list and "require" are kept. */
function sandboxFromForm(f) {
  const level = f.sandbox.value;
  const write = f.sandbox_write.value.split('\n').map((p) => p.trim()).filter(Boolean);
  const kept = typeof baseEntry.sandbox === 'object' && baseEntry.sandbox !== null ? baseEntry.sandbox : {};
  const read = kept.read ?? [];
  // What the form does not show is kept: a network allow list, "require".
  const allow = typeof kept.network === 'object' && kept.network !== null ? kept.network : undefined;
  const offline = f.sandbox_offline.checked;
  if (!write.length && !read.length && !offline && !allow && !kept.require) return level === 'default' ? undefined : level;
  const o = {};
  if (level !== 'default') o.policy = level;
  if (read.length) o.read = read;
  if (write.length) o.write = write;
  if (offline) o.network = false;
  else if (allow) o.network = allow;
  if (kept.require) o.require = kept.require;
  return o;
}

/** Fills the sandbox fields from an entry's "sandbox". */
function sandboxToForm(f, s) {
  const o = typeof s === 'string' ? { policy: s } : s ?? {};
  f.sandbox.value = o.policy ?? 'default';
  f.sandbox_write.value = (o.write ?? []).join('\n');
  f.sandbox_offline.checked = o.network === false;
}

function entryFromForm(form) {
  const f = form.elements;
  // Start from the entry being edited so settings the form does not show (per-tool flags,
  // startup timeout) are kept.
  const entry = { ...baseEntry };
  for (const k of ['command', 'args', 'env', 'cwd', 'sandbox', 'url', 'headers', 'allow_insecure', 'requires_approval', 'enabled', 'start']) delete entry[k];
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
    const sandbox = sandboxFromForm(f);
    if (sandbox !== undefined) entry.sandbox = sandbox;
  }
  if (f.requires_approval.value) entry.requires_approval = f.requires_approval.value === 'true';
  if (f.start.value) entry.start = f.start.value;
  if (!f.enabled.checked) entry.enabled = false;
  return entry;
}

export async function openForm(id) {
  const form = $('#server-form');
  form.reset();
  clearErrors(form);
  $('#server-test-report').hidden = true;
  $('#command-split').hidden = true;
  setText($('#server-test-report'), '');
  editing = id;
  baseEntry = {};
  setText($('#server-dialog-title'), id ? `Edit ${id}` : 'Add server');
  $('#server-find-line').hidden = !!id;
  $('#server-remove').hidden = !id;
  let problem = null;
  if (id) {
    try {
      baseEntry = await api.serverEntry(id);
      problem = await api.serverProblem(id);
    } catch (e) {
      toast(api.errorText(e), 'error');
      return;
    }
    const f = form.elements;
    f.id.value = id;
    f.kind.value = baseEntry.url ? 'remote' : 'stdio';
    f.command.value = baseEntry.command ?? '';
    // An entry that cannot be read may hold a setting of the wrong type: shown as the form's
    // own form (a string of arguments one word a line), never a script error.
    const args = baseEntry.args ?? [];
    f.args.value = Array.isArray(args) ? args.join('\n') : String(args).split(/\s+/).filter(Boolean).join('\n');
    const env = baseEntry.env && typeof baseEntry.env === 'object' && !Array.isArray(baseEntry.env) ? baseEntry.env : {};
    f.env.value = Object.entries(env).map(([k, v]) => `${k}=${valueText(v)}`).join('\n');
    f.cwd.value = baseEntry.cwd ?? '';
    sandboxToForm(f, baseEntry.sandbox);
    f.url.value = baseEntry.url ?? '';
    const headers = baseEntry.headers && typeof baseEntry.headers === 'object' && !Array.isArray(baseEntry.headers) ? baseEntry.headers : {};
    f.headers.value = Object.entries(headers).map(([k, v]) => `${k}: ${valueText(v)}`).join('\n');
    f.allow_insecure.checked = !!baseEntry.allow_insecure;
    f.requires_approval.value = baseEntry.requires_approval === undefined ? '' : String(baseEntry.requires_approval);
    f.start.value = baseEntry.start ?? '';
    f.enabled.checked = baseEntry.enabled !== false;
  }
  syncKind();
  const dialog = $('#server-dialog');
  dialog.showModal();
  // Opened at its top, the title in view (focusing the first field never scrolls it away).
  form.elements.id.focus({ preventScroll: true });
  dialog.scrollTop = 0;
  // An entry that cannot be read: the form opens on the problem — next to the setting it is
  // about, that field focused and scrolled into view (the form shows the entry repaired where
  // it can), or in the form's error line, scrolled into view.
  if (problem) {
    showError(form, problem);
    const note = form.querySelector(`.field-error[data-field="${problem.field}"]`);
    const shownAt = note && !note.hidden ? note : $('#server-form-error');
    shownAt.scrollIntoView({ block: 'center' });
  }
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
