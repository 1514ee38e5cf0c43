"""Where a JWT bearer grant's assertion comes from (RFC 7523 2.1).

- Workload identity federation: the platform gives the workload a signed JWT (a Kubernetes
  service account token, a cloud instance identity); the client presents it as is
  (``OAuth(grant="jwt_bearer", assertion=...)``: the text, or an async function that reads
  a fresh one, since such tokens rotate).
- Enterprise-managed authorization (the MCP extension
  ``io.modelcontextprotocol/enterprise-managed-authorization``): the user's enterprise IdP
  exchanges their OpenID Connect ID token (RFC 8693) for an Identity Assertion JWT
  Authorization Grant (ID-JAG) addressed to the MCP server's authorization server, which the
  client presents there (``OAuth(grant="jwt_bearer", enterprise=EnterpriseIdentity(...))``).
"""

from __future__ import annotations

import dataclasses

__all__ = ["EnterpriseIdentity"]


@dataclasses.dataclass(frozen=True, slots=True)
class EnterpriseIdentity:
    """The enterprise IdP's side: its ``token_endpoint``, this client's ``client_id`` (and
    ``client_secret``) there, and the user's ``id_token`` from that IdP."""

    token_endpoint: str
    client_id: str
    id_token: str
    client_secret: str | None = None

    def __repr__(self) -> str:
        secret = ", client_secret=<hidden>" if self.client_secret else ""
        return (
            f"EnterpriseIdentity(token_endpoint={self.token_endpoint!r}, "
            f"client_id={self.client_id!r}, id_token=<hidden>{secret})"
        )
