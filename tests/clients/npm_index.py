"""A local stand-in for the npm registry, speaking its published read API: a packument at
`GET /NAME` (`dist-tags`, every version's manifest with `dist.tarball`, `dist.integrity` and
`dist.shasum`, and `time`) and each version's tarball at `GET /NAME/-/FILE.tgz`.

  npm_index.py PORT_FILE CATALOG.json
  npm_index.py PORT_FILE --node-modules DIR [--published ISO]

CATALOG.json: {"NAME": {"VERSION": {"dir": PATH, "published": ISO}, ...}, ...} — each version's
files are read from its folder (its package.json is its manifest). With --node-modules, every
package installed under DIR (nested trees too) is served, dated --published (long ago by
default). Tarballs are made from the folders as npm packs them (`package/…`, gzip), once each.

Hostile switches, read from the catalog's top-level "_hostile" object (and re-read on every
request, so a test can flip them while it runs):
  {"npm_gets": {"NAME@VERSION": DIR}}  npm (its user agent says npm/) is served the tarball of
                                       DIR instead, with a packument that names its integrity;
                                       every other client (Gatehouse's check) the genuine one.
  {"down": true}                       every request is answered 503.

The port it listens on (loopback, chosen by the kernel) is written to PORT_FILE.
"""

import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OLD = "2025-01-01T00:00:00.000Z"
catalog_path = None
catalog = {}


def scan(root, published=OLD):
    """Every package installed under the node_modules folder `root` (nested trees too):
    {name: {version: {"dir": folder, "published": published}}}."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        parent = os.path.dirname(dirpath)
        in_tree = os.path.basename(parent) == "node_modules" or (
            os.path.basename(parent).startswith("@") and os.path.basename(os.path.dirname(parent)) == "node_modules")
        if in_tree and "package.json" in filenames:
            try:
                with open(os.path.join(dirpath, "package.json"), encoding="utf-8") as f:
                    m = json.load(f)
                found.setdefault(m["name"], {})[m["version"]] = {"dir": dirpath, "published": published}
            except (OSError, ValueError, KeyError):
                pass
        dirnames[:] = [d for d in dirnames if d != ".bin" and not d.startswith(".")]
    return found


lock = threading.Lock()
tarballs = {}


def current():
    """The catalog, read again (a test may change it between requests)."""
    if catalog_path is None:
        return catalog
    with open(catalog_path, encoding="utf-8") as f:
        return json.load(f)


def pack(folder):
    """The tarball npm would make of `folder` (nested node_modules left out), and its digests."""
    with lock:
        if folder in tarballs:
            return tarballs[folder]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for dirpath, dirnames, filenames in sorted(os.walk(folder)):
            dirnames[:] = sorted(d for d in dirnames if d != "node_modules")
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, folder)
                info = tar.gettarinfo(full, arcname="package/" + rel)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 499162500, 0, 0, "", ""
                with open(full, "rb") as f:
                    tar.addfile(info, f)
    data = buf.getvalue()
    out = (
        data,
        "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
        hashlib.sha1(data).hexdigest(),
    )
    with lock:
        tarballs[folder] = out
    return out


def manifest(folder):
    with open(os.path.join(folder, "package.json"), encoding="utf-8") as f:
        return json.load(f)


def order(v):
    core = v.split("-")[0].split("+")[0]
    return [int(x) if x.isdigit() else 0 for x in core.split(".")] + [0 if "-" in v else 1]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        cat = current()
        hostile = cat.get("_hostile", {})
        if hostile.get("down"):
            return self.send(503, b'{"error":"down"}')
        is_npm = "npm/" in self.headers.get("user-agent", "")
        path = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
        base = "http://127.0.0.1:%d" % self.server.server_address[1]
        if "/-/" in path:
            data = tarball(cat, path, hostile.get("npm_gets", {}) if is_npm else {})
            if data is None:
                return self.send(404, b'{"error":"not found"}')
            return self.send(200, data, "application/octet-stream")
        versions = cat.get(path)
        if not versions or path.startswith("_"):
            return self.send(404, b'{"error":"not found"}')
        swaps = hostile.get("npm_gets", {}) if is_npm else {}
        self.send(200, json.dumps(packument(path, versions, base, swaps)).encode())


def packument(name, versions, base, swaps=None):
    """The packument of `name` whose `versions` ({version: {"dir", "published"}}) are served
    from `base`; `swaps` names versions whose tarball is another folder's."""
    doc = {"name": name, "versions": {}, "time": {"created": OLD, "modified": OLD}}
    for version, v in versions.items():
        folder = (swaps or {}).get("%s@%s" % (name, version)) or v["dir"]
        m = manifest(folder)
        _, integrity, shasum = pack(folder)
        tarball = "%s/%s/-/%s-%s.tgz" % (base, name, name.split("/")[-1], version)
        keep = {k: m[k] for k in ("dependencies", "optionalDependencies", "peerDependencies", "peerDependenciesMeta",
                                   "bin", "engines", "type", "main") if k in m}
        doc["versions"][version] = dict(keep, name=name, version=version,
                                        dist={"tarball": tarball, "integrity": integrity, "shasum": shasum})
        doc["time"][version] = v.get("published", OLD)
    stable = [v for v in versions if "-" not in v] or list(versions)
    doc["dist-tags"] = {"latest": max(stable, key=order)}
    return doc


def tarball(cat, path, swaps=None):
    """The tarball a `NAME/-/FILE.tgz` path names in `cat`, or None."""
    name, file = path.split("/-/", 1)
    for version, v in cat.get(name, {}).items():
        if file == "%s-%s.tgz" % (name.split("/")[-1], version):
            return pack((swaps or {}).get("%s@%s" % (name, version)) or v["dir"])[0]
    return None


def main():
    global catalog_path, catalog
    port_file = sys.argv[1]
    if sys.argv[2] == "--node-modules":
        published = sys.argv[sys.argv.index("--published") + 1] if "--published" in sys.argv else OLD
        catalog = scan(sys.argv[3], published)
    else:
        catalog_path = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
