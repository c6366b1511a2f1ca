"""One unlabelled series read from a gateway's /metrics, asking for that series only
(``?name[]=``): a full scrape renders every histogram."""

from __future__ import annotations

import re

import httpx


def series(url: str, name: str, timeout: float = 10) -> float | None:
    """The value of ``name`` (a series without labels) at ``url``, or None when it is absent."""
    text = httpx.get(url + "/metrics", params={"name[]": name}, timeout=timeout).text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else None
