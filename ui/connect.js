// The Connect view: the gateway URL, its token (copy only, never shown), and a ready-made config
// for each AI client.

import * as api from './api.js';
import { $, clientName, el, toast, copyText, viewError, setText } from './dom.js';

let info = null;
let profile = ''; // '' is the default profile (the gateway token)
let profiles = [];

export function init() {
  $('#connect-profile').addEventListener('change', (e) => { profile = e.target.value; shown(); });
  $('#profile-new').addEventListener('click', () => {
    const form = $('#profile-new-form');
    form.hidden = !form.hidden;
    if (!form.hidden) form.elements.id.focus();
  });
  $('#profile-new-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = e.target.elements.id.value.trim();
    try {
      profiles = await api.saveClientProfile(id, null);
      profile = id;
      e.target.reset();
      e.target.hidden = true;
      toast(`Profile ${id} created with its own token`);
      shown();
    } catch (x) {
      toast(api.errorText(x), 'error');
    }
  });
  $('#profile-save').addEventListener('click', async () => {
    const servers = [...document.querySelectorAll('#profile-servers input:checked')].map((i) => i.value);
    try {
      profiles = await api.saveClientProfile(profile, servers);
      toast(`${profile} sees ${servers.length ? servers.join(', ') : 'no server'}`);
      shown();
    } catch (x) {
      toast(api.errorText(x), 'error');
    }
  });
  $('#profile-rotate').addEventListener('click', async () => {
    if (!await api.confirm(`Give ${profile} a new token? The old one stops working at once; write the client's config again.`, 'New token', 'New token')) return;
    try {
      await api.rotateClientToken(profile);
      toast(`${profile} has a new token`);
      shown();
    } catch (x) {
      toast(api.errorText(x), 'error');
    }
  });
  $('#profile-remove').addEventListener('click', async () => {
    if (!await api.confirm(`Remove the profile ${profile}? Its token stops working at once.`, 'Remove profile')) return;
    try {
      profiles = await api.removeClientProfile(profile);
      profile = '';
      shown();
    } catch (x) {
      toast(api.errorText(x), 'error');
    }
  });
  $('#copy-url').addEventListener('click', () => copy(info?.url, 'URL copied'));
  $('#copy-token').addEventListener('click', () => copy(info?.token, 'Token copied'));
}

async function copy(text, done) {
  if (!text) return;
  toast(await copyText(text) ? done : 'Could not copy to the clipboard', 'info');
}

/** What the client's own file says about reaching this Gatehouse. */
function setupText(setup) {
  switch (setup.state) {
    case 'configured': return `Configured: its file reaches this Gatehouse (profile ${setup.profile}).`;
    case 'elsewhere': return 'Its file has a Gatehouse entry for another address or an old token: write it again.';
    case 'not_set_up': return 'Not set up: its file has no Gatehouse entry yet.';
    case 'no_file': return 'Not set up: it is on this machine but has no MCP settings file yet.';
    default: return 'Not installed on this machine (neither its program nor its settings were found).';
  }
}

function masked(text) {
  return info?.token ? text.split(info.token).join('••••••••') : text;
}

/** The profile selector, the chosen profile's servers and its tool-count meter. */
async function renderProfiles() {
  profiles = await api.clientProfiles();
  if (profile && !profiles.some((p) => p.id === profile)) profile = '';
  const select = $('#connect-profile');
  select.replaceChildren(...profiles.map((p) => el('option', {
    value: p.id === 'default' ? '' : p.id,
    text: p.id === 'default' ? 'default (every tool)' : p.id,
  })));
  select.value = profile;
  const detail = $('#profile-detail');
  const current = profiles.find((p) => (p.id === 'default' ? '' : p.id) === profile);
  detail.hidden = !profile;
  const meter = $('#profile-meter');
  if (current) {
    const over = current.limit !== null && current.limit !== undefined && current.tools > current.limit;
    setText(meter, `${current.tools} tool${current.tools === 1 ? '' : 's'}`
      + (current.limit ? ` — this client handles ${current.limit} well` : '')
      + (over ? '. Too many: pick fewer servers.' : '')
      + (current.too_long?.length
        ? `. ${current.too_long.length} tool name${current.too_long.length === 1 ? ' is' : 's are'} too long for this client (${current.too_long.join(', ')}): the model APIs refuse them; they are renamed at its next listing.`
        : ''));
    meter.classList.toggle('over', over || !!current.too_long?.length);
    meter.dataset.tools = current.tools;
  }
  if (!profile) return;
  const servers = await api.servers();
  const seen = current?.servers;
  $('#profile-servers').replaceChildren(el('legend', { text: 'Servers this client sees' }),
    ...servers.map((row) => {
      const { id } = row;
      const box = el('input', { type: 'checkbox', value: id, 'aria-label': `${profile} sees ${id}` });
      box.checked = !seen || seen.includes(id);
      return el('label', { class: 'check' }, box, ` ${id}`);
    }));
}

