"""Session-wide signing keys (RSA generation is slow enough to share)."""

from __future__ import annotations

import pytest

from ._tokens import SigningKey, make_ec, make_rsa


@pytest.fixture(scope="session")
def rsa_key() -> SigningKey:
    return make_rsa("rsa-1")


@pytest.fixture(scope="session")
def rsa_key_2() -> SigningKey:
    return make_rsa("rsa-2")


@pytest.fixture(scope="session")
def ec_key() -> SigningKey:
    return make_ec("ec-1")
