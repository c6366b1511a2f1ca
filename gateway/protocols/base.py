"""The one interface every protocol adapter implements.

An adapter is the only code that knows a wire format (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages). The guard (trace, detectors, policy, interventions, state,
audit) and the server's pipeline talk to adapters only through these two protocols, so adding a
fourth protocol is one new package under ``gateway/protocols/`` plus one route line.

Vocabulary:
- ``payload``: the parsed request body (a dict), never mutated: every edit returns new objects.
- ``items``: the request's own ordered list of conversation entries (chat ``messages``,
  Responses ``input`` items, Anthropic ``messages``). ``Turn.index`` points into it, so an edit
  can name the entry it touches. Nothing outside an adapter looks inside an item.
- ``reply``: a parsed non-streaming upstream answer (a dict).

Rules every adapter keeps: never drop or reorder an item it did not mean to change (edits only
insert or append); never raise on a body it cannot read (return "nothing found" and let the
traffic through); build every reply it writes itself (termination, errors) in the exact shape
the protocol's official SDK accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.protocols.declaration import Declaration
from gateway.state.base import StateStore
from gateway.trace.model import Conversation, ToolCall

# (proposed call, position in its round[, alternative answer (chat choice) index]) -> let it through?
# Each alternative answer is judged on its own; a filter that never sees several passes two args.
Judge = Callable[..., bool]


class RoundView(Protocol):
    """What a stream filter knows about the round of calls it judged (one upstream stream)."""

    kept: list[ToolCall]
    dropped: list[ToolCall]  # the refused call and every later call of the round
    rejected: ToolCall | None
    rejected_position: int | None
    judge_errors: list[Exception]  # the judge raised: the call was let through (fail-open)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """How a stream filter runs: the serving process's settings, with what one request adds."""

    keepalive_s: float | None = 15.0  # while something is held; None: never
    # Protocol fast paths (chat: reading bytes into events, argument byte-matching, a whole
    # round in one read). Off: every event is decoded and read the one general way; the
    # client gets the same bytes either way, only slower (``streaming.fast_paths``).
    fast_paths: bool = True
    # Hold a round's text (and thinking) until its calls are judged, so a refused round is
    # never shown (a conversation already at warn level); protocols that support it read it.
    hold_text: bool = False


class StreamFilter(Protocol):
    """Relays an upstream event stream to the client, holding each tool call until judged.

    Feed it upstream bytes; write what it returns to the client, in order. Text and every event
    that is not part of a tool call go out at once; a tool call's events are held until the call
    is complete and ``judge`` has seen it, then released untouched (byte for byte when nothing
    was dropped) or left out. The first refused call drops itself and every later call of the
    round. When every call was dropped, the stream's closing events are withheld and the
    pipeline decides: ``begin_continuation`` (a re-ask continues the same client stream) or
    ``terminate`` (end the client stream with a final text).

    Filters subclass ``gateway.protocols.streaming.StreamDriver``, which implements all of this
    but the protocol's event parsing and writing.
    """

    # True: nothing reaches the client before every call of the stream is judged (the whole
    # stream is held); the pipeline then sends the headers with the first bytes, after the
    # decision, so they name it.
    holds_whole: bool

    @property
    def round(self) -> RoundView: ...

    @property
    def needs_decision(self) -> bool:
        """Every call of the current round was dropped and nobody decided yet."""
        ...

    def feed(self, data: bytes) -> list[bytes]: ...

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: judge and release what is still held."""
        ...

    def cut(self, upstream: bytes) -> list[bytes]:
        """The upstream broke off (timeout, lost connection) after sending ``upstream`` this
        round: a partial event is dropped (it never reached the client) and whatever the client
        has open (a content block, an output item) is closed as the upstream would have closed
        it, so ``terminate`` can end a well-formed stream."""
        ...

    def fail(self, upstream: bytes, error: Any) -> list[bytes]:
        """The upstream failed mid-stream: ``cut``, then the protocol's terminal events for
        ``error``; the stream is over (call ``final`` next)."""
        ...

    def begin_continuation(self) -> None:
        """The next bytes fed come from a re-ask: relay them as the rest of the same stream."""
        ...

    def terminate(self, text: str) -> list[bytes]:
        """End the client stream with ``text`` as the assistant's final message."""
        ...

    def final(self) -> list[bytes]:
        """The client stream is over: whatever closing events are still owed, exactly once."""
        ...

    @property
    def reply(self) -> dict[str, Any] | None:
        """The complete reply the stream carried, when the protocol's stream ends with one
        (Responses' ``response.completed``); None otherwise. Fed to ``Adapter.remember``."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """What a model answer says, for the turn's required-tool check."""

    calls: bool  # the model called a tool: not a final answer
    text: str  # the answer's text


