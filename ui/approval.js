// The approval modal: one held call at a time, oldest first, with everything needed to decide.
// Deny has the focus; Esc denies; the countdown shows when the call is denied on its own — it
// runs only for the call at the front (the others wait their turn, with the whole timeout). The
// calls waiting behind it are listed with their arguments, and can be answered together: all of
// the same tool allowed once each, all from one client denied, or all denied. Calls nobody
// answered in time are counted in a lasting note (with the way to Activity), not a toast.

import * as api from './api.js';
import { $, el, toast } from './dom.js';

let queue = []; // ApprovalRequest, oldest first
let shownId = null;
let timer = null;

const dialog = () => $('#approval-dialog');
// Calls denied because nobody answered in time, since the person last looked.
let away = 0;
// Requests the person answered here: their outcome is no news to them (no toast).
const answeredHere = new Set();

export function init() {
  api.on('approval-requested', (req) => {
    if (!queue.some((r) => r.id === req.id)) queue.push(req);
    update();
  });
  // A waiting call reached the front: its countdown runs from now.
  api.on('approval-updated', (req) => {
    const at = queue.findIndex((r) => r.id === req.id);
    if (at < 0) return;
    queue[at] = req;
    if (req.id === shownId) shownId = null; // refill: the countdown starts afresh
    update();
  });
  api.on('approval-resolved', ({ id, outcome }) => {
    const req = queue.find((r) => r.id === id);
    queue = queue.filter((r) => r.id !== id);
    // A trace of what happened without the person (a timeout, an answer from elsewhere).
    const mine = answeredHere.delete(id);
    if (req && !mine && outcome === 'timed_out') {
      away += 1;
      showAway();
    } else if (req && !mine && outcome !== 'allowed' && outcome !== 'withdrawn') {
      toast(`${req.exposed}: denied`);
    }
    update();
  });
  $('#approval-deny-all').addEventListener('click', () => answerAll(queue, 'deny'));
  $('#approval-allow-like').addEventListener('click', () => answerAll(likeFront(), 'once'));
  $('#approval-deny-from').addEventListener('click', () => answerAll(fromFront(), 'deny'));
  $('#away-note').addEventListener('click', () => {
    away = 0;
    showAway();
    // Activity, showing what nobody answered.
    document.querySelector('.nav[data-view=activity]')?.click();
    const filter = $('#activity-decision');
    filter.value = 'timed_out';
    filter.dispatchEvent(new Event('change'));
  });
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

/** A client as the person knows it: its name and the profile of its token. */
const clientOf = (r) => `${r.client.name || 'an unnamed client'}${r.client.profile ? ` (${r.client.profile})` : ''}`;

/** The waiting calls to the same tool of the same server as the one shown (it included). */
const likeFront = () => queue.filter((r) => queue[0] && r.server === queue[0].server && r.tool === queue[0].tool);

/** The waiting calls from the same client as the one shown (it included). */
const fromFront = () => queue.filter((r) => queue[0] && clientOf(r) === clientOf(queue[0]));

/** Arguments in one short line, for a waiting call's entry. */
function argsLine(r) {
  const text = JSON.stringify(r.arguments ?? {});
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

/** The other waiting calls (client, tool, arguments, time left each), below the one being
 * decided, and the ways to answer several at once. */
function renderOthers() {
  const others = queue.slice(1);
  $('#approval-others').hidden = others.length === 0;
  $('#approval-deny-all').textContent = `Deny all ${queue.length}`;
  const like = likeFront();
  const allow = $('#approval-allow-like');
  allow.hidden = like.length < 2;
  allow.textContent = `Allow all ${like.length} like this, once each`;
  const from = fromFront();
  const deny = $('#approval-deny-from');
  deny.hidden = from.length < 2 || from.length === queue.length;
  deny.textContent = `Deny all ${from.length} from ${queue[0] ? clientOf(queue[0]) : ''}`;
  $('#approval-waiting').replaceChildren(...others.map((r) => {
    // Behind another, a call's countdown has not started: it waits its turn.
    const left = Math.max(0, Math.round((r.expires_at - Date.now()) / 1000));
    const when = r.queued ? 'waits its turn' : `${left} s left`;
    return el('li', { dataset: { id: r.id } },
      el('code', { text: r.exposed }), ` from ${clientOf(r)} — ${when}`,
      el('code', { class: 'waiting-args', text: argsLine(r) }));
  }));
}

/** Answers several waiting calls the same way, after asking. */
async function answerAll(calls, decision) {
  const all = [...calls];
  if (!all.length) return;
  const allow = decision !== 'deny';
  const question = allow
    ? `Allow all ${all.length} calls to ${all[0].exposed}, once each? Each runs with its own arguments.`
    : `Deny all ${all.length} ${all.length === queue.length ? 'waiting calls' : `calls from ${clientOf(all[0])}`}? None of them will run.`;
  const verb = allow ? 'Allow all' : 'Deny all';
  if (!await api.confirm(question, verb, verb)) return;
  for (const r of all) {
    answeredHere.add(r.id);
    try {
      await api.answerApproval(r.id, decision);
    } catch { /* answered elsewhere, withdrawn or timed out meanwhile */ }
  }
  queue = queue.filter((r) => !all.some((a) => a.id === r.id));
  shownId = null;
  toast(`${allow ? 'Allowed' : 'Denied'} ${all.length} call${all.length === 1 ? '' : 's'}`);
  update();
}

/** The lasting note of calls nobody answered in time (until the person looks at them). */
function showAway() {
  const note = $('#away-note');
  note.hidden = away === 0;
  note.textContent = away === 1
    ? '1 call was denied while you were away'
    : `${away} calls were denied while you were away`;
  note.title = 'Nobody answered in time. Show them in Activity';
}

async function answer(decision) {
  const req = queue[0];
  if (!req) return;
  for (const b of dialog().querySelectorAll('footer button')) b.disabled = true;
  answeredHere.add(req.id);
  try {
    await api.answerApproval(req.id, decision);
  } catch (e) {
    answeredHere.delete(req.id); // its outcome came (or comes) from elsewhere
    toast(api.errorText(e), 'error'); // already answered elsewhere, withdrawn or timed out
  } finally {
    for (const b of dialog().querySelectorAll('footer button')) b.disabled = false;
    queue = queue.filter((r) => r.id !== req.id);
    shownId = null;
    update();
  }
}
