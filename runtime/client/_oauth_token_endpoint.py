"""Requests to token endpoints, and the DPoP state they share with resource requests.

A token request is one POST of a form (``_oauth_grants`` builds it); with DPoP in use it
carries a proof, and a ``use_dpop_nonce`` answer is retried once with the server's nonce
(RFC 9449 8). The same key signs the proofs of resource requests, with the resource's own
nonce (RFC 9449 9). Whether DPoP is used is decided per login (:meth:`choose_dpop`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Final

from ._auth import AuthorizationFailed
from ._oauth_challenge import Challenge
from ._oauth_dpop import DPOP_ALGORITHM, DPoPKey
from ._oauth_fetch import OAuthHttp, check_url
from ._oauth_grants import (
    GrantError,
    TokenRequest,
    id_jag_exchange_request,
    read_exchanged_token,
    read_token_response,
)
from ._oauth_identity import EnterpriseIdentity
from ._oauth_metadata import AuthServerMetadata, ProtectedResource
from ._oauth_store import ClientRegistration, Tokens

__all__ = ["TokenEndpoint"]

log = logging.getLogger("mcp_runtime.client.oauth")

_FORM: Final = "application/x-www-form-urlencoded"


class TokenEndpoint:
    """Token requests (and the enterprise IdP's token exchange), and the resource
    requests' DPoP headers. ``dpop``: True, False or None (see :class:`OAuth`)."""

    def __init__(self, dpop: bool | None) -> None:
        self.dpop = dpop
        #: DPoP is in use for the current grant.
        self.active = False
        self._key: DPoPKey | None = None
        #: The latest DPoP nonces (RFC 9449 8, 9): per token endpoint, and the resource's.
        self._nonces: dict[str, str] = {}
        self._resource_nonce: str | None = None

    def choose_dpop(
        self,
        challenge: Challenge,
        resource_document: ProtectedResource | None,
        metadata: AuthServerMetadata,
    ) -> None:
        """Decide for the next grant: the server must take ES256 proofs; then ``dpop=True``
        always, None when the resource asks for DPoP (its challenge, its metadata)."""
        supported = DPOP_ALGORITHM in (metadata.dpop_signing_alg_values_supported or ())
        if self.dpop is False or not supported:
            if self.dpop and not supported:
                log.warning("the authorization server takes no ES256 DPoP proofs: Bearer used")
            self.active = False
            return
        required = resource_document is not None and (
            resource_document.dpop_bound_access_tokens_required
        )
        self.active = bool(self.dpop) or challenge.scheme == "dpop" or required

    def resume(self, tokens: Tokens) -> None:
        """Before a refresh: DPoP again for a DPoP-bound token whose key we still hold."""
        self.active = tokens.token_type == "DPoP" and self._key is not None

    async def request(
        self, http: OAuthHttp, request: TokenRequest, previous: Tokens | None, status: int
    ) -> Tokens:
        """One token request; :class:`AuthorizationFailed` (its cause the
        :class:`GrantError`) when the server refuses."""
        for attempt in range(2):
            headers = list(request.headers)
            if self.active:
                if self._key is None:
                    self._key = DPoPKey()
                nonce = self._nonces.get(request.url)
                headers.append(("DPoP", self._key.proof("POST", request.url, nonce=nonce)))
            answer = await http.request(
                "POST",
                request.url,
                "token endpoint",
                body=request.body(),
                headers=headers,
                content_type=_FORM,
            )
            fresh_nonce = answer.headers.get("dpop-nonce")
            if fresh_nonce:
                self._nonces[request.url] = fresh_nonce
            try:
                return read_token_response(
                    answer.status, answer.body, now=time.time(), previous=previous
                )
            except GrantError as exc:
                if self.active and exc.error == "use_dpop_nonce" and attempt == 0:
                    continue
                raise AuthorizationFailed(
                    f"the token endpoint refused: {exc}", status=status
                ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def id_jag(
        self,
        http: OAuthHttp,
        identity: EnterpriseIdentity,
        *,
        audience: str,
        resource: str,
        scope: str | None,
        status: int,
    ) -> str:
        """An ID-JAG from the enterprise IdP (RFC 8693 token exchange) for ``audience``."""
        check_url(identity.token_endpoint, "enterprise IdP token endpoint")
        request = id_jag_exchange_request(
            identity.token_endpoint,
            id_token=identity.id_token,
            audience=audience,
            resource=resource,
            scope=scope,
            client=ClientRegistration(
                client_id=identity.client_id, client_secret=identity.client_secret
            ),
        )
        answer = await http.request(
            "POST",
            request.url,
            "enterprise IdP token endpoint",
            body=request.body(),
            headers=request.headers,
            content_type=_FORM,
        )
        try:
            return read_exchanged_token(answer.status, answer.body)
        except GrantError as exc:
            raise AuthorizationFailed(
                f"the enterprise IdP refused the token exchange: {exc}", status=status
            ) from exc

    def resource_headers(self, method: str, url: str, tokens: Tokens) -> Sequence[tuple[str, str]]:
        """The headers that present ``tokens`` on one resource request (RFC 6750 2.1, or
        RFC 9449 7.1 with a fresh proof for a DPoP-bound token)."""
        if tokens.token_type == "DPoP" and self._key is not None:
            proof = self._key.proof(
                method, url, access_token=tokens.access_token, nonce=self._resource_nonce
            )
            return (("Authorization", f"DPoP {tokens.access_token}"), ("DPoP", proof))
        return (("Authorization", f"Bearer {tokens.access_token}"),)

    def resource_nonce(self, challenge: Challenge, nonce: str | None) -> bool:
        """Take a resource's ``use_dpop_nonce`` challenge (RFC 9449 9): True when it brought
        a new nonce (send the request again with it)."""
        if challenge.error != "use_dpop_nonce" or not nonce or nonce == self._resource_nonce:
            return False
        self._resource_nonce = nonce
        return True
