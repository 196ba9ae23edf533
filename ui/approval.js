// The approval modal: one held call at a time, oldest first, with everything needed to decide.
// Deny has the focus; Esc denies; the countdown shows when the call is denied on its own.

import * as api from './api.js';
import { $, el, toast } from './dom.js';

let queue = []; // ApprovalRequest, oldest first
let shownId = null;
let timer = null;

const dialog = () => $('#approval-dialog');
// Requests the person answered here: their outcome is no news to them (no toast).
const answeredHere = new Set();

export function init() {
  api.on('approval-requested', (req) => {
    if (!queue.some((r) => r.id === req.id)) queue.push(req);
    update();
  });
  api.on('approval-resolved', ({ id, outcome }) => {
    const req = queue.find((r) => r.id === id);
    queue = queue.filter((r) => r.id !== id);
    // A trace of what happened without the person (a timeout, an answer from elsewhere).
    const mine = answeredHere.delete(id);
    if (req && !mine && outcome !== 'allowed' && outcome !== 'withdrawn') {
      toast(`${req.exposed}: ${outcome === 'timed_out' ? 'nobody answered in time, denied' : 'denied'}`);
    }
    update();
  });
  $('#approval-deny-all').addEventListener('click', denyAll);
  const d = dialog();
  // Esc (the dialog's cancel) means deny, never "dismiss and leave the call hanging".
  d.addEventListener('cancel', (e) => { e.preventDefault(); answer('deny'); });
  for (const b of d.querySelectorAll('footer button')) {
    b.addEventListener('click', () => answer(b.value));
  }
}

export async function refresh() {
  try {
    queue = await api.pendingApprovals();
  } catch {
    queue = [];
  }
  update();
}

export function open() { update(true); }

function update() {
  const badge = $('#pending-link');
  badge.hidden = queue.length === 0;
  badge.textContent = queue.length === 1 ? '1 approval waiting' : `${queue.length} approvals waiting`;
  const d = dialog();
  if (queue.length === 0) {
    shownId = null;
    clearInterval(timer);
    if (d.open) d.close();
    return;
  }
  const req = queue[0];
  $('#approval-queue').textContent = queue.length > 1 ? `1 of ${queue.length} waiting` : '';
  if (shownId === req.id && d.open) return;
  fill(req);
  shownId = req.id;
  if (!d.open) d.showModal();
  $('#approval-deny').focus();
  requestAnimationFrame(() => api.approvalShown(req.id));
}

