"""Anthropic message threads: the server keeps the conversation, a request carries only its new messages.

A thread starts with ``thread: {"type": "create"}`` (the whole conversation, ``system`` and
``tools`` included); every later request names the reply it follows,
``thread: {"type": "continue", "previous_message_id": ...}``, and carries only the new messages,
without ``system`` and ``tools`` (the thread keeps those and refuses them again). A thread
message can be continued only once (``thread_already_continued``): a thread never forks.

The gateway judges a thread whole, like a request that sends its whole history: after every
reply it keeps the conversation as the client saw it (:class:`ChainRecord` under the client's
namespace and the reply's id: the client's messages and the replies as they reached the client,
never the gateway's own notes) with the thread's ``system`` and ``tools`` (``fields``).

What goes upstream. The record also says where the upstream's thread matches the client's
conversation (``upstream_id``) and which of the client's messages it has not been sent since
(``owed``):
- a request the guard leaves alone continues the client's own message, byte for byte, when the
  upstream holds exactly what the client saw; else it continues ``upstream_id`` with the owed
  messages and its own (that message was never continued, so the thread rule holds);
- a request the guard changes (a warning, a refused call shown again) and every request the
  gateway makes itself (a re-ask, the closed-tools final answer) cannot continue the client's
  message (the upstream would hold a second continuation of it, or the first one's refused
  reply): it goes as a new thread, ``{"type": "create"}`` with the whole conversation and the
  thread's ``system`` and ``tools``. Its reply is a thread message like any other, so the
  client continues it as usual; the upstream id it follows no longer matters.

A record holds the newest ``MAX_BYTES`` of the conversation (cut at a user turn that is not a
tool result): a rewrite of a longer thread sends that part.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.adapters import newest_within
from gateway.protocols.anthropic.rewrite import with_messages
from gateway.state.base import ChainRecord

MAX_MESSAGES = 512
MAX_BYTES = 1024 * 1024
# Fields a continue leaves out: the thread holds them.
THREAD_FIELDS = ("system", "tools")
ANONYMOUS = "c:-:"  # the namespace of clients without a credential (as Responses chains')


def key(namespace: str, message_id: str) -> str:
    """Where a thread message's record is kept: under its client's namespace."""
    return (namespace or ANONYMOUS) + "thread:" + message_id


def thread_of(payload: Any) -> dict[str, Any] | None:
    thread = payload.get("thread") if isinstance(payload, dict) else None
    return thread if isinstance(thread, dict) and thread.get("type") in ("create", "continue") else None


def previous_id(payload: Any) -> str | None:
    """The thread message this request continues."""
    thread = thread_of(payload)
    if thread is None or thread.get("type") != "continue":
        return None
    previous = thread.get("previous_message_id")
    return previous if isinstance(previous, str) and previous else None


def restored(payload: dict[str, Any], record: ChainRecord | None) -> dict[str, Any]:
    """The request as one sending the whole thread reads: the thread's ``system`` and ``tools``
    back in place (the guard reads declared tools and the system prompt from them)."""
    if record is None or not record.fields:
        return payload
    return {**payload, **{k: v for k, v in record.fields.items() if k not in payload}}


def outgoing(
    payload: dict[str, Any],
    items: list[Any],
    history: int,
    record: ChainRecord,
) -> tuple[dict[str, Any], str | None]:
    """(the body to send, the upstream message it continues or None). ``items``: the whole
    conversation the model must see; the first ``history`` of them are the record's, unchanged."""
    own = messages_value if isinstance(messages_value := payload.get("messages"), list) else []
    size = len(record.items)
    untouched = (
        history == size
        and len(items) == size + len(own)
        and all(a is b for a, b in zip(items[size:], own, strict=False))
    )
    if untouched and record.upstream_id:
        if record.upstream_id == previous_id(payload) and not record.owed:
            return payload, record.upstream_id
        continued = {
            **payload,
            "thread": {"type": "continue", "previous_message_id": record.upstream_id},
            "messages": [*record.owed, *own],
        }
        return continued, record.upstream_id
    whole = {k: v for k, v in payload.items() if k != "thread" and k not in THREAD_FIELDS}
    whole.update(record.fields or {})
    whole["thread"] = {"type": "create"}
    return with_messages(whole, items), None


def next_record(
    prior: ChainRecord | None, client: dict[str, Any], reply: dict[str, Any], untouched: bool, continued: str | None
) -> ChainRecord | None:
    """The record of ``reply``: the client's conversation up to it, and where the upstream's
    thread matches it. ``untouched``: the upstream holds exactly what the client saw of this
    exchange; ``continued``: the upstream message this exchange continued, if any (it cannot
    be continued again)."""
    content = reply.get("content")
    own = client.get("messages")
    if not isinstance(content, list) or not isinstance(own, list):
        return None
    answer = {"role": "assistant", "content": content}
    earlier = list(prior.items) if prior is not None else []
    items = bounded([*earlier, *own, answer])
    fields = prior.fields if prior is not None else {k: client[k] for k in THREAD_FIELDS if k in client}
    reply_id = reply.get("id")
    if untouched and isinstance(reply_id, str):
        return ChainRecord(tuple(items), (), reply_id, fields)
    if prior is not None and prior.upstream_id and prior.upstream_id != continued:
        return ChainRecord(tuple(items), (*prior.owed, *own, answer), prior.upstream_id, fields)
    return ChainRecord(tuple(items), (), None, fields)


def bounded(messages: list[Any]) -> list[Any]:
    """The newest messages within MAX_MESSAGES and MAX_BYTES, opening with a user turn that is
    no tool result (a cut conversation must still be one the API accepts)."""
    messages = messages[-MAX_MESSAGES:]
    start = newest_within(messages, MAX_BYTES)
    while start < len(messages) and start and not _opens(messages[start]):
        start += 1
    return messages[start:]


def _opens(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    return not (
        isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def references(payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """The thread message a request continues (``History.references``), as given: a value no id
    is (a list, an object) is refused by the caller, never skipped."""
    thread = thread_of(payload)
    previous = thread.get("previous_message_id") if thread is not None and thread.get("type") == "continue" else None
    return [("thread", previous)] if previous not in (None, "") else []


def created(payload: dict[str, Any], reply: Any) -> list[tuple[str, str]]:
    """A threaded request's reply is a thread message a later request may continue."""
    reply_id = reply.get("id") if isinstance(reply, dict) else None
    threaded = thread_of(payload) is not None
    return [("thread", reply_id)] if threaded and isinstance(reply_id, str) and reply_id else []
