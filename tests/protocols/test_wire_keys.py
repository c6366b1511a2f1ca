"""Adapters under gateway/protocols/ are the only code that knows a wire format: no other
module of the gateway spells a protocol's body keys, header names or auth scheme. The
chat-shaped LiteLLM integration, the demo (a scripted chat model) and replay's readers of the
agents' own logs (which store their protocol's items as the clients sent them) are the
exceptions.

A module that needs one of these reads it from its adapter (``Declaration``, ``UpstreamSpec``
or an ``Adapter`` method) instead; this test fails when a quoted key creeps back in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gateway

ROOT = Path(gateway.__file__).parent
EXEMPT = ("protocols/", "integrations/litellm/", "demo.py", "replay/logs/")
# Keys only a wire format has. Words the gateway uses in its own vocabulary too are left out:
# "model" (a policy match and a metrics label), "messages" (policy texts), "authorization"
# (HTTP's own credential header, read by the gateway's client authentication), roles.
WIRE_KEYS = frozenset(
    {
        # OpenAI chat completions and Responses
        "tool_call_id",
        "tool_calls",
        "tool_choice",
        "choices",
        "delta",
        "finish_reason",
        "prompt_tokens",
        "completion_tokens",
        "max_tokens",
        "content",
        "arguments",
        "call_id",
        "previous_response_id",
        "function_call",
        "function_call_output",
        "input",
        "output",
        "instructions",
        "api-key",
        "Bearer ",
        # Anthropic messages
        "tool_use",
        "tool_use_id",
        "stop_reason",
        "input_tokens",
        "output_tokens",
        "x-api-key",
        "anthropic-version",
        "anthropic-beta",
        "previous_message_id",
        # Gemini generateContent
        "contents",
        "functionCall",
        "functionResponse",
        "functionDeclarations",
        "toolConfig",
        "candidates",
        "usageMetadata",
        "x-goog-api-key",
    }
)


def _literals(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            value = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            found.append((node.lineno, value))
    return found


def test_no_wire_key_is_quoted_outside_the_adapters():
    offending = [
        f"{path.relative_to(ROOT.parent)}:{line}: {value!r}"
        for path in sorted(ROOT.rglob("*.py"))
        if not path.relative_to(ROOT).as_posix().startswith(EXEMPT)
        for line, value in _literals(path)
        if value in WIRE_KEYS
    ]
    assert offending == []


def test_the_scan_reads_the_adapters_keys():
    # The rule is only as good as the scan: it finds the keys where they belong.
    values = {value for line, value in _literals(ROOT / "protocols" / "chat" / "protocol.py")}
    assert "tool_call_id" in values
