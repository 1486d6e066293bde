"""An MCP server over streamable HTTP behind the SDK's OAuth authorization server, for tests.

``python oauth_server.py PORT [static-token [token-seconds]]`` serves ``http://127.0.0.1:PORT/mcp``
with one tool, ``whoami``. It is its own authorization server (``mcp.server.auth`` routes:
metadata, dynamic client registration, ``/authorize``, ``/token``), with an in-memory
provider that approves every authorization at once: ``/authorize`` redirects straight back to
the client's redirect URI with a code, as a browser would after the user said yes. Tokens are
checked by the SDK's bearer middleware; ``static-token``, if given, is accepted as well (for
the bearer-token option). Access tokens last ``token-seconds`` (default 3600); each comes with a
refresh token, rotated on every refresh.
"""

from __future__ import annotations

import secrets
import sys
import time
from urllib.parse import urlencode

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class ApproveEverything:
    """The SDK's ``OAuthAuthorizationServerProvider``, in memory, consent given at once."""

    def __init__(self, resource: str, static_token: str | None, seconds: int) -> None:
        self.resource, self.seconds = resource, seconds
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        if static_token:
            self.tokens[static_token] = AccessToken(token=static_token, client_id="static",
                                                    scopes=["tools"])

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["tools"], expires_at=time.time() + 300,
            client_id=str(client.client_id), code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        query = {"code": code, **({"state": params.state} if params.state else {})}
        return f"{params.redirect_uri}?{urlencode(query)}"

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        del self.codes[code.code]
        return self._issue(str(client.client_id), code.scopes, code.resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[token] = AccessToken(token=token, client_id=client_id, scopes=scopes,
                                         expires_at=int(time.time()) + self.seconds,
                                         resource=resource)
        self.refresh_tokens[refresh] = RefreshToken(token=refresh, client_id=client_id,
                                                    scopes=scopes, resource=resource)
        return OAuthToken(access_token=token, expires_in=self.seconds, scope=" ".join(scopes),
                          refresh_token=refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        del self.refresh_tokens[refresh_token.token]
        return self._issue(str(client.client_id), scopes or refresh_token.scopes,
                           refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.tokens.get(token)
        return found if found and (found.expires_at is None
                                   or found.expires_at > time.time()) else None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)


def main(port: int, static_token: str | None, seconds: int) -> None:
    base = f"http://127.0.0.1:{port}"
    auth = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",
                        validate_token_resource=False,
                        client_registration_options=ClientRegistrationOptions(
                            enabled=True, valid_scopes=["tools"], default_scopes=["tools"]),
                        required_scopes=["tools"])
    server = MCPServer("guarded", auth=auth,
                       auth_server_provider=ApproveEverything(f"{base}/mcp", static_token, seconds))

    @server.tool()
    def whoami() -> str:
        """Say that the caller got in."""
        return "an authenticated caller"

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None, int(sys.argv[3])
         if len(sys.argv) > 3 else 3600)
