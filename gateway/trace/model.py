"""The canonical trace: the only view of a conversation that detectors ever read.

Protocol adapters (``gateway.protocols.*``) turn wire formats into a :class:`Conversation`;
``gateway.trace.builder`` turns a conversation into a :class:`Trace` of :class:`ToolEvent`.
Everything here is frozen so a trace can be shared, cached and replayed deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import TYPE_CHECKING

from gateway.trace.remote import endpoint

if TYPE_CHECKING:
    from gateway.trace.fleet import FleetFacts

# Every error observation the gateway writes in place of a vetoed call starts with this marker
# (it equals ``gateway.policy.actions.REJECT_MARKER``; defined here too because the policy package
# imports this module). The trace builder marks such results ``vetoed``: the model insisting on a
# call counts as a repeat, but our own observation is never taken for the tool's result (never
# "progress"), and a user message carrying it is not a genuine user turn.
VETO_MARKER = "[loopguard]"
# Every text the gateway adds to a conversation (warnings, re-ask notes, vetoes) starts with this,
# in any letter case ("[LoopGuard] ...", "[LoopGuard 循环告警] ..."). The trace builder removes such
# text from tool results (a warning appended to the last result with ``placement: tool_result``)
# and never takes a user message starting with it for the user's own words, so the gateway's
# own text can never make a repeated call look new.
OWN_TEXT_MARKER = "[loopguard"


# --- protocol-neutral conversation (what adapters produce) -----------------------------------


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model issued it. ``arguments`` is the raw text, valid JSON or not."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One message in protocol-neutral form.

    ``role`` is one of system | user | assistant | tool. Legacy ``role: function`` results and
    Anthropic ``tool_result`` blocks become ``tool`` turns; ``index`` is the position of the
    originating message in the request so interventions can point back at it.
    """

    index: int
    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # tool turns: the call this result answers
    name: str | None = None  # tool turns: tool name when the protocol carries it
    is_error: bool | None = None  # tool turns: explicit error flag from the protocol


@dataclass(frozen=True, slots=True)
class Conversation:
    turns: tuple[Turn, ...]
    tools: frozenset[str] | None = None  # declared tool names; None when none are declared


# --- the trace (what detectors read) ---------------------------------------------------------


class Status(StrEnum):
    OK = "ok"
    ERROR = "error"
    MISSING = "missing"  # no result (yet): proposed calls, or a result the agent never sent
    UNKNOWN_TOOL = "unknown_tool"


@dataclass(frozen=True, slots=True)
class ToolEvent:
    step: int  # 1-based position among the tool events in scope
    round: int  # 1-based index of the assistant turn (model-tool round trip) that issued it
    call_id: str
    tool: str
    raw_args: str
    args: str  # canonical arguments: sorted-key JSON without ignored keys, or the raw text
    args_hash: str
    result: str | None
    result_hash: str | None  # hash of the normalized result; None when there is no result
    status: Status
    declared: bool | None  # None when the request declares no tools
    message_index: int = -1  # index of the assistant message that issued the call
    vetoed: bool = False  # the gateway rejected this call; its result is our error observation
    proposed: bool = False  # proposed in the response being judged, not executed yet
    polling: bool = False  # a polling call (TraceSettings.polling_*): repeats by design
    # Carries no information for a loop: a think/plan/log/todo tool by name
    # (TraceSettings.neutral_tools). Detectors step over it; it never resets a count.
    neutral: bool = False
    # Probably carries none, judged by shape (free text in, a trivial or echoed result out): a
    # delegated action answered "Done." looks the same, so stepping over it keeps counting but
    # only up to a warning (see detectors.common.chain).
    neutral_guess: bool = False
    # Looks read-only by its name (read/get/list/search ...) or its shell command (cat, ls,
    # grep ...): stepping over a new one between repeats keeps counting, but only up to a
    # warning (see detectors.common.chain).
    observation: bool = False
    user_turn: int = 0  # genuine user messages before the call: which user turn issued it
    request_text: str = ""  # the free text of the arguments (e.g. a sub-agent's task), or ""
    # What the call acts on: a file, a URL, a query, an element, a command's head
    # (gateway/trace/target.py); "" when its arguments name nothing.
    target: str = ""
    # A failed call's refusal without the attempt it echoes (gateway/trace/failure.py), hashed:
    # two refusals of the same kind compare equal whatever each attempt was. None unless failed.
    failure_hash: str | None = None
    # The same failure with only its places folded (line and column numbers, not its other
    # numbers: failure.py): equal before and after a fix, the fix made no difference.
    failure_key: str | None = None
    # What the call does, from the agent's profile (gateway/agents) or its shell command:
    # read | edit | write | shell | search | list | fetch | poll | wait | delegate | plan |
    # finish, or "" when unknown (a generic client's tool with no profile).
    action: str = ""
    # The call waits before it acts (`sleep 30 && tail log`, or a sleep call just before it): a
    # paced poll, which may repeat by design; an unpaced one is a busy loop.
    paced: bool = False
    # The file it reads, writes, lists or searches, whichever tool or program (gateway/trace/
    # paths.py): absolute when the agent stated its working directory, else as spelled; "" when
    # it names none. Compare with paths.same_file: a relative spelling matches by suffix.
    file: str = ""

    @property
    def remote(self) -> str | None:
        """None for the agent's own work (its shell, file reads and edits); for a call to a
        remote tool (MCP, fetch, an application's API), the server or host it names, or ""
        (gateway/trace/remote.py)."""
        return endpoint(self.tool, self.action, self.target)


