"""Request bodies of an agent that has called ``read_file`` on the same file ``times`` times (each
protocol's shape), and raw upstream SSE events, shared by the reliability tests."""

from __future__ import annotations

ARGS = '{"path": "a.txt"}'


def chat_request(times: int) -> dict:
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(times):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": "read_file", "arguments": ARGS}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "same"})
    return {
        "model": "m",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
    }


def responses_request(times: int) -> dict:
    items: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(times):
        items.append({"type": "function_call", "call_id": f"call_{i}", "name": "read_file", "arguments": ARGS})
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": "same"})
    return {
        "model": "m",
        "input": items,
        "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
    }


def claude_request(times: int, result: str = "same") -> dict:
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(times):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": {"path": "a.txt"}}],
            }
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": result}]}
        )
    return {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": messages,
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
    }


# An Anthropic text answer's events as the API sends them, up to its first delta.
CLAUDE_TEXT_START = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"half an ans"}}\n\n',
]
# ... and the rest of it.
CLAUDE_TEXT_END = [
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
    b'"stop_sequence":null},"usage":{"output_tokens":1}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]
