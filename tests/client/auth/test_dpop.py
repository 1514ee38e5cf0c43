"""DPoP (RFC 9449) on the wire, against a scripted authorization server and resource that
both demand nonces: every proof is verified here with the public key from its own header."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

import jwt
import trio

from runtime.client import OAuth, open_client

from .fake_servers import Request, ScriptedLogin, fake_auth, json_reply

AS_NONCE, RS_NONCE = "as-nonce-1", "rs-nonce-1"


def verified(proof: str, method: str, url: str) -> dict[str, Any]:
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"]  # never the private key
    key = jwt.PyJWK(header["jwk"]).key
    claims = jwt.decode(proof, key, algorithms=["ES256"])
    assert claims["htm"] == method and claims["htu"] == url
    assert abs(claims["iat"] - time.time()) < 60
    return {**claims, "thumbprint_of": json.dumps(header["jwk"], sort_keys=True)}


async def test_dpop_bound_tokens_with_both_nonces() -> None:
    with trio.fail_after(20):
        async with fake_auth() as fake:
            fake.standard(dpop_signing_alg_values_supported=["ES256"])
            origin = fake.origin
            proofs: list[dict[str, Any]] = []

            def token(request: Request) -> tuple[int, dict[str, str], bytes]:
                claims = verified(request.headers["dpop"], "POST", f"{origin}/token")
                proofs.append(claims)
                if claims.get("nonce") != AS_NONCE:
                    return json_reply({"error": "use_dpop_nonce"}, 400, **{"DPoP-Nonce": AS_NONCE})
                return json_reply(
                    {"access_token": "dpop-token", "token_type": "DPoP", "expires_in": 600}
                )

            def mcp(request: Request) -> tuple[int, dict[str, str], bytes]:
                authorization = request.headers.get("authorization")
                if authorization is None:
                    return 401, {"www-authenticate": 'DPoP algs="ES256"'}, b""
                assert authorization == "DPoP dpop-token"
                claims = verified(request.headers["dpop"], "POST", f"{origin}/mcp")
                digest = hashlib.sha256(b"dpop-token").digest()
                assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                proofs.append(claims)
                if claims.get("nonce") != RS_NONCE:
                    challenge = 'DPoP error="use_dpop_nonce"'
                    return 401, {"www-authenticate": challenge, "dpop-nonce": RS_NONCE}, b""
                if request.method != "POST":
                    return 405, {}, b""
                body = json.loads(request.body)
                if "id" not in body:
                    return 202, {}, b""  # notifications/initialized
                if body["method"] == "initialize":
                    result: dict[str, Any] = {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "1"},
                    }
                else:
                    result = {"tools": []}
                return json_reply({"jsonrpc": "2.0", "id": body["id"], "result": result})

            fake.routes["/token"] = token
            fake.routes["/mcp"] = mcp
            oauth = OAuth(login=ScriptedLogin(iss=origin))  # DPoP chosen from the challenge
            async with open_client(f"{origin}/mcp", auth=oauth, era="handshake") as client:
                assert await client.all_tools() == []
            assert oauth.tokens is not None and oauth.tokens.token_type == "DPoP"
            token_proofs = [p for p in proofs if p["htu"].endswith("/token")]
            assert [p.get("nonce") for p in token_proofs] == [None, AS_NONCE]
            resource_proofs = [p for p in proofs if p["htu"].endswith("/mcp")]
            assert [p.get("nonce") for p in resource_proofs][:2] == [None, RS_NONCE]
            jtis = [p["jti"] for p in proofs]
            assert len(set(jtis)) == len(jtis)  # a fresh proof every time
            assert len({p["thumbprint_of"] for p in proofs}) == 1  # one key throughout


async def test_bearer_when_the_resource_does_not_ask_for_dpop() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(dpop_signing_alg_values_supported=["ES256"])
            oauth = OAuth(login=ScriptedLogin(iss=fake.origin))
            await oauth.login_to(f"{fake.origin}/mcp")
            assert "dpop" not in fake.seen[-1].headers
            assert oauth.tokens is not None and oauth.tokens.token_type == "Bearer"
