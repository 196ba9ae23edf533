"""An MCP server protected by OAuth, built from the Python SDK's (`mcp` 2.x) own authorization
server pieces (`mcp.server.auth`): protected-resource metadata, authorization-server metadata,
dynamic client registration, authorize / token / revoke endpoints. Consent is given at once: the
authorization URL redirects straight back to the client with a code.

  oauth_server.py PORT [--lifetime SECS] [--wrong-iss] [--issuer URL]

  --lifetime SECS   access tokens last SECS seconds (default 3600)
  --wrong-iss       the authorization answer names another issuer (a mix-up attack)
  --issuer URL      the issuer the metadata names (e.g. a private address: the client must refuse)

Tools: echo(text), slow(ms, text). Test routes: GET /test/stats (counters — an expired token presented is counted — and every token issued,
for canary searches), POST /test/revoke-all (every access and refresh token stops working).
"""

import argparse
import math
import secrets
import time

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--lifetime", type=int, default=3600)
ap.add_argument("--wrong-iss", action="store_true")
ap.add_argument("--issuer")
opts = ap.parse_args()

BASE = f"http://127.0.0.1:{opts.port}"
ISSUER = opts.issuer or BASE
RESOURCE = f"{BASE}/mcp"

stats = {"registrations": 0, "codes": 0, "refreshes": 0, "revocations": 0, "expired_seen": 0, "issued": []}


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.expiry = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        stats["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["read"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        stats["codes"] += 1
        iss = "https://attacker.example" if opts.wrong_iss else ISSUER
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=iss)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access = "at-" + secrets.token_urlsafe(32)
        refresh = "rt-" + secrets.token_urlsafe(32)
        # Our own clock for expiry (a float); the SDK's field is whole seconds, rounded up.
        self.expiry[access] = time.time() + opts.lifetime
        expires = math.ceil(self.expiry[access])
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        stats["issued"] += [access, refresh]
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=opts.lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        t = self.refresh.get(refresh_token)
        return t if t and t.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token revoked")
        stats["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        t = self.access.get(token)
        if t is not None and self.expiry.get(token, 0) < time.time():
            stats["expired_seen"] += 1  # a client that let its token expire before using it
            return None
        return t

    async def revoke_token(self, token):
        stats["revocations"] += 1
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
server = MCPServer(
    "oauth-fixture",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=RESOURCE,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["read", "write"], default_scopes=["read"]
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=["read"],
        validate_token_resource=True,
    ),
)


@server.tool()
def echo(text: str) -> str:
    """Says the text back."""
    return text


@server.tool()
async def slow(ms: int, text: str) -> str:
    """Says the text back after ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return text


@server.custom_route("/test/stats", methods=["GET"])
async def test_stats(request: Request):
    return JSONResponse(stats)


@server.custom_route("/test/revoke-all", methods=["POST"])
async def test_revoke_all(request: Request):
    provider.access.clear()
    provider.refresh.clear()
    return JSONResponse({"ok": True})


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=opts.port)
