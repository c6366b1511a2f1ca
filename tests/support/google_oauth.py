"""A scripted Google OAuth token endpoint and a service-account key file pointing at it: what
google-auth's default chain reads from ``GOOGLE_APPLICATION_CREDENTIALS`` and exchanges for an
access token (a JWT signed with the account's RSA key, posted to its ``token_uri``). The
endpoint checks the JWT's signature against the account's public key and answers
``{access_token, expires_in}``; each token it issues is ``<prefix><n>`` (``ya29.gateway-1``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ACCOUNT = "loopguard@proj.iam.gserviceaccount.com"
AUDIENCE = "https://oauth2.googleapis.com/token"  # what google-auth names in every assertion


# How a broken token source answers (``TokenServer.broken``): each a 200 google-auth cannot use,
# or no answer at all.
BROKEN: dict[str, bytes | None] = {
    "not_json": b"<html>Service temporarily unavailable</html>",
    "json_array": b'["ya29.x", 3600]',
    "token_a_number": b'{"access_token": 12345, "expires_in": 3600}',
    "token_a_list": b'{"access_token": ["ya29.x"], "expires_in": 3600}',
    "token_with_a_line_break": b'{"access_token": "ya29.x\\r\\nx-evil: 1", "expires_in": 3600}',
    "token_empty": b'{"access_token": "", "expires_in": 3600}',
    "expiry_a_word": b'{"access_token": "ya29.x", "expires_in": "soon"}',
    "expiry_an_object": b'{"access_token": "ya29.x", "expires_in": {"s": 1}}',
    "no_token": b'{"expires_in": 3600}',
    "stall": None,
}


class TokenServer:
    """``expires_in``: the lifetime it gives each token; ``failing``: answer 400 instead;
    ``broken``: a ``BROKEN`` answer instead (``stall``: none, until the server stops).
    ``asked`` counts the token requests it received."""

    def __init__(self, expires_in: int = 3600, prefix: str = "ya29.gateway-") -> None:
        self.expires_in, self.prefix = expires_in, prefix
        self.failing = False
        self.broken: str | None = None
        self.asked = 0
        self.issued: list[str] = []
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        self.public_pem = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.url = ""
        self.app = Starlette(routes=[Route("/token", self._token, methods=["POST"])])

    async def _token(self, request: Request) -> Response:
        self.asked += 1
        form = await request.form()
        claims = jwt.decode(str(form["assertion"]), certs=self.public_pem, audience=AUDIENCE)
        assert claims["iss"] == ACCOUNT and "cloud-platform" in claims["scope"]
        if self.broken is not None:
            body = BROKEN[self.broken]
            while body is None and self.broken == "stall":
                await asyncio.sleep(0.05)  # until the test ends (or heals the endpoint)
            return Response(body or b"", media_type="application/json")
        if self.failing:
            return JSONResponse({"error": "invalid_grant", "error_description": "account disabled"}, 400)
        token = f"{self.prefix}{len(self.issued) + 1}"
        self.issued.append(token)
        return JSONResponse({"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"})

    def key_file(self, directory: Path, name: str = "service-account.json") -> Path:
        """A service-account key file whose token endpoint is this server (``url`` set)."""
        path = directory / name
        info = {
            "type": "service_account",
            "project_id": "proj",
            "private_key_id": "k1",
            "private_key": self.private_pem,
            "client_email": ACCOUNT,
            "client_id": "1",
            "token_uri": self.url + "/token",
        }
        path.write_text(json.dumps(info))
        return path
