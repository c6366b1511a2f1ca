"""The reply format a Gemini request's query selects (``alt``), read the way Google's frontend
reads it, once, for every decision that depends on it.

``alt`` is one of Google's system parameters: ``alt`` and ``$alt`` (``%24alt``) are one
parameter, names and values are percent-decoded (``alt=%73se`` is ``alt=sse``), and a
parameter given more than once takes its last value (as measured of Google's other system
parameters). ``sse`` asks ``streamGenerateContent`` for events; anything else (``json``, the
default) for one JSON array. A reading that still differs from the upstream's costs nothing
but shape: the pipeline picks its path by the reply's own content type, and judges either.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from gateway.wire.credentials import parameter_name

DEFAULT = "json"


def reply_format(query: bytes) -> str:
    """The ``alt`` value ``query`` (a raw query string, any bytes) selects; ``json`` when it
    names none. Read as bytes throughout: a value that is no UTF-8 (``%C3%A9``, ``%FF``) is
    read, never an error."""
    found = DEFAULT
    for pair in query.split(b"&") if query else ():
        if parameter_name(pair) == b"alt":
            value = unquote_to_bytes(pair.partition(b"=")[2].replace(b"+", b" "))
            found = value.decode("utf-8", "replace")
    return found
