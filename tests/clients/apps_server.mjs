// An MCP Apps server built with the real extension SDK (@modelcontextprotocol/ext-apps 1.7.5 on
// the TypeScript SDK 1.32), over stdio, as its README shows one: the app tool is registered only
// when the client says it can show apps (`getUiCapability`), else a text-only tool of the same
// name. Usage: node apps_server.mjs CLIENTS_DIR — where scripts/install-peers.sh put the SDKs.
//   show_clock  the app tool (`_meta.ui.resourceUri: ui://clock/app.html`, model and app)
//   get_time    the tool the app itself calls (`visibility: ["app"]`), by its own name
//   ui://clock/app.html  the app (text/html;profile=mcp-app)
const dir = process.argv[2];
const sdk = `${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { McpServer } = await import(`${sdk}/server/mcp.js`);
const { StdioServerTransport } = await import(`${sdk}/server/stdio.js`);
const apps = await import(`${dir}/node_modules/@modelcontextprotocol/ext-apps/dist/src/server/index.js`);
const { z } = await import(`${dir}/node_modules/zod/index.js`);

const URI = "ui://clock/app.html";
const HTML = `<!doctype html><title>Clock</title><p id="t"></p><script type="module">
// The app asks its host to call get_time on its server, by the server's own name.
</script>`;

// Capabilities declared up front: the tools are registered once the client has said what it
// can show, after the connection is made.
const server = new McpServer(
  { name: "clock-app", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } },
);
server.server.oninitialized = () => {
  try { register(); } catch (e) { console.error(`apps_server: ${e.stack}`); }
};
function register() {
  const ui = apps.getUiCapability(server.server.getClientCapabilities());
  if (ui?.mimeTypes?.includes(apps.RESOURCE_MIME_TYPE)) {
    apps.registerAppTool(server, "show_clock", {
      title: "Show clock",
      description: "Shows a clock app",
      inputSchema: { zone: z.string().optional() },
      _meta: { ui: { resourceUri: URI } },
    }, async ({ zone }) => ({ content: [{ type: "text", text: `clock shown for ${zone ?? "UTC"}` }] }));
    apps.registerAppTool(server, "get_time", {
      description: "The time, for the clock app",
      inputSchema: {},
      _meta: { ui: { resourceUri: URI, visibility: ["app"] } },
    }, async () => ({ content: [{ type: "text", text: "12:00" }] }));
  } else {
    server.registerTool("show_clock", { description: "The time as text (no app support)" },
      async () => ({ content: [{ type: "text", text: "text-only clock: 12:00" }] }));
  }
  apps.registerAppResource(server, "Clock", URI, { description: "The clock app" },
    async () => ({ contents: [{ uri: URI, mimeType: apps.RESOURCE_MIME_TYPE, text: HTML }] }));
}
await server.connect(new StdioServerTransport());
