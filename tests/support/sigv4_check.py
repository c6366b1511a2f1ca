"""What AWS does with a request's SigV4 signature, done with botocore for the scripted clouds:
the canonical request is rebuilt from the method, the raw path, the query, the headers the
``Authorization`` header names as signed and the body received, and the signature recomputed
with the scripted credentials (the scripted credentials are the only ones it knows).

``refusal`` answers None for a valid signature, else AWS's error (type and message) for it.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

# The scripted account's credentials: the clients' and the gateway's in the tests.
ACCESS_KEY = "AKIDLOOPGUARDTEST"
SECRET_KEY = "scripted/secret+key/0123456789abcdefghij"
CREDENTIALS = ReadOnlyCredentials(ACCESS_KEY, SECRET_KEY, None)
REGION = "us-east-1"
SERVICE = "bedrock"

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})\Z"
)


def refusal(
    method: str, raw_path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes, host: str
) -> tuple[str, str] | None:
    """None when the request carries a valid signature of the scripted credentials; else
    (AWS error type, message) as AWS answers it."""
    pairs = [(name.lower(), value) for name, value in headers]
    found = dict(pairs)
    auth = found.get("authorization")
    if auth is None:
        return ("MissingAuthenticationTokenException", "Missing Authentication Token")
    match = _AUTH.match(auth)
    if match is None:
        return ("IncompleteSignatureException", "Authorization header requires 'Credential' parameter.")
    if match["key"] != ACCESS_KEY:
        return ("UnrecognizedClientException", "The security token included in the request is invalid.")
    stamp = found.get("x-amz-date", "")
    if not stamp.startswith(match["date"]):
        return ("InvalidSignatureException", "Date in Credential scope does not match the x-amz-date header.")
    signed = match["signed"].split(";")
    url = f"http://{host}{raw_path}" + (f"?{query}" if query else "")
    kept = {name: value for name, value in pairs if name in signed}
    kept.setdefault("host", host)
    request = AWSRequest(method=method, url=url, data=body, headers=kept)
    request.context["timestamp"] = stamp
    signer = SigV4Auth(CREDENTIALS, match["service"], match["region"])
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, match["signature"]):
        return (
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method.",
        )
    return None
