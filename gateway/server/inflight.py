"""Request body bytes held at once by the process (``limits.max_inflight_bytes``).

``limits.max_body_bytes`` bounds one body; twenty clients sending 29 MiB bodies at once still
took 900 MiB. Every body's bytes count here from the moment they are announced (the declared
``content-length``, reserved before a byte is read) or received (a chunked body, as it arrives),
until its request is over. A request that would go beyond the budget is answered 503 with
``retry-after`` at once: refused cleanly, never half-read into memory.
"""

from __future__ import annotations


class Overloaded(Exception):
    """A body would take the process beyond ``limits.max_inflight_bytes``."""


class InflightBytes:
    __slots__ = ("limit", "refused", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0  # requests answered 503 for it

    def take(self, size: int) -> bool:
        if self.used + size > self.limit:
            self.refused += 1
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


def declared_length(headers: list[tuple[bytes, bytes]]) -> int:
    for name, value in headers:
        if name == b"content-length":  # ASGI servers lowercase header names
            return int(value) if value.isdigit() else 0
    return 0
