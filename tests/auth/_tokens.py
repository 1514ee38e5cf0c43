"""Keys and token minting for the auth tests: real keys, real signatures (PyJWT)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    private: Any
    jwk: dict[str, Any]

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(  # type: ignore[no-any-return]
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        headers = {"kid": self.kid, **header}
        if headers["kid"] is None:
            del headers["kid"]
        return jwt.encode(claims, self.private, algorithm=self.alg, headers=headers)


def make_rsa(kid: str) -> SigningKey:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return SigningKey(kid, "RS256", private, {**jwk, "kid": kid, "use": "sig"})


def make_ec(kid: str) -> SigningKey:
    private = ec.generate_private_key(ec.SECP256R1())
    jwk = jwt.algorithms.ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return SigningKey(kid, "ES256", private, {**jwk, "kid": kid, "use": "sig"})


def jwks(*keys: SigningKey) -> dict[str, Any]:
    return {"keys": [key.jwk for key in keys]}


def claims(**overrides: Any) -> dict[str, Any]:
    """A valid claim set for RESOURCE from ISSUER; ``name=None`` drops a claim."""
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "user-42",
        "client_id": "client-7",
        "iat": now,
        "exp": now + 600,
        "scope": "mcp:read files:read",
    }
    base.update(overrides)
    return {name: value for name, value in base.items() if value is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], payload: dict[str, Any], sign: Callable[[bytes], bytes]) -> str:
    """A token assembled by hand, for what PyJWT rightly refuses to produce."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
    return f"{signing_input}.{_b64(sign(signing_input.encode()))}"


def hmac_sha256(secret: bytes) -> Callable[[bytes], bytes]:
    return lambda data: hmac.new(secret, data, hashlib.sha256).digest()