export async function shown() {
  try {
    await renderProfiles();
    info = await api.connectInfo(profile);
    viewError('connect', null);
  } catch (e) {
    viewError('connect', e);
    return;
  }
  setText($('#gateway-url'), info.url);
  renderConnected(info.connected);
  // While shown: "last seen" ticks every second, and who is connected is asked again every 5 s.
  clearInterval(ticker);
  let ticks = 0;
  ticker = setInterval(async () => {
    ticks += 1;
    if (ticks % 5 === 0 && !document.hidden) {
      try { renderConnected((await api.connectInfo(profile)).connected); } catch { /* said on the next full load */ }
    }
    tickSeen();
  }, 1000);
  $('#client-snippets').replaceChildren(...info.clients.map((c) => {
    const card = el('div', { class: 'card snippet', dataset: { client: c.id } },
      el('h2', { text: c.label }),
      el('p', { class: `setup setup-${c.setup.state}`, text: setupText(c.setup) }),
      el('p', { class: 'hint' },
        c.transport === 'http' ? 'Connects over HTTP with the token. ' : 'Launches the gatehouse connect bridge (stdio). ',
        c.path ? 'Merge into ' : '', c.path ? el('code', { text: c.path }) : ''),
      c.reads ? el('p', { class: 'hint reads', text: `${c.reads}.` }) : null,
      el('pre', { lines: masked(c.snippet) }),
      el('div', { class: 'row-actions left' },
        el('button', { type: 'button', dataset: { act: 'copy' } }, 'Copy'),
        c.path ? el('button', { type: 'button', dataset: { act: 'write' } }, `Write to ${c.label}'s config`) : null));
    card.querySelector('[data-act=copy]').addEventListener('click', () => copy(c.snippet, `${c.label} config copied`));
    card.querySelector('[data-act=write]')?.addEventListener('click', async () => {
      const as = profile ? `as client profile ${profile}` : `as ${c.label}'s own client profile, "${c.id}" (made if missing: what you allow "always" for ${c.label} covers ${c.label} only)`;
      if (!await api.confirm(`Add Gatehouse to ${c.path} ${as}? Its other entries are kept and a backup is made.`, `Write to ${c.label}`, 'Write')) return;
      try {
        toast(await api.writeClientConfig(c.id, profile));
        // The card says what the file says now.
        shown();
      } catch (e) {
        toast(api.errorText(e), 'error');
      }
    });
    return card;
  }));
}

export function hidden() {
  clearInterval(ticker);
  ticker = null;
}

let ticker = null;

/** How long ago, in words that stay honest as time passes. */
function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 2) return 'just now';
  if (s < 120) return `${s} s ago`;
  return `${Math.round(s / 60)} min ago`;
}

/** The clients seen in the last 5 minutes, each with when it was last seen (kept ticking). */
function renderConnected(connected) {
  $('#connected-list').replaceChildren(...(connected.length
    ? connected.map((c) => el('li', { dataset: { seen: c.last_seen_ms } },
      `profile ${c.profile} — says “${clientName(c.name, c.imitates)}”${c.version ? ` (version ${c.version})` : ''}`
        + `${c.protocol ? `, protocol ${c.protocol}` : ''}`
        + ` — ${c.open ? 'connected' : 'left'}, last seen `,
      el('span', { class: 'seen', text: ago(c.last_seen_ms) })))
    : [el('li', { class: 'hint', text: 'No client has used Gatehouse in the last 5 minutes.' })]));
}

function tickSeen() {
  for (const li of document.querySelectorAll('#connected-list li[data-seen]')) {
    setText(li.querySelector('.seen'), ago(Number(li.dataset.seen)));
  }
}
