"""The state-store interface: what the gateway remembers between requests of one session.

Requests carry the whole conversation, so most decisions need no state at all. What they cannot
carry is what the agent never saw, or what it has since thrown away:

- the tool calls the gateway vetoed: kept keyed by session and by a hash of the conversation
  prefix they follow, and shown to the model again in later requests (of the same run, for a
  fingerprint session: ``end_run``);
- where the session's history stood at its previous request (:class:`HistoryMark`), so that a
  history that suddenly got shorter (the agent compacted its context) arms the post-compaction
  guard;
- the calls the gateway warned the model about (:class:`WarnedCall`): a warning is only in what
  was forwarded, never in the client's history, and a pattern that continues after it
  escalates (the ``ignored_warning`` detector);
- for protocols whose requests carry only the new items and name the previous response
  (``previous_response_id``), what the upstream holds for each response (:class:`ChainRecord`),
  so the conversation can be rebuilt and judged whole.

Every store degrades instead of failing: an unavailable backend answers "nothing stored" and
counts it in ``degradations``, because a request must never fail for lack of state.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from gateway.state.bounds import CHAIN_TEXT_CHARS, bounded
from gateway.state.events import LoggedEvent
from gateway.trace.model import JudgeVerdict, WarnedCall
from gateway.wire import codec  # records hold client text: lone surrogates go out as escapes

# A run whose warnings keep being ignored is ended long before this; the cap only bounds memory.
MAX_WARNED_PER_SESSION = 32


@dataclass(frozen=True, slots=True)
class VetoRecord:
    anchor_len: int  # number of client messages in the prefix the exchange follows
    anchor_hash: str  # prefix_hash() of those messages
    messages: tuple[dict[str, Any], ...]  # the wire messages to show: the call, then our observation
    # Keys whose values are ids the model made up, in these messages (the adapter's
    # ``Declaration.id_fields``): left out of ``identity``. Not stored: only new records need it.
    ids: frozenset[str] = field(default=frozenset({"id"}), compare=False)

    def dumps(self) -> bytes:
        return codec.dumps({"n": self.anchor_len, "h": self.anchor_hash, "m": self.messages, "k": self.identity})

    @property
    def identity(self) -> str:
        """Equal for the same refusal at the same point of the same history, whatever ids the
        model gave the call: parallel requests of one session veto the same call, and the
        stores keep it once (every copy would be shown to the model again)."""
        plain = codec.dumps([self.anchor_len, self.anchor_hash, _without_ids(self.messages, self.ids)])
        return hashlib.blake2b(plain, digest_size=16).hexdigest()

    @classmethod
    def loads(cls, raw: bytes | str) -> VetoRecord:
        data = codec.loads(raw)
        return cls(int(data["n"]), str(data["h"]), tuple(data["m"]))


def _without_ids(value: Any, ids: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v, ids) for k, v in value.items() if k not in ids}
    if isinstance(value, (list, tuple)):
        return [_without_ids(v, ids) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class HistoryMark:
    """Where a session's history stood at a request: its client message count and the prefix
    hash over those messages (``gateway.guard.prefix``)."""

    length: int
    digest: str

    def dumps(self) -> bytes:
        return orjson.dumps([self.length, self.digest])

    @classmethod
    def loads(cls, raw: bytes | str) -> HistoryMark:
        length, digest = orjson.loads(raw)
        return cls(int(length), str(digest))


@dataclass(frozen=True, slots=True)
class ChainRecord:
    """One stored response as the upstream holds it: the conversation up to and including its
    output (newest items, bounded by the adapter), and the tool outputs the gateway owes the
    upstream for calls it proposed there but the client never saw."""

    items: tuple[Any, ...]
    owed: tuple[Any, ...] = ()
    # The upstream's own id for this response when the client knows it by another (a re-ask
    # continued the client's stream, which keeps its first response id): later requests name
    # the client's id, the upstream must get its own.
    upstream_id: str | None = None
    # Request fields the upstream keeps with the conversation and later requests leave out
    # (an Anthropic thread's ``system`` and ``tools``): what a request sending the whole
    # conversation again must carry.
    fields: dict[str, Any] | None = None

    def dumps(self) -> bytes:
        # Items bounded in bytes (``state.bounds``); owed outputs are sent upstream, so kept whole.
        data: dict[str, Any] = {"i": bounded(self.items, CHAIN_TEXT_CHARS), "o": self.owed, "u": self.upstream_id}
        if self.fields is not None:
            data["f"] = self.fields
        return codec.dumps(data)

    @classmethod
    def loads(cls, raw: bytes | str) -> ChainRecord:
        data = codec.loads(raw)
        upstream, fields = data.get("u"), data.get("f")
        return cls(
            tuple(data["i"]),
            tuple(data.get("o", ())),
            upstream if isinstance(upstream, str) else None,
            fields if isinstance(fields, dict) else None,
        )


# An ownership claim (``gateway.state.claims``), as stored: an empty chain record, so a claim
# reads like any record under its key (replicas of older versions read claims this way).
CLAIM = ChainRecord(()).dumps()


@dataclass(frozen=True, slots=True)
class SessionState:
    """Everything a request reads, fetched in one round trip."""

    vetoes: tuple[VetoRecord, ...] = ()
    mark: HistoryMark | None = None  # the session's previous request
    compacted: HistoryMark | None = None  # the request whose history was compacted, if any
    warned: tuple[WarnedCall, ...] = ()  # calls warned about, oldest first
    verdict: JudgeVerdict | None = None  # the model judge's latest verdict (opt-in llm_judge)


def dump_warned(warned: WarnedCall) -> bytes:
    return codec.dumps([warned.call_id, warned.detector])


def load_warned(raw: bytes | str) -> WarnedCall:
    call_id, detector = codec.loads(raw)
    return WarnedCall(str(call_id), str(detector))


def dump_verdict(verdict: JudgeVerdict) -> bytes:
    return codec.dumps(
        [verdict.call_id, verdict.looping, verdict.confidence, verdict.reason, verdict.streak, verdict.next_round]
    )


def load_verdict(raw: bytes | str) -> JudgeVerdict:
    call_id, looping, confidence, reason, streak, next_round = codec.loads(raw)
    return JudgeVerdict(str(call_id), bool(looping), float(confidence), str(reason), int(streak), int(next_round))


EMPTY = SessionState()
MAX_LABELS = 10_000  # run labels kept (operators label by hand: a bound, never reached)


class StateStore(Protocol):
    """Reads answer EMPTY / [] when the session is unknown or the backend is unavailable; writes
    are best effort. Neither raises. ``degradations`` counts operations the backend could not
    serve; ``evictions`` counts sessions dropped to stay within bounds (0 where the backend
    bounds itself, e.g. Redis TTLs)."""

    degradations: int
    evictions: int

    async def session_state(self, session: str, mark: HistoryMark | None = None) -> SessionState:
        """The session's vetoed exchanges (oldest first), previous history mark and compaction
        marker; ``mark`` (where this request stands) replaces the previous mark in the same
        round trip, so a request costs one."""
        ...

    async def vetoes(self, session: str) -> list[VetoRecord]: ...

    async def add_veto(self, session: str, record: VetoRecord) -> None: ...

    def mark_compacted(self, session: str, mark: HistoryMark | None) -> None:
        """Set (or clear, with None) the compaction marker without waiting: fire and forget,
        off the request's path. Rare: only when a compaction starts or stops applying."""
        ...

    def add_warned(self, session: str, warned: WarnedCall) -> None:
        """Remember a call the model was warned about without waiting (fire and forget, off the
        request's path); the newest MAX_WARNED_PER_SESSION are kept."""
        ...

    def save_verdict(self, session: str, verdict: JudgeVerdict) -> None:
        """Keep the model judge's latest verdict on the session (replacing the previous one),
        without waiting: the judge runs off the request's path, its verdict is read by the
        session's next request."""
        ...

    def end_run(self, session: str) -> None:
        """Forget the session's vetoed exchanges and warned calls without waiting (fire and
        forget): they belong to a run that is over. Only fingerprint sessions call it, when a request starts a new
        run of the same task (``gateway.guard.planner``): that run must not inherit them."""
        ...

    async def ping(self) -> bool:
        """Whether the backend answers now (for /readyz): cheap, bounded by the store's own
        operation timeout, never raises, and not counted as a degradation."""
        ...

    async def response_chain(self, key: str) -> ChainRecord | None:
        """The record saved under ``key`` (a response id within its client's namespace, as the
        adapter builds it); None when unknown, expired or unavailable."""
        ...

    async def save_response_chain(self, key: str, record: ChainRecord) -> None:
        """Keep ``record`` under ``key`` (TTL-bounded like sessions; best effort)."""
        ...

    async def claimed(self, key: str) -> bool | None:
        """Whether a claim (``gateway.state.claims``) is kept under ``key``; None when the
        backend cannot tell now: unknown and unavailable are not the same answer."""
        ...

    async def save_claim(self, key: str) -> None:
        """Keep a claim under ``key`` (like a chain record: TTL and byte budget). A backend that
        cannot be reached now keeps it to write once it can, and answers ``claimed`` for it
        meanwhile: an object created during an outage stays its creator's."""
        ...

    # The operator console's recent events (``gateway.state.events``): never on a request's
    # path, bounded in count (``keep``) and bytes, shared by replicas where the backend is.

    async def add_event(self, entry: bytes, detail: bytes | None = None, keep: int = 1000) -> None:
        """Append ``entry`` (and its ``detail``), keeping the newest ``keep``; best effort."""
        ...

    async def recent_events(self, count: int, after: str = "") -> list[LoggedEvent]:
        """The newest ``count`` entries, newest first; with ``after`` (a ``LoggedEvent.id``) only
        those newer than it (a cursor: a poll reads what is new); [] when unavailable."""
        ...

    async def event_detail(self, ref: str) -> bytes | None:
        """The detail ``LoggedEvent.detail`` names; None when dropped or unavailable."""
        ...

    async def revoke_console_session(self, ref: str, ttl_s: float) -> None:
        """Remember for ``ttl_s`` that the console sign-in ``ref`` was ended (signed out)."""
        ...

    async def console_session_revoked(self, ref: str) -> bool:
        """Whether ``ref`` was signed out; True when the store cannot say (refused, not trusted)."""
        ...

    async def save_label(self, run: str, entry: bytes) -> None:
        """Keep an operator's label for the console run ``run`` (replacing its earlier one), at
        most ``MAX_LABELS`` of them; best effort."""
        ...

    async def labels(self) -> dict[str, bytes]:
        """Every run label kept, by run; {} when unavailable."""
        ...

    async def aclose(self) -> None: ...
