"""One default TLS context for every httpx client the tests make.

httpx builds a new ``ssl.SSLContext`` for every client, and ``httpx.get()`` makes a client per
call: each parses the whole CA bundle (~30 ms of CPU). The tests make thousands of clients
against plain-HTTP loopback servers (SDK clients, probes, one-off requests), so that parsing was a
noticeable share of the suite's CPU, taken from the servers under test. A context built with the
default arguments is the same every time and may be shared by clients, so it is built once per
environment's CA settings; any other arguments still get a context of their own.

Today's SDKs (openai, anthropic, google-genai, mcp) build their clients with ``httpx2``, a fork
with the same transport signature; older releases use ``httpx``. Both are shared where installed.
"""

from __future__ import annotations

import functools
import importlib
import os
import ssl
from collections.abc import Callable
from types import ModuleType
from typing import Any

_TRANSPORTS = ("httpx._transports.default", "httpx2._transports.default")


def _sharing(build: Callable[..., ssl.SSLContext]) -> Callable[..., ssl.SSLContext]:
    @functools.cache
    def default_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
        return build()

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is True and cert is None and trust_env:
            return default_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        return build(verify=verify, cert=cert, trust_env=trust_env)

    shared.shares = True  # type: ignore[attr-defined]
    return shared


def _installed(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def share_default_tls_context() -> None:
    """From now on, httpx (and httpx2) clients built with the default TLS arguments share one
    context per library."""
    for module in filter(None, map(_installed, _TRANSPORTS)):
        if not getattr(module.create_ssl_context, "shares", False):
            module.create_ssl_context = _sharing(module.create_ssl_context)
