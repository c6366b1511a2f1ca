"""OpenHands events as the chat messages OpenHands built from them.

Before 1.0 an event is an ``action`` (``run``, ``read``, ``edit``, ``message``, ``system``...) or an
``observation`` (its ``cause`` the action's id). An action the model chose carries
``tool_call_metadata``: the call's id and the model's whole response, from which the call is read
as the model wrote it; the actions of one response are one assistant message. The observation of
a command shows the model its output framed by the runtime's lines (``metadata.prefix`` /
``suffix``: the working directory, the exit code).

From 1.0 (the SDK) an event has a ``kind``: ``SystemPromptEvent`` (the prompt and the tools),
``MessageEvent`` (``llm_message``), ``ActionEvent`` (``tool_call``, grouped by
``llm_response_id``), ``ObservationEvent`` / ``UserRejectObservation`` / ``AgentErrorEvent``
(answering ``tool_call_id``). A condensation (``Condensation``, ``condensation``) replaced the
history: the requests after it carry the task and the summary, a new segment.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway.replay.logs.base import text_of

Message = dict[str, Any]
KINDS = frozenset(
    ("SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation")
    + ("AgentErrorEvent", "Condensation", "CondensationSummaryEvent", "PauseEvent", "ConversationStateUpdateEvent")
)
_QUIET = frozenset(("change_agent_state", "null", "recall", "agent_state_changed", "think"))
_RESULTS = ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent")
# What an action records besides the model's arguments: left out when a call is rebuilt from it.
_BOOKKEEPING = frozenset(
    [
        "thought",
        "confirmation_state",
        "security_risk",
        "hidden",
        "is_confirmed",
        "blocking",
        "is_static",
        "cwd",
        "wait_for_response",
        "image_urls",
        "impl_source",
        "include_extra",
        "kernel_init_code",
        "translated_ipython_code",
    ]
)


def is_event(event: Any) -> bool:
    return isinstance(event, dict) and ("action" in event or "observation" in event or event.get("kind") in KINDS)


def file_order(name: str) -> tuple[int, str]:
    """``12.json`` and ``event-00012-<uuid>.json`` both sort by their number."""
    found = re.search(r"\d+", name)
    return (int(found.group()) if found else 1 << 62, name)


class Conversation:
    def __init__(self) -> None:
        self.system = ""
        self.tools: list[Any] = []
        self.model = ""
        self.done: list[list[Message]] = []  # segments before a condensation
        self.messages: list[Message] = []
        self._replies: dict[str, Message] = {}  # a model response's id -> its assistant message
        self._causes: dict[Any, str] = {}  # an action's event id -> the call id it was given
        self._task: Message | None = None

    def add(self, event: dict[str, Any]) -> None:
        if "kind" in event:
            self._sdk(event)
        elif event.get("observation") is not None:
            self._observation(event)
        elif event.get("action") is not None:
            self._action(event)

    def bodies(self) -> list[dict[str, Any]]:
        out = []
        for messages in [*self.done, self.messages]:
            head = [{"role": "system", "content": self.system}] if self.system else []
            body: dict[str, Any] = {"model": self.model, "messages": head + messages}
            if self.tools:
                body["tools"] = self.tools
            out.append(body)
        return out

    # -- before 1.0 ------------------------------------------------------------------------------

    def _action(self, event: dict[str, Any]) -> None:
        action, args = event["action"], _dict(event.get("args"))
        if action == "system":
            self.system = str(args.get("content") or "")
            self.tools = [t for t in args.get("tools") or [] if isinstance(t, dict)]
        elif action == "message":
            self._said("user" if event.get("source") == "user" else "assistant", str(args.get("content") or ""))
        elif action == "condensation":
            self._condensed(str(args.get("summary") or ""))
        elif action not in _QUIET:
            meta = _dict(event.get("tool_call_metadata"))
            response = _dict(meta.get("model_response"))
            self.model = str(response.get("model") or self.model)
            call = _call_in(response, meta.get("tool_call_id")) or _rebuilt(event, args, meta)
            thought = str(args.get("thought") or "")
            self._call(str(response.get("id") or f"event-{event.get('id')}"), call, thought)
            self._causes[event.get("id")] = call["id"]

    def _observation(self, event: dict[str, Any]) -> None:
        if event["observation"] in _QUIET:
            return
        meta = _dict(event.get("tool_call_metadata"))
        call = meta.get("tool_call_id") or self._causes.get(event.get("cause"))
        if call is None:
            return  # not an answer to a call (the runtime's own notices)
        framing = _dict(_dict(event.get("extras")).get("metadata"))
        text = f"{framing.get('prefix') or ''}{event.get('content') or ''}{framing.get('suffix') or ''}"
        self.messages.append({"role": "tool", "tool_call_id": str(call), "content": text})

    # -- from 1.0 --------------------------------------------------------------------------------

    def _sdk(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "SystemPromptEvent":
            self.system = text_of([event.get("system_prompt")]) or text_of(event.get("system_prompt"))
            self.tools = [_declared(t) for t in event.get("tools") or [] if isinstance(t, dict) and t.get("name")]
        elif kind == "MessageEvent" and isinstance(event.get("llm_message"), dict):
            said = event["llm_message"]
            self._said(str(said.get("role") or "user"), text_of(said.get("content")))
        elif kind == "ActionEvent" and isinstance(event.get("tool_call"), dict):
            made = event["tool_call"]
            call = _function(str(made.get("id") or event.get("tool_call_id")), made.get("name"), made.get("arguments"))
            self._call(str(event.get("llm_response_id") or event.get("id")), call, text_of(event.get("thought")))
        elif kind in _RESULTS:
            seen = _dict(event.get("observation"))
            text = text_of(seen.get("content")) or str(seen.get("output") or "")
            text = text or str(event.get("rejection_reason") or event.get("error") or "")
            self.messages.append({"role": "tool", "tool_call_id": str(event.get("tool_call_id")), "content": text})
        elif kind in ("Condensation", "CondensationSummaryEvent"):
            self._condensed(str(event.get("summary") or ""))

    # -- shared ----------------------------------------------------------------------------------

    def _said(self, role: str, text: str) -> None:
        message = {"role": role if role in ("user", "assistant", "system") else "user", "content": text}
        if role == "user" and self._task is None:
            self._task = message
        self.messages.append(message)

    def _call(self, response: str, call: dict[str, Any], thought: str) -> None:
        reply = self._replies.get(response)
        if reply is None or reply is not _last_assistant(self.messages):
            reply = {"role": "assistant", "content": thought or None, "tool_calls": []}
            self._replies[response] = reply
            self.messages.append(reply)
        reply["tool_calls"].append(call)

    def _condensed(self, summary: str) -> None:
        self.done.append(self.messages)
        self.messages = [m for m in (self._task,) if m is not None]
        if summary:
            self.messages.append({"role": "user", "content": summary})
        self._replies.clear()


def _last_assistant(messages: list[Message]) -> Message | None:
    """The reply calls of one response join: the last assistant message, results after it or not."""
    return next((m for m in reversed(messages) if m["role"] == "assistant"), None)


def _call_in(response: dict[str, Any], ident: Any) -> dict[str, Any] | None:
    for choice in response.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        for call in (message or {}).get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == ident and isinstance(call.get("function"), dict):
                return _function(str(ident), call["function"].get("name"), call["function"].get("arguments"))
    return None


def _rebuilt(event: dict[str, Any], args: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """A call from the action itself (no model response kept): its arguments without bookkeeping."""
    kept = {k: v for k, v in args.items() if k not in _BOOKKEEPING}
    ident = meta.get("tool_call_id") or f"event-{event.get('id')}"
    return _function(str(ident), meta.get("function_name") or event["action"], kept)


def _function(ident: str, name: Any, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments if arguments is not None else {}).decode()
    return {"id": ident, "type": "function", "function": {"name": str(name or ""), "arguments": raw}}


def _declared(tool: dict[str, Any]) -> dict[str, Any]:
    spec = {"name": tool["name"], "description": str(tool.get("description") or "")}
    return {"type": "function", "function": spec}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
