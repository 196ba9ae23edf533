// The approval modal: one held call at a time, oldest first, with everything needed to decide.
// Deny has the focus; Esc denies; the countdown shows when the call is denied on its own — it
// runs only for the call at the front (the others wait their turn, with the whole timeout). The
// calls waiting behind it are listed with their arguments, and can be answered together: all of
// the same tool from the same client profile allowed once each, all from one client denied, or
// all denied. Calls nobody answered in time are counted in a lasting note (with the way to
// Activity), not a toast.
//
// What the person sees is what is answered: who asks is the token's profile (the client's name
// is what it says, flagged when it imitates another); every text shows hidden characters as
// ⟨U+XXXX⟩ (dom.js); an answer names the call shown (its id and digest); and when a call appears
// or replaces the one shown, every answer stays inert for GUARD_MS — a click or key meant for
// what was there lands on nothing (the native prompt does the same; README says why 1 s).

import * as api from './api.js';
import { $, el, toast, setText, setTitle, shown } from './dom.js';

const GUARD_MS = 1000;

let queue = []; // ApprovalRequest, oldest first
let shownReq = null; // the request the modal shows
let guarded = false; // answers are inert (the buttons disabled): one fact for both
let guardTimer = null;
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
  // A waiting call reached the front: its countdown runs from now (the same call: no guard).
  api.on('approval-updated', (req) => {
    const at = queue.findIndex((r) => r.id === req.id);
    if (at < 0) return;
    queue[at] = req;
    if (shownReq && req.id === shownReq.id) {
      shownReq = req;
      startCountdown(req);
    }
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
  $('#approval-rule-add').addEventListener('click', () => addSuggestedRule(null));
  $('#approval-rule-add-profile').addEventListener('click', () => addSuggestedRule(shownReq?.client.profile));
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
  // Esc (the dialog's cancel) means deny, never "dismiss and leave the call hanging" — but not
  // within the guard, when the key was meant for what was shown before.
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
  setText(badge, queue.length === 1 ? '1 approval waiting' : `${queue.length} approvals waiting`);
  const d = dialog();
  if (queue.length === 0) {
    shownReq = null;
    clearInterval(timer);
    if (d.open) d.close();
    return;
  }
  const req = queue[0];
  setText($('#approval-queue'), queue.length > 1 ? `1 of ${queue.length} waiting` : '');
  if (shownReq && shownReq.id === req.id && d.open) return;
  // Another call takes the place of the one on screen: said, and guarded.
  const replaced = d.open && shownReq !== null;
  fill(req);
  shownReq = req;
  guard(replaced);
  if (!d.open) d.showModal();
  $('#approval-deny').focus();
  requestAnimationFrame(() => api.approvalShown(req.id));
}

/** Every answer inert for GUARD_MS from now (the call just appeared or replaced another). */
function guard(replaced) {
  guarded = true;
  $('#approval-swapped').hidden = !replaced;
  const buttons = [...dialog().querySelectorAll('footer button, .others-actions button, .rule-offer button')];
  for (const b of buttons) b.disabled = true;
  clearTimeout(guardTimer);
  guardTimer = setTimeout(() => {
    // Live when the buttons are: a timer may fire a moment before a clock says GUARD_MS passed,
    // and a click on a button shown enabled is never dropped.
    guarded = false;
    for (const b of buttons) b.disabled = false;
    // Deny has the focus once the answers are live (a disabled button cannot hold it).
    if (dialog().open) $('#approval-deny').focus();
  }, GUARD_MS);
}

const live = () => !guarded;

/** Who asks: the token's client profile, then what the client says it is. */
const who = (r) => `client profile ${r.client.profile ?? 'default'} — ${r.client.name ? `says “${r.client.name}”` : 'gives no name'}`;

function fill(req) {
  // The profile its token belongs to (what the person set up), then the client's own word.
  setText($('#approval-client'), who(req));
  setTitle($('#approval-client'), `session ${req.client.session}`);
  const imitates = $('#approval-imitates');
  imitates.hidden = !req.client.imitates;
  setText(imitates, req.client.imitates
    ? `Its name imitates “${req.client.imitates}”: it is not that client. The token is client profile ${req.client.profile ?? 'default'}'s.`
    : '');
  $('#approval-hidden').hidden = !req.hidden_characters;
  // A client that gives up sooner than the approval timeout: the person has only that long.
  const patience = req.client.gives_up_after_secs;
  const longer = patience && (req.expires_at - req.requested_at) / 1000 > patience;
  for (const e of document.querySelectorAll('.patience')) e.hidden = !longer;
  setText($('#approval-patience'), longer
    ? `the client gives up after ${patience} s — answer before then, or it will have left`
    : '');
  // "This session": until the client disconnects, or — a 2026-07-28 client has no protocol
  // session — for this client (its token and name) until a set time.
  const ends = req.client.session_ends_ms;
  setText($('#approval-session-scope'), ends
    ? `this client (same token and name), until ${new Date(ends).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })} (8 hours from its first call)`
    : 'this client, until it disconnects');
  // Who an "always" covers: the profile, and the other clients seen on it.
  const profile = req.client.profile ?? 'default';
  const others = req.client.covers ?? [];
  setText($('#approval-always-scope'), others.length
    ? `for client profile ${profile} — which ${others.join(', ')} also use${others.length === 1 ? 's' : ''}`
    : `for client profile ${profile} (no other client seen on it)`);
  setText($('#approval-server'), req.server);
  // Where the call goes: this computer, or a remote host (an approval never implies the data stays local).
  setText($('#approval-goes'), req.goes_to || '');
  for (const e of document.querySelectorAll('.goes-to')) e.hidden = !req.goes_to;
  // Why it asks, in the person's terms: the core's sentence (the UI keeps no copy of it).
  setText($('#approval-reason'), `Asking because ${req.reason_text || 'the policy asks for this call'}.`);
  $('#approval-reason').dataset.reason = req.reason ?? 'not_read_only';
  const tool = $('#approval-tool');
  tool.replaceChildren(el('strong', { text: req.title || req.tool }), ' ', el('code', { text: req.exposed }));
  setText($('#approval-description'), req.description || '', true);
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
  setText($('#approval-arguments'), args, true);
  const changed = $('#approval-changed');
  changed.hidden = !req.changed;
  if (req.changed) {
    setText($('#approval-changed-fields'), ` ${req.changed.fields.join(', ')}`);
    setText($('#approval-changed-old'), JSON.stringify(req.changed.old, null, 2), true);
    setText($('#approval-changed-new'), JSON.stringify(req.changed.new, null, 2), true);
  }
  // A rule offered from this call (its path argument's folder): added to the config, then this
  // call allowed once. Whom it covers is the person's choice: this call's client profile only
  // (its tool's rules), or every client (the server's tool); a call made with the gateway
  // token (no profile) can only be offered the latter.
  const offer = req.suggested_rule;
  $('#approval-rule').hidden = !offer;
  const own = req.client.profile;
  setText($('#approval-rule-text'), offer ? `${offer.text}, and allow this call?` : '');
  $('#approval-rule-add-profile').hidden = !own;
  setText($('#approval-rule-profile'), own ? `client profile ${own}` : '');
  startCountdown(req);
}

/** Adds the rule the shown call offers — for client profile `profile` only, or (`null`) for
 * every client — (refused with the reason if it can never match), then allows that call once. */
async function addSuggestedRule(profile) {
  const req = shownReq;
  if (!req?.suggested_rule || !live()) return;
  try {
    const warnings = await api.addRule(req.server, req.tool, req.suggested_rule.rule, profile);
    const whom = profile ? `for client profile ${profile} only` : 'for every client';
    toast(warnings.length ? `Rule added ${whom}, but: ${warnings[0]}` : `Rule added ${whom} (Permissions lists it)`);
  } catch (e) {
    toast(api.errorText(e), 'error');
    return;
  }
  // The call the rule was offered for, by its id and digest — not whatever is shown by now.
  await answer('once', req);
}

function startCountdown(req) {
  clearInterval(timer);
  const tick = () => {
    const left = Math.max(0, Math.round((req.expires_at - Date.now()) / 1000));
    setText($('#approval-countdown'), `Denied automatically in ${left} s`);
    renderOthers();
  };
  tick();
  timer = setInterval(tick, 500);
}

/** A client as the person knows it: the profile of its token, and its name. */
const clientOf = (r) => `${r.client.profile ?? 'default'} (${r.client.name ? `“${r.client.name}”` : 'no name'})`;

/** The waiting calls to the same tool of the same server from the same client profile as the
 * one shown (it included): "Allow all like this" never answers another profile's calls. */
const likeFront = () => queue.filter((r) => shownReq && r.server === shownReq.server
  && r.tool === shownReq.tool && (r.client.profile ?? null) === (shownReq.client.profile ?? null));

/** The waiting calls from the same client as the one shown (it included). */
const fromFront = () => queue.filter((r) => shownReq && clientOf(r) === clientOf(shownReq));

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
  setText($('#approval-deny-all'), `Deny all ${queue.length}`);
  const like = likeFront();
  const allow = $('#approval-allow-like');
  allow.hidden = like.length < 2;
  setText(allow, `Allow all ${like.length} like this, once each`);
  const from = fromFront();
  const deny = $('#approval-deny-from');
  deny.hidden = from.length < 2 || from.length === queue.length;
  setText(deny, `Deny all ${from.length} from ${shownReq ? clientOf(shownReq) : ''}`);
  $('#approval-waiting').replaceChildren(...others.map((r) => {
    // Behind another, a call's countdown has not started: it waits its turn.
    const left = Math.max(0, Math.round((r.expires_at - Date.now()) / 1000));
    const when = r.queued ? 'waits its turn' : `${left} s left`;
    return el('li', { dataset: { id: r.id } },
      el('code', { text: r.exposed }), ` from ${clientOf(r)} — ${when}`,
      el('code', { class: 'waiting-args', text: argsLine(r) }));
  }));
}

