"""PKCE (RFC 7636) with S256, and the ``state`` value (sans-IO).

OAuth 2.1 4.1.1 requires PKCE for every client, and MCP requires S256 (basic/authorization
"Authorization Code Protection"): the verifier is 32 random bytes, base64url without padding
(43 characters, RFC 7636 4.1's minimum length and its recommended way to make one); the
challenge is the base64url SHA-256 of the verifier's ASCII (4.2). ``state`` ties the redirect
back to this one request (RFC 6749 10.12): 32 random bytes too.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import secrets

__all__ = ["Pkce", "new_state"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclasses.dataclass(frozen=True, slots=True)
class Pkce:
    verifier: str
    challenge: str
    method: str = "S256"

    @classmethod
    def new(cls) -> Pkce:
        verifier = _b64url(secrets.token_bytes(32))
        return cls(verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest()))

    def __repr__(self) -> str:  # the verifier is a secret until the code is redeemed
        return f"Pkce(challenge={self.challenge!r}, method={self.method!r})"


def new_state() -> str:
    return _b64url(secrets.token_bytes(32))
