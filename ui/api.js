// The only module that touches window.__TAURI__: every call to the app goes through here.

const tauri = window.__TAURI__;

function call(cmd, args) {
  return tauri.core.invoke(cmd, args);
}

export function on(event, handler) {
  return tauri.event.listen(event, (e) => handler(e.payload));
}

export { errorMessage as errorText } from './dom.js';

/** A native yes/no dialog for destructive actions (approvals have their own modal). */
export function confirm(message, title, okLabel = 'Remove') {
  return tauri.dialog.ask(message, { title, kind: 'warning', okLabel, cancelLabel: 'Cancel' });
}
export const confirmDelete = (message, title) => confirm(message, title, 'Delete');

export const appState = () => call('app_state');
export const retryStart = () => call('retry_start');

export const servers = () => call('servers');
export const serverTools = (id) => call('server_tools', { id });
export const startServer = (id) => call('start_server', { id });
export const setServerEnabled = (id, enabled) => call('set_server_enabled', { id, enabled });
export const stopServer = (id) => call('stop_server', { id });
export const restartServer = (id) => call('restart_server', { id });
export const signIn = (id) => call('sign_in', { id });
export const serverEntry = (id) => call('server_entry', { id });
export const serverProblem = (id) => call('server_problem', { id });
export const saveServer = (original, id, entry) => call('save_server', { original, id, entry });
export const removeServer = (id) => call('remove_server', { id });
export const testServer = (id, entry) => call('test_server', { id, entry });
export const compareServer = (id, entry) => call('compare_server', { id, entry });
export const splitCommand = (line) => call('split_command', { line });
export const refreshTools = (id) => call('refresh_tools', { id });
export const registrySearch = (text) => call('registry_search', { text });
export const registryPlan = (name) => call('registry_plan', { name });
export const registryAdd = (name, version, id, secrets, env, allowEnv) => call('registry_add', { name, version, id, secrets, env, allowEnv });

/** Recent lines now, then each new line to onLine until the returned stop() is called. */
export async function followLogs(id, onLine) {
  const channel = new tauri.core.Channel();
  channel.onmessage = onLine;
  const { follower, lines } = await call('follow_logs', { id, onLine: channel });
  return { lines, stop: () => call('unfollow_logs', { follower }) };
}

export const clientFileAlerts = () => call('client_file_alerts');
export const restoreClientFile = (path) => call('restore_client_file', { path });
export const ackClientFile = (path) => call('ack_client_file', { path });

export const pendingApprovals = () => call('pending_approvals');
export const answerApproval = (req, decision) => call('answer_approval', { id: req.id, digest: req.digest, decision });
export const hiddenCharacters = () => call('hidden_characters');

export const secrets = () => call('secrets');
export const setSecret = (name, value) => call('set_secret', { name, value });
export const deleteSecret = (name) => call('delete_secret', { name });

export const activity = (server, client) => call('activity', { limit: 300, server: server || null, client: client || null });
export const exportActivity = (format, server, client, group) => call('export_activity', { format, server: server || null, client: client || null, group: group || null });
export const connectInfo = (profile) => call('connect_info', { profile: profile || null });
export const clientProfiles = () => call('client_profiles');
export const grants = () => call('grants');
export const settings = () => call('settings');
export const saveSettings = (s) => call('save_settings', {
  approvalDefault: s.approval_default, approvalTimeoutSecs: s.approval_timeout_secs, listen: s.listen,
});
export const revokeGrant = (grant) => call('revoke_grant', { grant });
export const heldChanges = () => call('held_changes');
export const answerChange = (id, allow) => call('answer_change', { id, allow });
export const rules = () => call('rules');
export const addRule = (server, tool, rule, client) => call('add_rule', { server, tool, rule, client: client || null });
export const removeRule = (r) => call('remove_rule', { at: r.at, rule: r.rule });
export const testRules = (days) => call('test_rules', { days: days ?? null });
export const saveClientProfile = (id, servers) => call('save_client_profile', { id, servers });
export const removeClientProfile = (id) => call('remove_client_profile', { id });
export const rotateClientToken = (id) => call('rotate_client_token', { id });
export const autostart = () => call('autostart');
export const setAutostart = (enabled) => call('set_autostart', { enabled });
export const setTextSize = (scale) => call('set_text_size', { scale });

export const uiPainted = (servers) => call('ui_painted', { servers });
export const approvalShown = (id) => call('approval_shown', { id });

export const writeClientConfig = (target, profile) => call('write_client_config', { target, profile: profile || null });
export const importPreview = (path) => call('import_preview', { path: path || null });
export const importPaste = (text) => call('import_paste', { text });
export const importServers = (path, names, moveSecrets, renames) => call('import_servers', { path, names, moveSecrets, renames: renames ?? null });
export const removeFromClient = (path, names) => call('remove_from_client', { path, names });
