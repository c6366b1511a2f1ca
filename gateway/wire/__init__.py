"""The bottom floor: what every wire format shares and nothing protocol-specific.

``codec``: JSON in and out (orjson, with a stdlib fallback for valid JSON orjson refuses).
``credentials``: how a client's key is read from its headers and query string, by places each
protocol declares (``UpstreamSpec.credentials`` / ``credential_query``) and its caller passes in.
Every other package may import these; they import nothing of the gateway.
"""
