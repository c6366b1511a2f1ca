"""Request bodies for the pipeline tests, sent raw (the SDK would re-encode them)."""

from __future__ import annotations

import httpx
import orjson


def looping_history(calls: int = 3) -> list[dict]:
    """``calls`` identical read_file calls with identical results: warned at 3 by the ladder."""
    messages = [{"role": "user", "content": "go"}]
    for i in range(calls):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    return messages


def raw_body(payload: dict, insert: bytes = b"") -> bytes:
    """``payload`` as compact JSON with ``insert`` spliced in as its first field."""
    body = orjson.dumps(payload)
    return b"{" + insert + b"," + body[1:] if insert else body


def post(client, body: bytes) -> httpx.Response:
    return httpx.post(
        client.gateway_url + "/v1/chat/completions",
        content=body,
        timeout=10,
        headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
    )
