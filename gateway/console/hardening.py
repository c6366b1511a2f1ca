"""What every console answer carries, and the checks its unauthenticated POSTs pass.

- Headers on every answer: ``no-store`` (runs' excerpts must not stay in a shared cache or the
  browser's), a CSP allowing the console's own files only (no inline script; event fields are
  rendered as text anyway), no framing (``DENY`` and ``frame-ancestors``: no clickjacking) and
  ``nosniff``.
- Sign-in and sign-out are refused (403) when the browser names another site as their origin
  (``Origin``, else ``Referer``): with the SameSite=Strict cookie, no other site can act as the
  signed-in user. A client naming none (curl) is no browser another site could drive.
- Their form body is read incrementally and refused with 413 beyond ``MAX_FORM`` bytes: an
  unauthenticated caller cannot make the gateway hold more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from gateway.protocols.errors import error_body

MAX_FORM = 4096  # bytes of a sign-in form: a key and a console path
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "cache-control": "no-store",
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}

Handler = Callable[[Request], Awaitable[Response]]


def headed(handler: Handler) -> Handler:
    async def with_headers(request: Request) -> Response:
        response = await handler(request)
        response.headers.update(HEADERS)
        return response

    return with_headers


def cross_site(request: Request) -> Response | None:
    """403 when the POST's named origin is not this host; None to go on."""
    named = request.headers.get("origin") or request.headers.get("referer")
    if named is None:
        return None
    origin = urlsplit(named)
    if origin.scheme in ("http", "https") and origin.netloc and origin.netloc == request.headers.get("host"):
        return None
    return JSONResponse(
        error_body("Cross-site sign-in and sign-out are refused.", type="permission_error", code="cross_site"),
        status_code=403,
    )


async def form(request: Request) -> dict[str, list[str]] | Response:
    """The urlencoded form, or the refusal: 413 beyond ``MAX_FORM`` bytes (declared or sent)."""
    declared = request.headers.get("content-length", "")
    if declared and (not declared.isdigit() or int(declared) > MAX_FORM):
        return _too_large()
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM:
                return _too_large()
    except ClientDisconnect:
        return Response(status_code=400)
    return parse_qs(body.decode("utf-8", "replace"))


def _too_large() -> Response:
    return JSONResponse(
        error_body(f"A sign-in form is at most {MAX_FORM} bytes.", code="request_too_large"),
        status_code=413,
        headers={"connection": "close"},  # the rest of the body is not read
    )


def tenant_status(found: dict[str, Any], tenant: str | None) -> dict[str, Any]:
    """What a tenant's view shows of the status: the policy's name and global block and whether
    the state backend answers; not the policy file, its overrides (they may match other tenants'
    keys), reload errors or the process's counters."""
    policy = found["policy"]
    return {
        "policy": {
            "name": policy["name"],
            "file": "-",
            "loaded_at": policy["loaded_at"],
            "reloads": policy["reloads"],
            "reload_errors": 0,
            "last_error": None,
            "default": policy["default"],
            "overrides": [],
        },
        "state": {"backend": found["state"]["backend"], "healthy": found["state"]["healthy"], "degradations": 0},
        "console": {"keep": found["console"]["keep"], "written": 0, "dropped": 0},
        "tenant": tenant,
    }
