"""PKCE (RFC 7636) with S256 only, as OAuth 2.1 section 4.1.1 and MCP basic/authorization
("Authorization Code Protection": clients MUST use S256 when they can; the authorization
server refuses ``plain``, so a downgrade is never possible). Sans-IO."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from typing import Final

__all__ = ["is_challenge", "is_verifier", "make_pair", "s256", "verifies"]

# RFC 7636 section 4.1: code-verifier = 43*128unreserved.
_VERIFIER: Final = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
# An S256 challenge is BASE64URL(SHA-256(verifier)) without padding: 43 characters.
_CHALLENGE: Final = re.compile(r"[A-Za-z0-9\-_]{43}")


def s256(verifier: str) -> str:
    """``BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))`` (RFC 7636 section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def is_verifier(value: str) -> bool:
    return _VERIFIER.fullmatch(value) is not None


def is_challenge(value: str) -> bool:
    return _CHALLENGE.fullmatch(value) is not None


def verifies(verifier: str, challenge: str) -> bool:
    """Whether ``verifier`` answers the S256 ``challenge`` (compared in constant time)."""
    if not is_verifier(verifier):
        return False
    return hmac.compare_digest(s256(verifier), challenge)


def make_pair() -> tuple[str, str]:
    """A fresh (verifier, challenge): 64 random characters, the runtime's own side toward the
    upstream provider."""
    verifier = secrets.token_urlsafe(48)  # 64 characters of the unreserved set
    return verifier, s256(verifier)