@dataclass(frozen=True, slots=True)
class WarnedCall:
    """A call the gateway warned the model about: the latest call of the pattern a finding named
    when its warning went out (``call_id``), and that finding's detector."""

    call_id: str
    detector: str


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """What the optional model judge answered about a run, asked off the request's path and
    applied from the session's next request on (``gateway.judge``; the llm_judge detector)."""

    call_id: str  # the run's latest call when it was judged: the verdict belongs to that run
    looping: bool
    confidence: float  # 0..1, the judge's own
    reason: str  # the judge's one-line analysis, shown to the model in the warning
    streak: int  # looping verdicts in a row, this one included; 0 when not looping
    next_round: int  # the run round from which the judge may be asked again (adaptive interval)


@dataclass(frozen=True, slots=True)
class Trace:
    events: tuple[ToolEvent, ...]
    turns: tuple[Turn, ...]  # the whole conversation, for text-based detectors
    run_start: int  # index in ``turns`` of the first turn of the scope (after the last user turn)
    rounds: int  # model-tool round trips in scope
    declared_tools: frozenset[str] | None = None
    # Events in scope older than TraceSettings.horizon are counted but not materialized: detectors
    # look at bounded windows, so per-request cost and memory stay bounded by the horizon.
    skipped: int = 0
    # Set by the request path when the session's history was compacted (it got shorter instead
    # of growing): the message index where the post-compaction history begins. Tool events at
    # or after it are the calls the agent made since; the post_compaction detector reads it.
    compacted_at: int | None = None
    # With ``scope: run``: the latest tool events of earlier user turns of the same conversation
    # (TraceSettings.prior_horizon of them, negative steps), for evidence across user turns.
    prior: tuple[ToolEvent, ...] = ()
    # Set by the request path from the session's state: the calls whose pattern a warning that
    # reached the model was about (earlier requests of the run, or this one). The anchor is only
    # in what the gateway forwarded, never in the client's history, so it is remembered; the
    # ignored_warning detector reads it.
    warned: tuple[WarnedCall, ...] = ()
    # Set by the request path from the session's state: the model judge's latest verdict on
    # this session, if any (the llm_judge detector checks it belongs to this run).
    verdict: JudgeVerdict | None = None
    # Set by the request path from the fleet's shared state (gateway/fleet): remote tools down
    # for the tenant, loops an earlier run of the agent was stopped for. None: not asked.
    fleet: FleetFacts | None = None
    # The working directory the agent states (TraceSettings.cwd_patterns), "" when none: what
    # relative paths of its calls are resolved against (ToolEvent.file).
    cwd: str = ""
    # Derived, never part of the value: where each call and each tool last occurred before the
    # latest event (``repeats``). The trace builder hands it over, grown from the conversation's
    # previous request; a trace made otherwise makes its own on first use.
    _seen: CallIndex | None = field(default=None, init=False, repr=False, compare=False)
    # Derived from ``_seen`` on first use: the step at which the latest event's call and its tool
    # last occurred before it (None: never). Every detector asks with its own window; the index
    # is read once.
    _last: tuple[int | None, int | None] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def total_events(self) -> int:
        """Tool events in scope, including the ``skipped`` ones before the horizon."""
        return self.skipped + len(self.events)

    @property
    def latest(self) -> ToolEvent | None:
        return self.events[-1] if self.events else None

    def with_events(self, extra: tuple[ToolEvent, ...]) -> Trace:
        """This trace with proposed events appended (the response path judges them this way)."""
        trace = self._with(self.events + extra, self.rounds + (1 if extra else 0))
        if self._seen is not None:  # only the extra is new
            trace.indexed(self._seen.extended(self.events[-1:] + extra[:-1]) if extra else self._seen)
        return trace

    def ending_at(self, position: int) -> Trace:
        """This trace as if ``events[position]`` were its latest call (one of the latest round's
        calls, judged on its own: the calls of a round were chosen together, so a call beside
        it is no call before it)."""
        return self._with(self.events[: position + 1], self.rounds)

    def _with(self, events: tuple[ToolEvent, ...], rounds: int) -> Trace:
        # Built field by field: dataclasses.replace inspects the fields on every call, and the
        # response path calls this for every proposed call.
        return Trace(
            events,
            self.turns,
            self.run_start,
            rounds,
            self.declared_tools,
            self.skipped,
            self.compacted_at,
            self.prior,
            self.warned,
            self.verdict,
            self.fleet,
            self.cwd,
        )

    def round_mates(self) -> tuple[int, ...]:
        """The positions of the latest round's other executed calls, latest first: each may
        continue a loop the round's last call does not."""
        events = self.events
        if len(events) < 2 or events[-1].proposed or events[-2].round != events[-1].round:
            return ()
        last = events[-1].round
        out = []
        for position in range(len(events) - 2, -1, -1):
            if events[position].round != last:
                break
            out.append(position)
        return tuple(out)

    def indexed(self, index: CallIndex) -> Trace:
        """This trace, given the index of its events before the latest (see ``_seen``)."""
        object.__setattr__(self, "_seen", index)
        object.__setattr__(self, "_last", None)
        return self

    def repeats(self, size: int, *, tool_only: bool = False) -> bool:
        """Whether the latest event's call (same tool, same canonical arguments; with
        ``tool_only``, the same tool) occurs earlier among the latest ``size`` events. Most
        detectors need that before anything else, and a healthy run's latest call is nearly
        always new: one look-up each, in the trace's call index (``_seen``)."""
        events = self.events
        count = len(events)
        if count < 2:
            return False
        last = self._last
        if last is None:
            seen = self._seen
            if seen is None:
                seen = CallIndex.of(events[:-1])
                object.__setattr__(self, "_seen", seen)
            latest = events[-1]
            last = (seen.call((latest.tool, latest.args_hash)), seen.tool(latest.tool))
            object.__setattr__(self, "_last", last)
        step = last[1] if tool_only else last[0]
        return step is not None and step >= events[max(0, count - size)].step


