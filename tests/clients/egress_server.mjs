// A TypeScript SDK server (1.32, over stdio) whose one tool fetches a URL with Node's own
// `fetch` (undici), for the network fence's tests. Node 22.21+ sends it through the proxy named
// in HTTP(S)_PROXY when NODE_USE_ENV_PROXY=1 (Gatehouse sets both); an older Node ignores them
// and connects directly. Usage: node egress_server.mjs CLIENTS_DIR
//   get {url}  "STATUS BODY", or an error with its cause
const dir = process.argv[2];
const sdk = `${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { McpServer } = await import(`${sdk}/server/mcp.js`);
const { StdioServerTransport } = await import(`${sdk}/server/stdio.js`);
const { z } = await import(`${dir}/node_modules/zod/index.js`);

const server = new McpServer({ name: "egress-node", version: "1.0.0" });
server.tool("get", "Fetches a URL", { url: z.string() }, async ({ url }) => {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(10000) });
    return { content: [{ type: "text", text: `${r.status} ${(await r.text()).trim()}` }] };
  } catch (e) {
    const cause = e.cause ? `: ${e.cause.code ?? ""} ${e.cause.message ?? e.cause}` : "";
    return { content: [{ type: "text", text: `${e.message}${cause}` }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
