"""The authorization server's limits and lifetimes, each with its default and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._clients import RegistrationLimits

__all__ = ["AuthServerSettings"]


@dataclass(frozen=True, slots=True)
class AuthServerSettings:
    """Lifetimes in seconds. Each limit, when hit, is refused with an error naming it."""

    #: An authorization code's life. RFC 6749 section 4.1.2: "a maximum authorization code
    #: lifetime of 10 minutes is RECOMMENDED"; a client redeems it within a second.
    code_ttl: float = 120.0
    #: A login between our authorize endpoint and the upstream callback (consent, then the
    #: person's login at the provider, which may take a while: password managers, MFA).
    login_ttl: float = 600.0
    #: Logins in flight at once (each a small store record); past it authorize answers 503.
    max_logins: int = 10_000
    #: Access token lifetime. An hour is the common default (Auth0, Okta, Entra).
    access_token_ttl: float = 3600.0
    #: A refresh token's life; each use rotates it and starts a new one (OAuth 2.1 section
    #: 4.3.1). 30 days keeps a person logged in across a month of occasional use.
    refresh_token_ttl: float = 30 * 86400.0
    #: Signing keys rotate this often; must be at least ``access_token_ttl`` (a token stays
    #: verifiable for at least one full period after its key is retired).
    key_rotation: float = 86400.0
    #: Dynamically registered clients held at once (RFC 7591 section 5 leaves abuse control to
    #: the server): a registration flood stops here with 429, naming the limit.
    max_clients: int = 10_000
    #: A registered client unused this long is forgotten (it can register again).
    client_idle_ttl: float = 30 * 86400.0
    #: Seconds of clock skew accepted when verifying our own tokens across replicas.
    leeway: float = 30.0
    registration: RegistrationLimits = field(default_factory=RegistrationLimits)

    def __post_init__(self) -> None:
        for name in (
            "code_ttl",
            "login_ttl",
            "access_token_ttl",
            "refresh_token_ttl",
            "key_rotation",
            "client_idle_ttl",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.max_clients < 1 or self.max_logins < 1:
            raise ValueError("max_clients and max_logins must be at least 1")
        if self.key_rotation < self.access_token_ttl:
            raise ValueError("key_rotation must be at least access_token_ttl")
