// Servers' summary of the changes to what a server says that wait for you (its pins): a prompt's
// text or definition, its instructions, an app's HTML. Each shows what changed — the diff, or for
// an app its size and hash and the new HTML as text (never rendered) — and the two answers:
// approve it (it becomes what clients get) or keep the approved version.

import * as api from './api.js';
import { $, el, clock, toast, viewError } from './dom.js';

const WHAT = {
  prompt: (c) => (c.arguments ? `prompt ${c.name} (its text for ${c.arguments})` : `prompt ${c.name} (its definition)`),
  instructions: () => 'its instructions',
  ui: (c) => `the app at ${c.name}`,
};

export function init() {
  api.on('change-held', refresh);
  api.on('change-resolved', refresh);
}

export async function refresh() {
  let changes;
  try {
    changes = await api.heldChanges();
  } catch {
    return; // the hub is not running: Servers says so
  }
  const box = $('#held-changes');
  box.replaceChildren(...changes.map(card));
  box.hidden = changes.length === 0;
}

function card(c) {
  const approve = el('button', { type: 'button', class: 'primary' }, 'Approve the change');
  const keep = el('button', { type: 'button' }, 'Keep the approved version');
  approve.addEventListener('click', () => act(c, true, approve));
  keep.addEventListener('click', () => act(c, false, keep));
  const what = (WHAT[c.kind] ?? (() => c.name))(c);
  const size = `approved: ${c.old_bytes} bytes, sha256 ${c.old_hash.slice(0, 12)} → now: ${c.new_bytes} bytes, sha256 ${c.new_hash.slice(0, 12)}`;
  return el('article', { class: 'client-file held-change banner', dataset: { id: c.id, kind: c.kind } },
    el('div', {},
      el('strong', { text: `${c.server} changed ${what}` }),
      el('p', { text: `${c.reason_text}. Seen ${clock(c.requested_at)}.` }),
      el('p', { class: 'hint', text: size }),
      el('details', { open: true },
        el('summary', {}, c.diff ? 'Show the change' : 'Show the new content (as text)'),
        el('pre', { class: 'diff', lines: c.diff ?? c.new_text })),
      el('p', { class: 'row-actions left' }, approve, keep)));
}

async function act(c, allow, button) {
  button.disabled = true;
  try {
    await api.answerChange(c.id, allow);
    toast(allow ? `${c.server}: the change is approved` : `${c.server}: the approved version stays`);
    viewError('servers', null);
  } catch (e) {
    viewError('servers', e);
  } finally {
    refresh();
  }
}
