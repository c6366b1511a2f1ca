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

from urllib.parse import parse_qsl

_NAMES = frozenset({b"alt", b"$alt"})
DEFAULT = "json"


def reply_format(query: bytes) -> str:
    """The ``alt`` value ``query`` (a raw query string) selects; ``json`` when it names none."""
    found = DEFAULT
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name in _NAMES:
            found = value.decode("utf-8", "replace")
    return found