function fill(req) {
  // The client's own name, and the profile its token belongs to (what the person set up).
  const name = req.client.name || 'Unknown client';
  $('#approval-client').textContent = req.client.profile ? `${name} (profile ${req.client.profile})` : name;
  $('#approval-client').title = `session ${req.client.session}`;
  // A client that gives up sooner than the approval timeout: the person has only that long.
  const patience = req.client.gives_up_after_secs;
  const longer = patience && (req.expires_at - req.requested_at) / 1000 > patience;
  for (const e of document.querySelectorAll('.patience')) e.hidden = !longer;
  $('#approval-patience').textContent = longer
    ? `${name} gives up after ${patience} s — answer before then, or it will have left`
    : '';
  // "This session": until the client disconnects, or — a 2026-07-28 client has no protocol
  // session — for this client (its token and name) until a set time.
  const ends = req.client.session_ends_ms;
  $('#approval-session-scope').textContent = ends
    ? `this client (same token and name), until ${new Date(ends).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })} (8 hours from its first call)`
    : 'this client, until it disconnects';
  // Who an "always" covers: the profile, and the other clients seen on it.
  const profile = req.client.profile ?? 'default';
  const others = req.client.covers ?? [];
  $('#approval-always-scope').textContent = others.length
    ? `for client profile ${profile} — which ${others.join(', ')} also use${others.length === 1 ? 's' : ''}`
    : `for client profile ${profile} (no other client seen on it)`;
  $('#approval-server').textContent = req.server;
  // Why it asks, in the person's terms: the core's sentence (the UI keeps no copy of it).
  $('#approval-reason').textContent = `Asking because ${req.reason_text || 'the policy asks for this call'}.`;
  $('#approval-reason').dataset.reason = req.reason ?? 'not_read_only';
  const tool = $('#approval-tool');
  tool.replaceChildren(el('strong', { text: req.title || req.tool }), ' ', el('code', { text: req.exposed }));
  $('#approval-description').textContent = req.description || '';
  $('#approval-description').hidden = !req.description;
  const ann = $('#approval-annotations');
  const hints = [];
  const a = req.annotations || {};
  if (a.readOnlyHint === true) hints.push(['read-only', 'says it only reads']);
  if (a.destructiveHint === true) hints.push(['destructive', 'may delete or overwrite']);
  if (a.destructiveHint === false) hints.push(['additive', 'says it does not destroy data']);
  if (a.idempotentHint === true) hints.push(['idempotent', 'repeating it has no further effect']);
  if (a.openWorldHint === true) hints.push(['open-world', 'reaches outside systems']);
  ann.replaceChildren(...hints.map(([k, t]) => el('li', { class: `hint-${k}`, title: t, text: k })));
  ann.hidden = hints.length === 0;
  let args;
  try {
    args = JSON.stringify(req.arguments, null, 2);
  } catch {
    args = String(req.arguments);
  }
  $('#approval-arguments').textContent = args;
  const changed = $('#approval-changed');
  changed.hidden = !req.changed;
  if (req.changed) {
    $('#approval-changed-fields').textContent = ` ${req.changed.fields.join(', ')}`;
    $('#approval-changed-old').textContent = JSON.stringify(req.changed.old, null, 2);
    $('#approval-changed-new').textContent = JSON.stringify(req.changed.new, null, 2);
  }
  clearInterval(timer);
  const tick = () => {
    const left = Math.max(0, Math.round((req.expires_at - Date.now()) / 1000));
    $('#approval-countdown').textContent = `Denied automatically in ${left} s`;
    renderOthers();
  };
  tick();
  timer = setInterval(tick, 500);
}

/** The other waiting calls (client, tool, time left each), below the one being decided. */
function renderOthers() {
  const others = queue.slice(1);
  $('#approval-others').hidden = others.length === 0;
  $('#approval-deny-all').textContent = `Deny all ${queue.length}`;
  $('#approval-waiting').replaceChildren(...others.map((r) => {
    const left = Math.max(0, Math.round((r.expires_at - Date.now()) / 1000));
    return el('li', { dataset: { id: r.id } },
      el('code', { text: r.exposed }), ` from ${r.client.name || 'an unnamed client'} — ${left} s left`);
  }));
}

/** Denies every waiting call, after asking. */
async function denyAll() {
  const all = [...queue];
  if (!all.length) return;
  if (!await api.confirm(`Deny all ${all.length} waiting calls? None of them will run.`, 'Deny all', 'Deny all')) return;
  for (const r of all) {
    answeredHere.add(r.id);
    try {
      await api.answerApproval(r.id, 'deny');
    } catch { /* answered elsewhere, withdrawn or timed out meanwhile */ }
  }
  queue = queue.filter((r) => !all.some((a) => a.id === r.id));
  shownId = null;
  toast(`Denied ${all.length} call${all.length === 1 ? '' : 's'}`);
  update();
}

async function answer(decision) {
  const req = queue[0];
  if (!req) return;
  for (const b of dialog().querySelectorAll('footer button')) b.disabled = true;
  answeredHere.add(req.id);
  try {
    await api.answerApproval(req.id, decision);
  } catch (e) {
    toast(api.errorText(e), 'error'); // already answered elsewhere, withdrawn or timed out
  } finally {
    for (const b of dialog().querySelectorAll('footer button')) b.disabled = false;
    queue = queue.filter((r) => r.id !== req.id);
    shownId = null;
    update();
  }
}
