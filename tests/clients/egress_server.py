"""A real Python SDK server (`mcp` 2.x `MCPServer`) whose tools reach the network the ways real
servers do, for the network fence's tests:

  get(url, client)    an HTTP GET with httpx or requests (both read HTTP_PROXY/HTTPS_PROXY)
  tunnel(host, port)  HTTP CONNECT through $HTTPS_PROXY, then a plain GET / inside the tunnel
  raw(host, port)     a TCP connect that ignores the proxy variables
  udp(host, port)     one UDP datagram

Each returns what it got, or fails with the error's text. With EGRESS_FETCH_AT_START=URL it
also fetches URL as it starts (as servers that load something at start do), whatever comes of it.
"""

import os
import socket
from urllib.parse import urlparse

import httpx
import requests
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("egress")

if os.environ.get("EGRESS_FETCH_AT_START"):
    try:
        httpx.get(os.environ["EGRESS_FETCH_AT_START"], timeout=5)
    except httpx.HTTPError:
        pass


@mcp.tool()
def get(url: str, client: str = "httpx") -> str:
    """Fetches a URL."""
    if client == "requests":
        r = requests.get(url, timeout=10)
    else:
        r = httpx.get(url, timeout=10)
    return f"{r.status_code} {r.text.strip()}"


@mcp.tool()
def tunnel(host: str, port: int) -> str:
    """Opens a tunnel through the proxy and speaks plain HTTP inside it."""
    proxy = urlparse(os.environ["HTTPS_PROXY"])
    with socket.create_connection((proxy.hostname, proxy.port), timeout=10) as s:
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = s.recv(4096).decode(errors="replace")
        if not head.startswith("HTTP/1.1 200"):
            raise RuntimeError(f"the proxy said: {head.strip()}")
        s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return data.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip()


@mcp.tool()
def raw(host: str, port: int) -> str:
    """Connects straight to host:port."""
    with socket.create_connection((host, port), timeout=5):
        return "connected"


@mcp.tool()
def udp(host: str, port: int) -> str:
    """Sends one datagram."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", (host, port))
    return "sent"


if __name__ == "__main__":
    mcp.run()
