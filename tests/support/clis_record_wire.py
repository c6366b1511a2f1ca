"""The scripted model of a recording (``support.clis_record``) served in the recorded CLI's own
protocol: each agent request answered by the model's next move (a call, in the protocol's shape
or, for a client that acts in text, written in its reply), every other request of the CLI (a
title, a routing check, an edit's correction) briefly, in the shape it asks for."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from support.anthropic_upstream import AnthropicUpstream, Said
from support.cli_runs import ChatUpstream
from support.clis_codex import Reply as CodexReply
from support.gemini_upstream import GeminiUpstream
from support.gemini_upstream import Said as GeminiSaid
from support.responses_upstream import Answer, ResponsesUpstream
from support.servers import serve
from support.upstream import Reply

if TYPE_CHECKING:  # the recording's types; it imports this module
    from support.clis_record import Call, Client, Model


@contextmanager
def serve_model(client: Client, model: Model, name: str, prompt: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The scripted model (called ``name``) on loopback in the client's protocol, moving on the
    agent's requests (those carrying ``prompt``): (its URL, the requests it got)."""
    upstream = _upstream(client, model, name, prompt)
    with serve(upstream.app) as url:
        yield url, upstream.requests


def _upstream(client: Client, model: Model, model_name: str, prompt: str) -> Any:
    def move(body: dict[str, Any]) -> Call | str | None:
        # The agent's own turns carry the prompt; a sub-agent's (Claude Code warms its helpers
        # up with "Warmup") or a side request (a title, a routing check) is answered briefly.
        mine = client.is_agent(body) and prompt in json.dumps(body)
        return model.next(body) if mine else None

    if client.wire == "anthropic":
        return AnthropicUpstream(lambda body: _said(move(body)))
    if client.wire == "gemini":
        return GeminiUpstream(lambda body: _gemini(move(body), body))
    if client.wire == "responses":
        return ResponsesUpstream(lambda conversation, body: _answer(move(body)))
    # A chat request that declares no tools is a client acting in text (XML tags).
    return ChatUpstream(lambda body: _reply(move(body), None if body.get("tools") else client.in_text), model_name)


SIDE = "OK"  # the answer to a request of the CLI's own (a title, a summary, a routing check)


def _said(move: Call | str | None) -> Said:
    if move is None or isinstance(move, str):
        return Said(text=move or SIDE)
    return Said(calls=[(move[0], move[1])])


def _gemini(move: Call | str | None, body: dict[str, Any]) -> GeminiSaid:
    if move is None:  # a side request asking for JSON (a routing check, an edit's correction)
        return GeminiSaid(text=json.dumps(_filled(_schema(body))))
    if isinstance(move, str):
        return GeminiSaid(text=move)
    return GeminiSaid(calls=[(move[0], move[1])])


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("generationConfig") or {}
    return config.get("responseJsonSchema") or config.get("responseSchema") or {}


def _filled(schema: dict[str, Any]) -> Any:
    """A value of ``schema``'s shape: what a side request parses without failing. Texts say
    nothing can be corrected; numbers are middling."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _filled(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 10
    if kind == "boolean":
        return False
    return "no change"


def _answer(move: Call | str | None) -> Answer:
    if move is None or isinstance(move, str):
        return Answer(move or SIDE)
    name, args = move
    if isinstance(args, str):  # a freeform tool's input
        return CodexReply(custom=(name, args))
    return CodexReply(calls=[(name, json.dumps(args))])


def _reply(move: Call | str | None, in_text: Callable[[str, Any], str] | None) -> Reply:
    if move is None or isinstance(move, str):
        return Reply(content=move or SIDE)
    name, args = move
    if in_text is not None:
        return Reply(content=in_text(name, args))
    return Reply(tool_calls=[(name, json.dumps(args))])


def xml_action(name: str, args: dict[str, Any]) -> str:
    """A tool call written as XML tags in the reply's text (Cline before native tools)."""
    params = "".join(f"<{k}>{v}</{k}>\n" for k, v in args.items())
    return f"<{name}>\n{params}</{name}>"
