// A loopback reverse proxy that adds the gateway's bearer token, for test tools that cannot send
// headers (the conformance suite). Every other header — Host and Origin included — is passed as
// received, so the gateway's guard sees exactly what the tool sent; only a Host naming the proxy's
// own port gets the gateway's port instead (the gateway accepts its own port only), as if the
// tool had connected to the gateway directly.
// Usage: node auth_proxy.mjs   prints the port it listens on, then reads "TARGET_PORT TOKEN"
// from its first line of stdin.
import http from "node:http";
import readline from "node:readline";

let target = null;
const server = http.createServer((req, res) => {
  if (!target) {
    res.writeHead(503);
    res.end("proxy not configured yet");
    return;
  }
  const headers = { ...req.headers, authorization: `Bearer ${target.token}` };
  const own = `:${server.address().port}`;
  if (typeof headers.host === "string" && headers.host.endsWith(own)) {
    headers.host = headers.host.slice(0, -own.length) + `:${target.port}`;
  }
  const upstream = http.request(
    { host: "127.0.0.1", port: target.port, path: req.url, method: req.method, headers },
    (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    },
  );
  upstream.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(upstream);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
readline.createInterface({ input: process.stdin }).once("line", (line) => {
  const [port, token] = line.trim().split(/\s+/);
  target = { port: Number(port), token };
});
