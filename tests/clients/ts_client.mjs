// A real MCP client (TypeScript SDK) over Streamable HTTP with a bearer token, driven by the
// Rust integration tests. Usage: node ts_client.mjs URL TOKEN CALLS_JSON [DECISION]
// Prints {"tools": [...names], "results": {tool: result}}; a call named `@read` reads the
// resource at its `uri` argument instead. With DECISION, the client declares
// elicitation and answers every elicitation/create by accepting {"decision": DECISION} (Gatehouse's
// approval question under approve_via: client); the questions seen are printed under "asked".
// The SDK is found through GATEHOUSE_CLIENTS_DIR (installed by scripts/install-peers.sh).
const dir = process.env.GATEHOUSE_CLIENTS_DIR;
const sdk = `${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(`${sdk}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/client/streamableHttp.js`);
const { ElicitRequestSchema } = await import(`${sdk}/types.js`);

const [url, token, callsJson, decision] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client(
  { name: "gatehouse-ts-test", version: "1.0.0" },
  decision ? { capabilities: { elicitation: {} } } : {},
);
const asked = [];
if (decision) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push({ message: request.params.message });
    return { action: "accept", content: { decision } };
  });
}
await client.connect(transport);
const tools = await client.listTools();
const results = {};
for (const [name, args] of JSON.parse(callsJson)) {
  // `@read` {uri}: resources/read instead of a tool call (a refusal is its result).
  if (name === "@read") {
    try {
      results[name] = await client.readResource({ uri: args.uri });
    } catch (e) {
      results[name] = { error: { code: e.code, message: e.message } };
    }
    continue;
  }
  results[name] = await client.callTool({ name, arguments: args });
}
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name).sort(), results, asked }));
await client.close();
