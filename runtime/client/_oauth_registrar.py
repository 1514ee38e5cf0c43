"""Which client the flow presents to an authorization server, registering it if need be
(the priority and the binding rules are in ``_oauth_registration``, which this drives)."""

from __future__ import annotations

from ._auth import AuthorizationFailed
from ._oauth_fetch import OAuthHttp
from ._oauth_metadata import AuthServerMetadata
from ._oauth_registration import RegistrationError, read_registration, registration_request
from ._oauth_store import ClientRegistration

__all__ = ["Registrar"]


class Registrar:
    """The client's registration at each authorization server: the pre-registered one
    (``client_id``), a Client ID Metadata Document (``client_metadata_url``), one stored for
    this issuer, or a new one by Dynamic Client Registration (a public native client)."""

    def __init__(
        self,
        *,
        client_id: str | None,
        client_secret: str | None,
        token_endpoint_auth_method: str | None,
        client_metadata_url: str | None,
        client_name: str,
        has_key: bool,
    ) -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.has_key = has_key

    @property
    def has_secret(self) -> bool:
        return self._client_secret is not None

    def preregistered(self, metadata: AuthServerMetadata) -> ClientRegistration:
        assert self.client_id is not None
        return ClientRegistration(
            client_id=self.client_id,
            issuer=metadata.issuer,
            client_secret=self._client_secret,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
            source="pre-registered",
        )

    async def client(
        self,
        http: OAuthHttp,
        metadata: AuthServerMetadata,
        redirect_uri: str,
        stored: ClientRegistration | None,
    ) -> ClientRegistration:
        """The client to use at ``metadata``'s server, by the priority of basic/authorization
        "Client Registration"; ``stored``: the registration kept from an earlier login."""
        if self.client_id is not None:
            return self.preregistered(metadata)
        if stored is not None and stored.issuer == metadata.issuer:
            return stored  # bound to this issuer; another issuer's is never reused
        if self.client_metadata_url is not None and metadata.client_id_metadata_document_supported:
            return ClientRegistration(
                client_id=self.client_metadata_url,
                issuer=metadata.issuer,
                token_endpoint_auth_method="private_key_jwt" if self.has_key else "none",
                source="metadata-document",
            )
        if metadata.registration_endpoint is None:
            raise AuthorizationFailed(
                f"the authorization server {metadata.issuer} offers no way to register this "
                "client (no registration endpoint, no Client ID Metadata Documents): "
                "give a pre-registered client_id"
            )
        body = registration_request(
            client_name=self.client_name,
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        )
        answer = await http.request(
            "POST",
            metadata.registration_endpoint,
            "client registration endpoint",
            body=body,
            content_type="application/json",
        )
        try:
            return read_registration(answer.status, answer.body, metadata.issuer)
        except RegistrationError as exc:
            raise AuthorizationFailed(str(exc)) from None
