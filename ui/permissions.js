// The Permissions view: every remembered answer ("always" per definition and client profile,
// "session" per client session) with Revoke, and whom each covers: an "always" covers every client
// holding its profile's token — those seen lately are named. Refreshed when shown and after any
// approval.

import * as api from './api.js';
import { $, el, clock, toast, viewError } from './dom.js';

let visible = false;

export function init() {
  api.on('approval-resolved', () => { if (visible) load(); });
}

export function shown() {
  visible = true;
  load();
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
      el('td', {}, el('code', { text: `${g.server}__${g.tool}` })),
      el('td', { text: g.scope === 'always' ? 'always' : 'this session' }),
      el('td', {}, el('span', { text: g.profile ?? 'default' }),
        el('span', { class: 'hint covers', text: covers(g, profiles) })),
      el('td', { text: g.since_ms ? clock(g.since_ms) : '—' }),
      el('td', { text: g.definition ? `definition ${g.definition}…` : `session of ${g.client ?? 'an unnamed client'}` }),
      el('td', {}, revoke));
  }));
  const empty = rows.length === 0;
  $('#grants-empty').hidden = !empty;
  $('#grants-table').hidden = empty;
}

/** Whom an answer covers, in words: a session's client, or every client of the profile. */
function covers(g, profiles) {
  if (g.scope !== 'always') return `only ${g.client ?? 'that client'}, this session`;
  const id = g.profile ?? 'default';
  const seen = (profiles.find((p) => p.id === id)?.connected ?? [])
    .map((c) => (c.version ? `${c.name} ${c.version}` : c.name));
  const names = [...new Set(seen)];
  return names.length
    ? `every client with this profile's token — lately ${names.join(', ')}`
    : 'every client with this profile\'s token';
}