@dataclass(frozen=True, slots=True)
class ItemText:
    """What one conversation item costs in tokens, read by its protocol: the savings estimate
    counts these pieces and never reads a wire key itself."""

    output: bool  # the model wrote it (priced at the output rate; one more round repeats it)
    text: str  # the text the model reads or wrote
    name: str | None = None  # an author name the protocol sends beside the text
    calls: tuple[str, ...] = ()  # each tool call's name and arguments, as sent


class Adapter(Protocol):
    """One protocol. The pipeline (``gateway.pipeline``) calls these in order; see each stage."""

    name: str  # "chat", "responses", "anthropic": metrics label, log field, replay key
    declared: Declaration  # routes, upstream, id fields, ...: what the rest of the gateway reads
    # True when the upstream keeps conversations the request only refers to (Responses'
    # ``previous_response_id``): the pipeline then calls ``history`` and ``remember``.
    chains: bool
    # The payload field that holds the items ("messages", "input").
    items_field: str
    # The payload fields ``conversation`` reads besides the items (declared tools, a system
    # prompt field): while they are unchanged, so are its head turns and declared tools.
    payload_fields: tuple[str, ...]
    # What a 200 reply's JSON must be for the response path to judge it: a JSON object, or, for a
    # reply that is an array of chunks (Gemini's stream without ``alt=sse``), an array. Any
    # other reply is relayed as it came.
    reply_types: tuple[type, ...]

    def at(self, scope: dict[str, Any]) -> Adapter | None:
        """The adapter for one request on a declared route: itself, or one bound to what the
        path says (Google's model and streaming live in the path, not the body). None: the
        request is the protocol's but not guarded (relayed untouched to its upstream)."""
        ...

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        """The request's own conversation entries ([] when absent or unreadable)."""
        ...

    def conversation(self, payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
        """The turns of ``items[start:]``, with the tools the payload declares. ``Turn.index`` is
        the position in ``items`` (the payload's own, or an edited copy). With ``start == 0``
        also the parts outside ``items`` the model reads first (a ``system`` or
        ``instructions`` field), as turns with index -1. The pipeline's history cache calls it
        with ``start > 0`` to parse only what a growing conversation added."""
        ...

    def with_items(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        """The payload carrying ``items`` in place of its own; every other field unchanged.
        The first ``history`` items are what ``history()`` supplied, unchanged: an upstream
        that holds them already (a server-side chain) need not get them again. ``history`` is 0
        when there were none or an edit touched them: then ``items`` must be sent whole.
        For a request with a ``history``, ``payload`` itself means "send the client's bytes";
        a new payload is sent even when the guard changed nothing (a chain may need that).
        ``namespace``: the client's, as given to ``history`` (only chains depend on it)."""
        ...

    def stream(self, payload: dict[str, Any]) -> bool: ...

    def model(self, payload: dict[str, Any]) -> str: ...

    def user(self, payload: dict[str, Any]) -> str | None:
        """The end user the body names (OpenAI's ``user``, Anthropic's ``metadata.user_id``),
        a session source (``sessions.body_user``); None when absent or not a non-empty string."""
        ...

    # --- conversations the upstream keeps (called only when ``chains``) ----------------------

    async def history(self, payload: dict[str, Any], store: StateStore, namespace: str) -> list[Any]:
        """Entries that precede the request's own but that it does not carry, oldest first:
        a server-side chain (Responses' ``previous_response_id``) rebuilt from what
        ``remember`` stored. They are judged with the request's items. [] when none or
        unknown (then only what is visible is judged). ``namespace`` is the client's
        (``gateway.state.session.client_namespace``): only what ``remember`` stored for the
        same client is found, so a client cannot read another's conversation by its id."""
        ...

    async def remember(
        self,
        sent: dict[str, Any],
        reply: dict[str, Any],
        store: StateStore,
        namespace: str,
        client: dict[str, Any] | None = None,
        untouched: bool = False,
    ) -> None:
        """After a reply reached the client: ``sent`` is the last request body the upstream got
        (the re-ask, when there was one), ``reply`` the reply (a stream's ``StreamFilter.reply``),
        ``client`` the client's own request body. ``untouched``: the upstream holds exactly what
        the client saw of this exchange (nothing was changed or asked again). Store what a later
        ``history`` of the same client (``namespace``) needs. Never raises on odd input."""
        ...

    def restored(self, payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        """The payload as a request carrying the whole conversation reads: request fields the
        upstream keeps for a server-side conversation (an Anthropic thread's ``system`` and
        ``tools``) put back from what ``history`` read. The guard judges this one."""
        ...

    def created(self, payload: dict[str, Any], reply: dict[str, Any]) -> list[tuple[str, str]]:
        """The server-side objects ``reply`` (to ``payload``) creates that a later request may
        name, as (kind, id), like ``references``."""
        ...

    def references(self, payload: dict[str, Any]) -> list[tuple[str, str]]:
        """The server-side objects the request names, as (kind, id): ``response``, ``thread``,
        ``conversation``. With a server-side upstream key, an id the gateway did not see
        created for the caller's tenant is refused."""
        ...

    # --- interventions on the request (warn, replaced result, re-shown veto) ---------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        """Warn: put ``text`` where the model reads it before its next step (``placement`` is
        the policy's ``system`` | ``user`` | ``tool_result``), keeping the protocol's ordering
        rules (a tool result still follows its call)."""
        ...

    def result_index(self, items: list[Any], call_id: str, after: int) -> int | None:
        """Where the result of call ``call_id`` (issued by the entry at ``after``) is, if any."""
        ...

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str) -> list[Any]:
        """An executed call already at reject level: its result (the one answering ``call_id``,
        in the entry at ``index`` that ``result_index`` found) becomes ``text``. One entry may
        answer several calls (Anthropic: one user turn, a ``tool_result`` per parallel call),
        so the call id, not the position, says which result is the refused call's."""
        ...

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        """The entries that show the model a refused call and the gateway's error observation in
        its place (chat: an assistant message + a tool message; Responses: a ``function_call`` +
        a ``function_call_output``; Anthropic: an assistant ``tool_use`` turn + a user
        ``tool_result`` turn with ``is_error: true``)."""
        ...

    def corrective(self, answer: str, text: str) -> list[Any]:
        """The model's plain ``answer`` and a user entry with ``text``: appended to re-ask for a
        tool call the turn requires."""
        ...

    # --- the reply --------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        """The tool calls a non-streaming reply proposes, in order, one tuple per alternative
        answer (chat ``choices`` when ``n > 1``; one for protocols without alternatives)."""
        ...

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        """The reply where alternative ``i`` keeps only its first ``keep[i]`` proposed calls
        (an alternative left without calls ends as a plain answer)."""
        ...

    def answer(self, reply: dict[str, Any]) -> Answer | None:
        """What the (first) answer says; None when unreadable (it goes out untouched)."""
        ...

    def prepend_text(self, reply: dict[str, Any], text: str) -> dict[str, Any]:
        """The reply with ``text`` (and a blank line) before the answer's own text."""
        ...

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> StreamFilter:
        """A filter for one client stream; ``options``: None for the defaults."""
        ...

    def stream_answer(self, stream: bytes) -> Answer | None:
        """What a complete client-bound event stream answers; None when it holds an error or
        nothing readable."""
        ...

    def stream_prepend_text(self, stream: bytes, text: str) -> bytes:
        """The stream with ``text`` (and a blank line) before the answer's own text."""
        ...

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        """A complete, valid non-streaming reply whose only content is ``text``."""
        ...

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        """The same as a complete, valid event stream."""
        ...

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        """An error in the protocol's own error shape."""
        ...

    def error_event(self, body: dict[str, Any]) -> bytes:
        """``error_body``'s result as one event of the protocol's stream (an error mid-stream)."""
        ...

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload asking for a plain text answer: tools disabled the protocol's way."""
        ...

    def output_tokens(self, answer: bytes) -> int | None:
        """The output tokens the upstream reported for one answer (a JSON reply or a complete
        event stream, as the upstream sent it); None when it reported none."""
        ...

    def item_text(self, item: Any) -> ItemText:
        """One conversation item's text pieces, for the savings token estimate."""
        ...