_CALL = attrgetter("tool", "args_hash")
_TOOL = attrgetter("tool")
_STEP = attrgetter("step")
# Layers an index may have before it is made one again (each request of a conversation adds one).
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class CallIndex:
    """The step at which each call (tool, canonical arguments) and each tool last occurred
    among some events. ``earlier``: the same for the events before them, so a longer trace
    (the next request of the conversation, a proposal) adds its new events only and leaves
    the older ones untouched: what a request costs is mostly the memory it touches."""

    calls: dict[tuple[str, str], int]
    tools: dict[str, int]
    earlier: CallIndex | None = None
    depth: int = 0

    @classmethod
    def of(cls, events: tuple[ToolEvent, ...], earlier: CallIndex | None = None) -> CallIndex:
        # dict() keeps the last step of a repeated key; built at C speed.
        steps = tuple(map(_STEP, events))
        return cls(
            dict(zip(map(_CALL, events), steps)),
            dict(zip(map(_TOOL, events), steps)),
            earlier,
            0 if earlier is None else earlier.depth + 1,
        )

    def extended(self, events: tuple[ToolEvent, ...], since: int | None = None) -> CallIndex:
        """This index followed by ``events``. Past ``_MAX_DEPTH`` layers, one layer again,
        without the steps before ``since`` (events no window can reach any more)."""
        if not events:
            return self
        index = CallIndex.of(events, self)
        return index.flattened(since) if index.depth > _MAX_DEPTH and since is not None else index

    def flattened(self, since: int) -> CallIndex:
        layers: list[CallIndex] = []
        layer: CallIndex | None = self
        while layer is not None:
            layers.append(layer)
            layer = layer.earlier
        calls: dict[tuple[str, str], int] = {}
        tools: dict[str, int] = {}
        for layer in reversed(layers):  # oldest first: newer steps win
            calls.update(layer.calls)
            tools.update(layer.tools)
        return CallIndex({k: s for k, s in calls.items() if s >= since}, {k: s for k, s in tools.items() if s >= since})

    def call(self, key: tuple[str, str]) -> int | None:
        step = self.calls.get(key)
        return step if step is not None or self.earlier is None else self.earlier.call(key)

    def tool(self, name: str) -> int | None:
        step = self.tools.get(name)
        return step if step is not None or self.earlier is None else self.earlier.tool(name)
