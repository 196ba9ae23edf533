// The Permissions view: every remembered answer ("always" per definition and client profile,
// "session" per client session, "exact" per call) with Revoke, the config's argument rules with
// Remove and a Test over the recorded calls, and whom each covers: an "always" covers every client
// holding its profile's token — those seen lately are named. Refreshed when shown and after any
// approval.

import * as api from './api.js';
import { $, cell, clientName, el, clock, fitTable, setText, shown as revealed, toast, viewError } from './dom.js';

let visible = false;
let fitGrants = () => {};
let fitRules = () => {};

const SCOPES = { always: 'always', session: 'this session', exact: 'this exact call, this session', 'exact-always': 'this exact call, always' };

export function init() {
  fitGrants = fitTable($('#grants-table'));
  fitRules = fitTable($('#rules-table'));
  api.on('approval-resolved', () => { if (visible) load(); });
  $('#rules-test').addEventListener('click', testRules);
}

export function shown() {
  visible = true;
  load();
  loadRules();
}

export function hidden() {
  visible = false;
}

async function load() {
  let rows;
  let profiles = [];
  try {
    [rows, profiles] = await Promise.all([api.grants(), api.clientProfiles().catch(() => [])]);
    viewError('permissions', null);
  } catch (e) {
    viewError('permissions', e);
    return;
  }
  $('#grants-table tbody').replaceChildren(...rows.map((g) => {
    const revoke = el('button', { type: 'button', class: 'danger', dataset: { act: 'revoke' } }, 'Revoke');
    revoke.addEventListener('click', async () => {
      revoke.disabled = true;
      try {
        await api.revokeGrant(g);
        toast(`${g.server}__${g.tool}: asks again`);
      } catch (e) {
        toast(api.errorText(e), 'error');
      }
      load();
    });
    return el('tr', { dataset: { tool: `${g.server}__${g.tool}`, scope: g.scope } },
      cell('Tool', el('code', { text: `${g.server}__${g.tool}` })),
      cell('Scope', SCOPES[g.scope] ?? g.scope),
      cell('Client', el('span', { text: g.profile ?? 'default' }),
        el('span', { class: 'hint covers', text: covers(g, profiles) })),
      cell('Since', g.since_ms ? clock(g.since_ms) : '—'),
      cell('Covers', coverage(g)),
      el('td', { class: 'row-actions' }, revoke));
  }));
  const empty = rows.length === 0;
  $('#grants-empty').hidden = !empty;
  $('#grants-table').hidden = empty;
  fitGrants();
}

/** What an answer covers, in words: an exact grant the call itself (its tool and arguments, cut
 * with "show all"), an "always" every call to the tool with this definition, a session answer
 * every call of that session. */
function coverage(g) {
  if (typeof g.arguments === 'string') {
    const whole = `${g.server}__${g.tool} with ${g.arguments}`;
    const short = whole.length > 120 ? `${whole.slice(0, 120)}…` : whole;
    const text = el('span', { class: 'exact-call', text: short });
    if (short === whole) return el('span', {}, 'this call: ', text);
    const more = el('button', { type: 'button', class: 'link' }, 'show all');
    more.addEventListener('click', () => { setText(text, whole); more.remove(); });
    return el('span', {}, 'this call: ', text, ' ', more);
  }
  if (g.definition) return `every call to ${g.server}__${g.tool} while its definition is ${g.definition}…`;
  return `every call of the session of ${g.client ?? 'an unnamed client'}`;
}

/** Whom an answer covers, in words: a session's client, or every client of the profile. */
function covers(g, profiles) {
  if (g.scope !== 'always' && g.scope !== 'exact-always') return `only ${g.client ?? 'that client'}, this session`;
  const id = g.profile ?? 'default';
  const seen = (profiles.find((p) => p.id === id)?.connected ?? [])
    .map((c) => (c.version ? `${clientName(c.name, c.imitates)} (version ${c.version})` : clientName(c.name, c.imitates)));
  const names = [...new Set(seen)];
  return names.length
    ? `every client with this profile's token — lately ${names.join(', ')}`
    : 'every client with this profile\'s token';
}

/** The config's argument rules, each by its name in the config, with Remove. */
async function loadRules() {
  let rules;
  try {
    rules = await api.rules();
  } catch (e) {
    viewError('permissions', e);
    return;
  }
  $('#rules-table tbody').replaceChildren(...rules.map((r) => {
    const remove = el('button', { type: 'button', class: 'danger' }, 'Remove');
    remove.addEventListener('click', async () => {
      if (!await api.confirm(revealed(`Remove the rule ${r.at} (${r.text})? The calls it decides will again follow the server's and the tool's own settings.`), 'Remove rule')) return;
      remove.disabled = true;
      try {
        await api.removeRule(r);
        toast(`${r.at} removed`);
      } catch (e) {
        toast(api.errorText(e), 'error');
      }
      loadRules();
    });
    return el('tr', { dataset: { at: r.at } },
      cell('Rule', el('code', { text: r.at })),
      cell('Says', r.text),
      cell('Covers', r.kind === 'client' ? `client profile ${r.owner} only` : 'every client'),
      el('td', { class: 'row-actions' }, remove));
  }));
  $('#rules-empty').hidden = rules.length > 0;
  $('#rules-table').hidden = rules.length === 0;
  fitRules();
}

/** The most calls a rules test lists by name (the CLI lists them all). */
const CHANGES_SHOWN = 12;
const WAS = { allowed: 'ran unasked', denied: 'was denied', timed_out: 'timed out waiting for you', withdrawn: 'was withdrawn' };
const WOULD = { allow: 'allowed', deny: 'denied', ask: 'asked' };

/** Whether the rules would decide a past call otherwise than it went: a call that ran unasked
 * that would now be asked or denied, one the person was asked that a rule would now decide, one
 * that was denied that would now run. */
function changes(c) {
  if (c.was === 'allowed') return c.would !== 'allow';
  if (c.was === 'denied') return c.would === 'allow';
  if (c.was.startsWith('approved') || c.was.startsWith('remembered') || c.was === 'timed_out' || c.was === 'withdrawn') return c.would !== 'ask';
  return false;
}

/** Runs the rules over the recorded calls and says what they would have done. */
async function testRules() {
  const out = $('#rules-test-result');
  setText(out, 'Testing…');
  try {
    const report = await api.testRules(30);
    const count = (w) => report.calls.filter((c) => c.would === w).length;
    const changed = report.calls.filter(changes);
    setText(out, `${report.calls.length} calls in the last 30 days: ${count('allow')} would be allowed, ${count('deny')} denied, ${count('ask')} asked; ${changed.length} would go otherwise than they did${changed.length ? ':' : '.'}`);
    $('#rules-test-changes').replaceChildren(...changed.slice(0, CHANGES_SHOWN).map((c) => el('li', {
      text: revealed(`${c.time.replace('T', ' ').slice(0, 16)} ${c.server}__${c.tool}: ${WAS[c.was] ?? c.was.replace(/_/g, ' ')}, would be ${WOULD[c.would]}${c.rule ? ` by ${c.rule}` : ''}`),
    })), ...(changed.length > CHANGES_SHOWN ? [el('li', { text: `and ${changed.length - CHANGES_SHOWN} more (gatehouse rules test lists every call)` })] : []));
    $('#rules-test-warnings').replaceChildren(...report.warnings.map((w) => el('li', { class: 'warning', text: w })));
  } catch (e) {
    setText(out, api.errorText(e));
  }
}
