"""Discovery for one MCP server: its Protected Resource Metadata and its authorization
server's metadata, fetched over the flow's bounded HTTP and checked (the rules and their
sources are in ``_oauth_metadata``, which this drives)."""

from __future__ import annotations

from ._auth import AuthorizationFailed
from ._oauth_challenge import Challenge
from ._oauth_fetch import OAuthHttp, check_url
from ._oauth_metadata import (
    AuthServerMetadata,
    MetadataError,
    ProtectedResource,
    auth_server_metadata_urls,
    decode_auth_server,
    decode_resource,
    fallback_auth_server,
    resource_metadata_urls,
)

__all__ = ["Discovery"]


class Discovery:
    """Finds the metadata of the server at ``server`` (its canonical URI). Authorization
    server metadata is kept per issuer for the life of the object (a refresh needs the
    token endpoint again); resource metadata is fetched afresh for every login, since the
    resource may have moved to another authorization server."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._auth_servers: dict[str, AuthServerMetadata] = {}

    async def resource(self, http: OAuthHttp, challenge: Challenge) -> ProtectedResource | None:
        """The resource metadata: the challenge's URL, then the well-known ones (the first
        that answers 200 decides; a document for another resource is refused). None: there
        is none (a 2025-03-26 server)."""
        urls = resource_metadata_urls(self.server)
        if challenge.resource_metadata:
            urls.insert(0, challenge.resource_metadata)
        for url in urls:
            answer = await http.request("GET", url, "protected resource metadata")
            if answer.status != 200:
                continue
            try:
                return decode_resource(answer.body, self.server)
            except MetadataError as exc:
                raise AuthorizationFailed(str(exc)) from None
        return None

    async def auth_server(
        self, http: OAuthHttp, issuer: str, *, legacy: bool = False
    ) -> AuthServerMetadata:
        """The metadata of ``issuer`` (RFC 8414, then OpenID Connect); for a ``legacy``
        (2025-03-26) server without any, its default endpoints."""
        known = self._auth_servers.get(issuer)
        if known is not None:
            return known
        check_url(issuer, "authorization server")
        for url in auth_server_metadata_urls(issuer):
            answer = await http.request("GET", url, "authorization server metadata")
            if answer.status != 200:
                continue
            try:
                metadata = decode_auth_server(answer.body, issuer)
            except MetadataError as exc:
                raise AuthorizationFailed(str(exc)) from None
            break
        else:
            if not legacy:
                raise AuthorizationFailed(
                    f"no authorization server metadata for {issuer[:200]} "
                    "(RFC 8414 and OpenID Connect discovery both failed)"
                )
            metadata = fallback_auth_server(self.server)
        self._auth_servers[issuer] = metadata
        return metadata
