"""DPoP (RFC 9449): tokens bound to a key the client holds, proven on every request.

The client makes one P-256 key pair per :class:`OAuth` (ES256, the algorithm RFC 9449 and
MCP's DPoP extension expect every server to take) and signs a fresh proof JWT for each HTTP
request (4.2): header ``typ: dpop+jwt``, ``alg``, the public ``jwk``; claims ``jti`` (unique,
so a captured proof cannot be replayed), ``htm`` and ``htu`` (this request's method and URL,
without query or fragment), ``iat``, and for a resource request ``ath``, the hash of the
access token it accompanies (4.3); ``nonce`` when the server supplied one (8, 9). The token
request carries a proof too (5), which is what binds the token to the key.

The key lives in memory only: a DPoP-bound token written to a token store is useless to
another process, which logs in again. The JWS work is PyJWT's (the ``auth`` extra).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from typing import Any, Final

__all__ = ["DPOP_ALGORITHM", "DPoPKey"]

#: RFC 7518 3.4: ECDSA with P-256 and SHA-256.
DPOP_ALGORITHM: Final = "ES256"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class DPoPKey:
    """A key pair and the proofs it signs (see the module docstring)."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import ec

        self._key = ec.generate_private_key(ec.SECP256R1())
        public: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(
            self._key.public_key(), as_dict=True
        )
        self.jwk = {name: public[name] for name in ("kty", "crv", "x", "y")}

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
    ) -> str:
        import jwt

        parts = urllib.parse.urlsplit(url)
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": f"{parts.scheme}://{parts.netloc}{parts.path}",
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(
            claims,
            self._key,
            algorithm=DPOP_ALGORITHM,
            headers={"typ": "dpop+jwt", "jwk": self.jwk},
        )

    def __repr__(self) -> str:
        return f"DPoPKey(x={self.jwk['x'][:8]}...)"