/** Calls listed in a confirmation at most (the rest are counted). */
const LISTED = 12;

/** Answers several waiting calls the same way, after asking — the question names the client(s)
 * and, to allow, shows each call's arguments; each answer carries its call's digest. */
async function answerAll(calls, decision) {
  const all = [...calls];
  if (!all.length || !live()) return;
  const allow = decision !== 'deny';
  const clients = [...new Set(all.map(who))];
  const lines = all.slice(0, LISTED).map((r) => `• ${argsLine(r)}`);
  if (all.length > LISTED) lines.push(`• … and ${all.length - LISTED} more`);
  const question = allow
    ? `Allow all ${all.length} calls to ${all[0].exposed} on ${all[0].server} from ${clients.join('; ')}, once each? Each runs with its own arguments:\n${lines.join('\n')}`
    : `Deny all ${all.length} ${all.length === queue.length ? 'waiting calls' : 'calls'} from ${clients.join('; ')}? None of them will run.`;
  const verb = allow ? 'Allow all' : 'Deny all';
  if (!await api.confirm(shown(question, true), verb, verb)) return;
  for (const r of all) {
    answeredHere.add(r.id);
    try {
      await api.answerApproval(r, decision);
    } catch { /* answered elsewhere, withdrawn or timed out meanwhile */ }
  }
  queue = queue.filter((r) => !all.some((a) => a.id === r.id));
  shownReq = null;
  toast(`${allow ? 'Allowed' : 'Denied'} ${all.length} call${all.length === 1 ? '' : 's'}`);
  update();
}

