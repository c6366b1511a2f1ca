"""What one app saw of Responses replies that a later call of the same exchange needs.

A reply names facts its later handling needs but its arguments do not carry: which calls were
``custom_tool_call`` (a refused one is shown again as its own kind), which calls the client
never saw (the upstream is owed their outputs), the upstream id behind a continued stream's
reply, and, in a conversation, the round of calls in flight (a re-ask must answer them). This
object keeps them, bounded, for one app (``protocol.build``), and plays the roles that fill or
read them: ``Edits`` (``veto_exchange``), ``Replies`` (``proposed_calls``, ``keep_calls``) and
``Streams`` (``stream_filter``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols.adapters import Recent, model_named
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.responses import answers, chain, conversation, replies, rewrite, tokens
from gateway.protocols.responses.stream import ResponsesStreamFilter
from gateway.protocols.roles import Edits, Replies, Streams
from gateway.trace.model import ToolCall


class Seen:
    def __init__(self) -> None:
        self.custom_calls = Recent()  # call id -> None: a refused call is re-shown as its own kind
        self.withheld = Recent()  # response id -> calls the client never saw (owed outputs)
        # The upstream's own reply ids are unique: keyed by them alone.
        self.aliases = Recent()  # the client's response id -> the upstream's (a continued stream)
        self.pending = Recent()  # conversation id -> its round of calls in flight (``Pending``)

    def edits(self) -> Edits:
        return Edits(
            rewrite.add_anchor,
            rewrite.result_index,
            rewrite.replace_result,
            self.veto_exchange,
            rewrite.corrective,
            rewrite.without_tools,
        )

    def replies(self) -> Replies:
        return Replies(
            (dict,),
            self.proposed_calls,
            self.keep_calls,
            answers.answer,
            answers.prepend_text,
            tokens.output_tokens,
            with_call=answers.with_call,
        )

    def streams(self) -> Streams:
        return Streams(self.stream_filter, answers.stream_answer, answers.stream_prepend_text)

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation, call.id in self.custom_calls)

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        self.custom_seen(replies.custom_call_ids(reply))
        calls = replies.proposed_calls(reply)
        held = reply.get("conversation") if isinstance(reply, dict) else None
        self.proposed(conversation.conversation_id({"conversation": held}), calls, True)
        return [calls]  # one answer: Responses has no alternatives

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        count = keep[0] if keep else len(replies.proposed_calls(reply))
        dropped = list(replies.proposed_calls(reply)[count:])
        if dropped and isinstance(reply.get("id"), str):
            self.withheld.put(reply["id"], dropped)
        return replies.keep_calls(reply, count)

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> ResponsesStreamFilter:
        talk = conversation.conversation_id(payload)
        on_round = None
        if talk is not None:  # each round and its calls are noted: a re-ask answers them
            inner = judge

            def judge(call: ToolCall, position: int, *rest: Any) -> bool:
                self.proposed(talk, (call,), False)
                return inner(call, position, *rest)

            def on_round() -> None:  # the upstream holds the request now, even for a round without calls
                self.proposed(talk, (), True)

        return ResponsesStreamFilter(
            judge,
            options,
            on_custom=self.custom_seen,
            on_withheld=self.withheld.put,
            on_alias=self.aliases.put,
            model=model_named(payload),
            on_round=on_round,
        )

    def custom_seen(self, ids: set[str]) -> None:
        for call_id in ids:
            self.custom_calls.put(call_id)

    def pending_of(self, talk: str) -> conversation.Pending:
        """Conversation ``talk``'s round in flight (a new, empty one when none is kept)."""
        pending = self.pending.get(talk)
        if pending is None:
            pending = conversation.Pending()
            self.pending.put(talk, pending)
        return pending

    def proposed(self, talk: str | None, calls: Sequence[ToolCall], first: bool) -> None:
        """The upstream proposed ``calls`` in conversation ``talk``: a re-ask must answer them."""
        pending = self.pending.get(talk) if talk is not None else None
        if pending is None:
            return
        if first or pending.answered:
            pending.round, pending.answered = list(calls), False
        else:
            pending.round.extend(calls)

    def owed(self, response_id: str) -> tuple[Any, ...]:
        """The outputs owed for the calls of ``response_id`` the client never saw (once)."""
        dropped = self.withheld.pop(response_id, None) or []
        return chain.owed_outputs(dropped, chain.WITHHELD, {c.id for c in dropped if c.id in self.custom_calls})
