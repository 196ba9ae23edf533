"""A local stand-in for the MCP Registry: the published v0.1 read API (search with cursors, a
server's versions, one version or `latest`) over a few real entries' facts — never the internet.
It also answers as an npm registry does for a package's latest version (`GET /NAME/latest`), and
`GET /_publish?name=N&version=V` makes V the latest (a release published while a pin holds).

    python3 registry_server.py [ok|garbage|huge|silent]

Prints its port on the first line of stdout, then serves until killed.
"""
import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EVERYTHING = {
    "name": "io.github.modelcontextprotocol/server-everything",
    "description": "MCP server that exercises all the features of the MCP protocol",
    "version": "2026.8.31",
    "packages": [{
        "registryType": "npm",
        "registryBaseUrl": "https://registry.npmjs.org",
        "identifier": "@modelcontextprotocol/server-everything",
        "version": "2026.8.31",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "value": "stdio"}],
        "environmentVariables": [{
            "name": "EVERYTHING_API_KEY", "isRequired": True, "isSecret": True,
            "description": "An API key (the server ignores it; Gatehouse must keep it)"}],
    }],
}
OLDER = dict(EVERYTHING, version="2026.7.1")
OLDER["packages"] = [dict(EVERYTHING["packages"][0], version="2026.7.1")]
DB = {
    "name": "io.example/db", "description": "A database server", "version": "1.0.0",
    "packages": [{"registryType": "pypi", "identifier": "example-db", "version": "1.0.0",
                  "transport": {"type": "stdio"},
                  "environmentVariables": [{"name": "DB_URL", "isRequired": True,
                                            "description": "where the database is"}]}],
}
DOCS = {
    "name": "io.example/remote-docs", "description": "Docs, hosted", "version": "2.0.0",
    "remotes": [{"type": "streamable-http", "url": "https://docs.example.com/mcp"}],
}
FILLERS = [{"name": f"io.example/filler-{i:02}", "description": f"Filler {i}", "version": "0.1.0",
            "remotes": [{"type": "streamable-http", "url": f"https://filler{i}.example.com/mcp"}]}
           for i in range(35)]
LATEST = [EVERYTHING, DB, DOCS] + FILLERS
VERSIONS = {EVERYTHING["name"]: [EVERYTHING, OLDER]}
META = {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": True}}
NPM_LATEST = {"@modelcontextprotocol/server-everything": "2026.8.31"}

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"


def wrap(server):
    return {"server": server, "_meta": META}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if MODE == "silent":
            time.sleep(3600)
            return
        if MODE == "garbage":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>not the registry</html>")
            return
        if MODE == "huge":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"servers": [' + b" " * (6 << 20))
            return
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        if parts == ["_publish"]:
            NPM_LATEST[q["name"][0]] = q["version"][0]
            return self.send_json(200, {"ok": True})
        if parts and parts[-1] == "latest" and parts[0] != "v0.1":
            name = "/".join(parts[:-1])
            if name in NPM_LATEST:
                return self.send_json(200, {"name": name, "version": NPM_LATEST[name]})
            return self.send_json(404, {"error": "Not found"})
        if parts == ["v0.1", "servers"]:
            text = q.get("search", [""])[0]
            limit = int(q.get("limit", ["30"])[0])
            start = int(q.get("cursor", ["0"])[0])
            found = [s for s in LATEST if text in s["name"]]
            page = found[start:start + limit]
            meta = {"count": len(page)}
            if start + limit < len(found):
                meta["nextCursor"] = str(start + limit)
            return self.send_json(200, {"servers": [wrap(s) for s in page], "metadata": meta})
        if len(parts) >= 4 and parts[:2] == ["v0.1", "servers"] and parts[3] == "versions":
            name = parts[2]
            versions = VERSIONS.get(name) or [s for s in LATEST if s["name"] == name]
            if not versions:
                return self.send_json(404, {"error": "Server not found"})
            if len(parts) == 4:
                return self.send_json(200, {"servers": [wrap(s) for s in versions]})
            want = parts[4]
            for s in versions:
                if want in ("latest", s["version"]):
                    return self.send_json(200, wrap(s))
            return self.send_json(404, {"error": "Server version not found"})
        self.send_json(404, {"error": "Endpoint not found"})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