/** The lasting note of calls nobody answered in time (until the person looks at them). */
function showAway() {
  const note = $('#away-note');
  note.hidden = away === 0;
  setText(note, away === 1
    ? '1 call was denied while you were away'
    : `${away} calls were denied while you were away`);
  setTitle(note, 'Nobody answered in time. Show them in Activity');
}

/** The person's answer to the call shown (never another: its id and digest go with it), or
 * to `req`, the call an action began on while it was shown (the rule offer, after the rule is
 * saved). */
async function answer(decision, req = shownReq) {
  if (!req || (req === shownReq && !live())) return;
  for (const b of dialog().querySelectorAll('footer button')) b.disabled = true;
  answeredHere.add(req.id);
  try {
    await api.answerApproval(req, decision);
  } catch (e) {
    answeredHere.delete(req.id); // its outcome came (or comes) from elsewhere
    toast(api.errorText(e), 'error'); // already answered elsewhere, withdrawn or timed out
  } finally {
    // The next call may have been shown while this answer was on its way, and be guarded: its
    // buttons stay disabled until its guard ends (enabled now, a click on them would be dropped).
    for (const b of dialog().querySelectorAll('footer button')) b.disabled = guarded;
    queue = queue.filter((r) => r.id !== req.id);
    if (shownReq && shownReq.id === req.id) shownReq = null;
    update();
  }
}
