"""Real uvicorn servers on 127.0.0.1 for tests: the same helper ``loopguard demo`` uses."""

from gateway.loopback import serve

__all__ = ["serve"]
