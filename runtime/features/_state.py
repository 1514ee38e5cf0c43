"""Integrity-protected ``requestState`` for multi round-trip requests (MCP 2026-07-28
basic/patterns/mrtr, "Server Requirements": the state is attacker-controlled input; protect
its integrity, bind it to the originating request and give it a short expiry).

Format: ``base64url(payload) "." key_id "." base64url(HMAC-SHA256(key, key_id "." payload))``.
Keys rotate every ``rotate_seconds``; the previous key still verifies, so state issued just
before a rotation survives it. Pass a fixed ``secret`` when several server instances must
accept each other's state. The payload is signed, not encrypted: it holds only what the
client itself supplied (its earlier input responses) plus the request binding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import time
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from ..protocol import bad_request_state

__all__ = ["SealedRound", "StateSealer", "params_digest", "principal_key"]

_MAX_STATE: Final = 256 * 1024  # bytes of requestState we are willing to verify


class SealedRound(msgspec.Struct, forbid_unknown_fields=True):
    """What a ``requestState`` carries (signed, readable by the client)."""

    method: str
    digest: str
    expires: float
    responses: dict[str, Any]
    #: The authenticated principal the state was issued to (None: unauthenticated).
    principal: str | None = None
    #: What the handler keeps between rounds (``Context.request_state``).
    data: dict[str, Any] = {}
    #: The keys of the input requests this state answers: a retry may answer only these
    #: (answers to questions never asked would skip a round).
    asked: list[str] = msgspec.field(default_factory=list)
    #: The random keys given so far to the handler's unkeyed asks, in call order, so that
    #: each ask gets the same key again when the handler reruns (unguessable, not a count).
    keys: list[str] = msgspec.field(default_factory=list)


_decoder: Final = msgspec.json.Decoder(SealedRound)
_encode: Final = msgspec.json.Encoder(order="sorted").encode


def principal_key(principal: Any) -> str | None:
    """A stable identity for binding state and tasks to who created them: the subject and
    client id of an access token, else the principal's string form."""
    if principal is None:
        return None
    subject = getattr(principal, "subject", None)
    if subject is not None:
        return f"{subject}|{getattr(principal, 'client_id', None) or ''}"
    return str(principal)


def params_digest(value: Any) -> str:
    """A digest of a request's salient parameters, independent of key order."""
    return hashlib.sha256(_encode(value)).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSealer:
    def __init__(
        self,
        secret: bytes | None = None,
        *,
        ttl_seconds: float = 600.0,
        rotate_seconds: float = 3600.0,
    ) -> None:
        if ttl_seconds <= 0 or rotate_seconds <= 0:
            raise ValueError("ttl_seconds and rotate_seconds must be positive")
        self.ttl_seconds = ttl_seconds
        self._secret = secret
        self._rotate = rotate_seconds
        self._random: dict[int, bytes] = {}

    def _key(self, epoch: int) -> bytes:
        if self._secret is not None:
            return hmac.new(self._secret, f"requestState:{epoch}".encode(), "sha256").digest()
        key = self._random.get(epoch)
        if key is None:
            # Keep only the current and the previous epoch's keys.
            self._random = {e: k for e, k in self._random.items() if e >= epoch - 1}
            key = self._random[epoch] = os.urandom(32)
        return key

    def _epoch(self, now: float) -> int:
        return int(now // self._rotate)

    def seal(
        self,
        method: str,
        digest: str,
        responses: dict[str, Any],
        principal: str | None = None,
        data: dict[str, Any] | None = None,
        *,
        asked: Iterable[str] = (),
        keys: Iterable[str] = (),
    ) -> str:
        """Seal the state of one input round: the answers so far and the handler's own
        ``data``. ValueError when it would exceed what ``unseal`` accepts (256 KiB)."""
        now = time.time()
        expires = now + self.ttl_seconds
        sealed = SealedRound(
            method, digest, expires, responses, principal, data or {}, list(asked), list(keys)
        )
        payload = _b64(_encode(sealed))
        if len(payload) > _MAX_STATE - 200:  # (room for the key id and the MAC)
            raise ValueError(f"requestState would exceed {_MAX_STATE} bytes")
        epoch = self._epoch(now)
        signed = f"{epoch}.{payload}".encode()
        return f"{payload}.{epoch}.{_b64(hmac.new(self._key(epoch), signed, 'sha256').digest())}"

    def unseal(
        self, state: str, method: str, digest: str, principal: str | None = None
    ) -> dict[str, Any]:
        """The input responses carried by ``state``; raises -32602 for state that is forged,
        expired, or was issued for another request or another principal."""
        return self.open(state, method, digest, principal).responses

    def open(
        self, state: str, method: str, digest: str, principal: str | None = None
    ) -> SealedRound:
        """Everything ``state`` carries (answers, the handler's data, what it asked),
        checked as :meth:`unseal` checks it."""
        try:
            if len(state) > _MAX_STATE:
                raise ValueError("too large")
            payload_text, epoch_text, mac_text = state.split(".")
            epoch = int(epoch_text)
            current = self._epoch(time.time())
            if epoch not in (current, current - 1):
                raise ValueError("key expired")
            signed = f"{epoch}.{payload_text}".encode()
            expected = hmac.new(self._key(epoch), signed, "sha256").digest()
            if not hmac.compare_digest(expected, _unb64(mac_text)):
                raise ValueError("bad mac")
            payload = _decoder.decode(_unb64(payload_text))
        except (ValueError, binascii.Error, msgspec.DecodeError):
            raise bad_request_state("Invalid requestState") from None
        if payload.expires < time.time():
            raise bad_request_state("requestState has expired")
        if payload.method != method or payload.digest != digest:
            raise bad_request_state("requestState was issued for a different request")
        if payload.principal != principal:
            # 2026-07-28 mrtr: reject state presented by a different principal.
            raise bad_request_state("requestState was issued to another principal")
        return payload
