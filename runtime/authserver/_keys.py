"""Signing keys for our access tokens: one ES256 key per rotation period, shared by replicas.

Time is cut into periods of ``rotate_after`` seconds. The key of a period is made by whichever
replica needs it first and written with ``GrantStore.add`` (only when absent), so every
replica signs with the same key; a replica that lost the race reads the winner's. Tokens are
signed with the current period's key; the JWKS and the verifier hold the current and the
previous period's, so a token issued just before a rotation verifies until it expires, as
long as tokens live no longer than a period (``AuthServerSettings`` checks it).

ES256 (RFC 7518 section 3.4) is what MCP clients and resource servers handle everywhere
(``runtime.auth.DEFAULT_ALGORITHMS``), with short signatures. The crypto is ``cryptography``'s
and PyJWT's, never our own. Private keys sit in the store (PKCS#8 PEM): whoever reads the
store can sign tokens, as whoever reads it can already read sessions; protect it accordingly.
"""

from __future__ import annotations

import functools
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

import msgspec
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from ..stores import GrantStore

__all__ = ["ALGORITHM", "KeyRing", "SigningKey"]

ALGORITHM = "ES256"


class SigningKey(msgspec.Struct, frozen=True):
    kid: str
    pem: str

    def private(self) -> Any:
        return _load(self.pem)

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(self.private().public_key()))
        jwk.update(kid=self.kid, alg=ALGORITHM, use="sig")
        return jwk


@functools.lru_cache(maxsize=8)
def _load(pem: str) -> Any:
    # Parsing a PEM costs far more than an ES256 verification; a replica holds two keys at
    # a time (this period's and the previous one's), so a small cache keeps every MCP
    # request's token check free of it.
    return serialization.load_pem_private_key(pem.encode("ascii"), password=None)


def _new_key(kid: str) -> SigningKey:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return SigningKey(kid, pem.decode("ascii"))


class KeyRing:
    """The keys of the current and previous rotation periods, from the store (cached here
    per period: one store read per period and replica, not per token)."""

    def __init__(
        self, store: GrantStore, rotate_after: float, clock: Callable[[], float] = time.time
    ) -> None:
        if rotate_after <= 0:
            raise ValueError("key_rotation must be positive")
        self._store = store
        self.rotate_after = rotate_after
        self._clock = clock
        self._cache: dict[int, SigningKey] = {}

    def _period(self) -> int:
        return int(self._clock() // self.rotate_after)

    async def _key(self, period: int, *, create: bool) -> SigningKey | None:
        cached = self._cache.get(period)
        if cached is not None:
            return cached
        name = f"key:{period}"
        # Kept for two more periods: the previous period's key still verifies in the next.
        ttl = self.rotate_after * 3
        data = await self._store.get(name)
        if data is None and create:
            candidate = _new_key(f"k{period}-{secrets.token_urlsafe(6)}")
            await self._store.add(name, msgspec.json.encode(candidate), ttl)
            data = await self._store.get(name)  # ours, or the replica's that won the race
        if data is None:
            return None
        key = msgspec.json.decode(data, type=SigningKey)
        self._cache = {p: k for p, k in self._cache.items() if p >= period - 1}
        self._cache[period] = key
        return key

    async def current(self) -> SigningKey:
        """The key to sign with now (made if this period has none yet)."""
        key = await self._key(self._period(), create=True)
        assert key is not None
        return key

    async def verifying(self) -> list[SigningKey]:
        """The keys a token may be signed with: this period's and the previous one's."""
        period = self._period()
        found = [await self._key(period, create=True), await self._key(period - 1, create=False)]
        return [key for key in found if key is not None]

    async def jwks(self) -> dict[str, Any]:
        """The public JWK Set (RFC 7517) of ``verifying()``."""
        return {"keys": [key.public_jwk() for key in await self.verifying()]}
