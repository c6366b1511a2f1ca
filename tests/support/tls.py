"""One default TLS context for every httpx client the tests make.

httpx builds a new ``ssl.SSLContext`` for every client, and ``httpx.get()`` makes a client per
call: each parses the whole CA bundle (~30 ms of CPU). The tests make thousands of clients
against plain-HTTP loopback servers (SDK clients, probes, one-off requests), so that parsing was a
noticeable share of the suite's CPU, taken from the servers under test. A context built with the
default arguments is the same every time and may be shared by clients, so it is built once per
environment's CA settings; any other arguments still get a context of their own.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx._transports.default as transports

_build = transports.create_ssl_context  # type: ignore[attr-defined]


@functools.cache
def _default_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return _build()


def _shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None and trust_env:
        return _default_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _build(verify=verify, cert=cert, trust_env=trust_env)


def share_default_tls_context() -> None:
    """From now on, httpx clients built with the default TLS arguments share one context."""
    transports.create_ssl_context = _shared  # type: ignore[attr-defined]
