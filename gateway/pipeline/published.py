"""What the pipeline tells the code wrapped around it about the guarded request in flight.

The session is known only once the request stage has read the body (a session header, the
body's ``user`` or ``metadata``, or a fingerprint of the conversation's start), but the tracing
middleware (``gateway.telemetry``) wraps the whole app and must name it on every guarded
request's span, not only on those the guard acted on. A context variable carries it out: the
request stage sets it once per request, the middleware reads it when the response starts. A
contextvar, not the ASGI scope: middlewares below the tracer pass a copied scope down, and the
pipeline sees only the request's headers. It costs one ``set`` per request, with no import of
the optional ``otel`` extra.
"""

from __future__ import annotations

from contextvars import ContextVar

# The state-store key of the session the guard judged this request in (raw: hash it before it
# leaves the process); None when the request was not judged (passthrough, fail-open).
SESSION: ContextVar[str | None] = ContextVar("loopguard_session", default=None)
