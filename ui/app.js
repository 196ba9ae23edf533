// Entry point: navigation between views, the hub's phase (starting / running / failed), and the
// wiring of each view module.

import * as api from './api.js';
import { $, $$, setText, setTitle, setHiddenRanges } from './dom.js';
import * as servers from './servers.js';
import * as approval from './approval.js';
import * as secrets from './secrets.js';
import * as activity from './activity.js';
import * as connect from './connect.js';
import * as importer from './import.js';
import * as permissions from './permissions.js';
import * as settings from './settings.js';
import * as changes from './changes.js';
import * as clientFiles from './client-files.js';

const views = { servers, activity, permissions, secrets, connect, import: importer, settings };
let current = 'servers';

function show(view) {
  if (!views[view]) return;
  if (view !== current) views[current].hidden?.();
  current = view;
  for (const b of $$('.nav')) {
    if (b.dataset.view === view) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  for (const name of Object.keys(views)) $(`#view-${name}`).hidden = name !== view;
  views[view].shown?.();
}

function renderPhase(p) {
  const banner = $('#banner');
  const state = $('#hub-state');
  document.body.dataset.phase = p.phase;
  if (p.phase === 'failed') {
    setText($('#banner-title'), 'Gatehouse is not running');
    setText($('#banner-text'), p.error || 'Start failed.');
    $('#banner-retry').hidden = false;
    banner.hidden = false;
    setText(state, 'Not running');
  } else if (p.phase === 'starting') {
    setText($('#banner-title'), 'Starting…');
    setText($('#banner-text'), `Config: ${p.config_path}`);
    $('#banner-retry').hidden = true;
    banner.hidden = false;
    setText(state, 'Starting…');
  } else {
    banner.hidden = true;
    setText(state, p.gateway_url ? `Gateway ${p.gateway_url.replace(/^http:\/\//, '')}` : '');
    setTitle(state, `Config: ${p.config_path}\nData: ${p.data_dir}\nControl socket: ${p.control_path}`);
  }
}

// The core's table of hidden characters, asked for once: every text is shown through it.
const hiddenTable = api.hiddenCharacters().then(setHiddenRanges).catch(() => {});

async function refreshAll() {
  await hiddenTable;
  // Waiting approvals first, without waiting for the app state: a window opened for an
  // approval shows the modal as soon as it can.
  const pending = approval.refresh();
  const p = await api.appState();
  renderPhase(p);
  if (p.phase === 'running') {
    await Promise.allSettled([servers.refresh(), pending, clientFiles.refresh(), changes.refresh()]);
    views[current].shown?.();
  }
}

function init() {
  for (const b of $$('.nav')) b.addEventListener('click', () => show(b.dataset.view));
  for (const a of $$('[data-goto]')) {
    a.addEventListener('click', (e) => { e.preventDefault(); show(a.dataset.goto); });
  }
  $('#banner-retry').addEventListener('click', async () => {
    $('#banner-retry').disabled = true;
    try { renderPhase(await api.retryStart()); } finally { $('#banner-retry').disabled = false; }
    refreshAll();
  });
  $('#pending-link').addEventListener('click', () => approval.open());
  // Ctrl+1..7 switch views.
  document.addEventListener('keydown', (e) => {
    if (!(e.ctrlKey || e.metaKey) || document.querySelector('dialog[open]')) return;
    const names = Object.keys(views);
    const i = Number(e.key) - 1;
    if (i >= 0 && i < names.length) { e.preventDefault(); show(names[i]); }
  });
  servers.init();
  approval.init();
  secrets.init();
  activity.init();
  connect.init();
  permissions.init();
  settings.init();
  importer.init();
  clientFiles.init();
  changes.init();
  api.on('hub-phase', (p) => { renderPhase(p); if (p.phase === 'running') refreshAll(); });
  api.on('resync', refreshAll);
  refreshAll();
}

init();
