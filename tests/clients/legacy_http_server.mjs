// A 2025-era remote MCP server: the TypeScript SDK 1.32 (which speaks no 2026-07-28) over
// Streamable HTTP with sessions, on loopback only, as the SDK's README sets one up.
// Usage: node legacy_http_server.mjs CLIENTS_DIR PORT — http://127.0.0.1:PORT/mcp
//   echo {text}  the text back
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";

const [dir, port] = [process.argv[2], Number(process.argv[3])];
const sdk = `${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { McpServer } = await import(`${sdk}/server/mcp.js`);
const { StreamableHTTPServerTransport } = await import(`${sdk}/server/streamableHttp.js`);
const { isInitializeRequest } = await import(`${sdk}/types.js`);
const { z } = await import(`${dir}/node_modules/zod/index.js`);

const sessions = new Map();

function newServer() {
  const server = new McpServer({ name: "legacy-http", version: "1.0.0" });
  server.registerTool("echo", { description: "Returns the text", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }));
  return server;
}

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString();
  return text ? JSON.parse(text) : undefined;
}

createServer(async (req, res) => {
  try {
    const id = req.headers["mcp-session-id"];
    const parsed = req.method === "POST" ? await body(req) : undefined;
    let transport = id ? sessions.get(id) : undefined;
    if (!transport && req.method === "POST" && isInitializeRequest(parsed)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, parsed);
  } catch (e) {
    console.error(`legacy_http_server: ${e.stack}`);
    if (!res.headersSent) { res.writeHead(500); res.end(); }
  }
}).listen(port, "127.0.0.1");
