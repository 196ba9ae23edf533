// The Settings view: the approval default and timeout (used at once) and the gateway address
// (used from the next start), saved in the config by the core; start at login; the theme
// and text size (this computer only: kept in the webview's storage).

import * as api from './api.js';
import { $, toast, viewError, setText } from './dom.js';

const THEME_KEY = 'gatehouse-theme';
const TEXT_SIZE_KEY = 'gatehouse-text-size';

const systemDark = window.matchMedia('(prefers-color-scheme: dark)');

/** Applies the stored theme, or the system's when none is stored (the CSS has one palette per
 * theme, chosen by `data-theme`). Called at start and whenever either changes. */
export function applyTheme() {
  const stored = window.localStorage.getItem(THEME_KEY) || '';
  document.documentElement.dataset.theme = stored || (systemDark.matches ? 'dark' : 'light');
}

/** Applies the stored text size (the webview's zoom: the layout reflows for the width left). */
export async function applyTextSize() {
  const scale = Number(window.localStorage.getItem(TEXT_SIZE_KEY) || '1');
  $('#text-size').value = String(scale);
  if (scale === 1) return;
  try {
    await api.setTextSize(scale);
  } catch (x) {
    window.localStorage.removeItem(TEXT_SIZE_KEY);
    toast(api.errorText(x), 'error');
  }
}

export function init() {
  applyTheme();
  applyTextSize();
  $('#text-size').addEventListener('change', async (e) => {
    const scale = Number(e.target.value);
    try {
      await api.setTextSize(scale);
      if (scale === 1) window.localStorage.removeItem(TEXT_SIZE_KEY);
      else window.localStorage.setItem(TEXT_SIZE_KEY, String(scale));
    } catch (x) {
      toast(api.errorText(x), 'error');
    }
  });
  systemDark.addEventListener('change', applyTheme);
  $('#theme').addEventListener('change', (e) => {
    if (e.target.value) window.localStorage.setItem(THEME_KEY, e.target.value);
    else window.localStorage.removeItem(THEME_KEY);
    applyTheme();
  });
  $('#autostart').addEventListener('change', async (e) => {
    try {
      e.target.checked = await api.setAutostart(e.target.checked);
    } catch (x) {
      e.target.checked = !e.target.checked;
      toast(api.errorText(x), 'error');
    }
  });
  $('#settings-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const errBox = $('#settings-form-error');
    errBox.hidden = true;
    try {
      fill(await api.saveSettings({
        approval_default: f.approval_default.value,
        approval_timeout_secs: Number(f.approval_timeout_secs.value),
        listen: f.listen.value.trim(),
      }));
      toast('Settings saved');
    } catch (x) {
      setText(errBox, api.errorText(x));
      errBox.hidden = false;
    }
  });
}

/** Connected clients that give up on a call sooner than `timeout` seconds, said under it. */
async function patience(timeout) {
  const note = $('#settings-patience');
  const profiles = await api.clientProfiles().catch(() => []);
  const short = profiles.flatMap((p) => (p.connected ?? [])
    .filter((c) => c.gives_up_after_secs && c.gives_up_after_secs < timeout)
    .map((c) => `${c.name} (profile ${p.id}) gives up after ${c.gives_up_after_secs} s`));
  note.hidden = short.length === 0;
  setText(note, short.length
    ? `${short.join('; ')}: a call it makes that waits longer is abandoned by it before you answer.`
    : '');
}

function fill(s) {
  const f = $('#settings-form').elements;
  f.approval_default.value = s.approval_default;
  f.approval_timeout_secs.value = s.approval_timeout_secs;
  patience(s.approval_timeout_secs);
  f.listen.value = s.listen;
  // Where it listens now, and why that may not be the address above: a --listen given at start
  // wins for this run; an address saved here is used from the next start.
  let running = s.running_url ? `Listening now on ${s.running_url}` : '';
  if (s.running_url && s.listen_override) {
    running += ` — given with ${s.listen_given_by ?? '--listen'} when Gatehouse started, which overrides the address above for this run.`;
  } else if (s.running_url && !s.running_url.includes(`//${s.listen}/`)) {
    running += ` — the address above is used from the next start.`;
  } else if (running) running += '.';
  setText($('#settings-running'), running);
}

export async function shown() {
  $('#theme').value = window.localStorage.getItem(THEME_KEY) || '';
  $('#autostart').checked = await api.autostart().catch(() => false);
  try {
    fill(await api.settings());
    viewError('settings', null);
  } catch (e) {
    viewError('settings', e);
  }
}

export function hidden() {}
