"""What the Messages API accepts, as the tests' oracle: the SDK's request types, plus the rules
the API enforces that types cannot state."""

from __future__ import annotations

from typing import Any

from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from pydantic import TypeAdapter

_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)


def _deep(value: Any) -> Any:
    """The SDK types use lazy iterables: walk them so every block is validated."""
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, bytes, int, float, bool)):
        return value
    return [_deep(v) for v in value]


def assert_valid_request(payload: dict[str, Any]) -> None:
    _deep(_REQUEST.validate_python(payload))
    messages = payload["messages"]
    assert all(m["role"] in ("user", "assistant") for m in messages), "only user/assistant in messages"
    for i, message in enumerate(messages):
        uses = [b["id"] for b in _blocks(message) if b.get("type") == "tool_use"]
        if not uses:
            continue
        assert message["role"] == "assistant" and i + 1 < len(messages), "a tool_use needs a next turn"
        answer = _blocks(messages[i + 1])
        leading = []
        for block in answer:
            if block.get("type") != "tool_result":
                break
            leading.append(block["tool_use_id"])
        assert sorted(leading) == sorted(uses), "tool_result blocks open the next turn, one per tool_use"
        assert all(b.get("type") != "tool_result" for b in answer[len(leading) :])


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []
