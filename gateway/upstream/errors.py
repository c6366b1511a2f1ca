"""The one error hierarchy of the upstream boundary; transports translate their own errors here."""

from __future__ import annotations


class UpstreamError(Exception):
    """The upstream could not be reached or did not answer in time."""

    status = 502
    code = "upstream_unavailable"
    shown = False  # the message is the operator's to read, not the client's: logged only


class UpstreamConnectError(UpstreamError):
    """Connection refused, reset or dropped: 502 Bad Gateway."""


class UpstreamInvalidReply(UpstreamError):
    """A 200 whose body is not the JSON the protocol promises: relayed, a client would take a
    broken answer for a success."""

    code = "upstream_invalid_response"


class UpstreamTimeout(UpstreamError):
    """No answer within ``upstream.timeout_s``: 504 Gateway Timeout."""

    status = 504
    code = "upstream_timeout"


class UpstreamUnsigned(UpstreamError):
    """A request the gateway changed, for a provider that authenticates each request by its
    bytes, and no credentials of the gateway's own to sign it: the client's signature does not
    cover it, so it is not sent."""

    status = 502
    code = "upstream_unsigned"
