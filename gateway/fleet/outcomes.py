"""What a request tells the fleet, read from its trace: the results of remote tools it carries
for the first time, the remote tools that failed earlier in its run, and who the run belongs to.

A request carries the whole conversation, so only the latest round's results are new: the calls
of the model's last turn, answered by this request. Noted again when a client resends the same
request, which changes nothing: a session counts once per entry.
"""

from __future__ import annotations

import hashlib

from gateway.state.fleet import SAMPLE_CHARS, Outcome
from gateway.state.session import fingerprint
from gateway.trace.model import Conversation, Status, Trace
from gateway.trace.normalize import normalize_result
from gateway.trace.settings import TraceSettings


def outcomes(trace: Trace, settings: TraceSettings) -> tuple[Outcome, ...]:
    """The latest round's results of remote tools, in call order (a success or a failure with
    its shape and its text, volatile parts scrubbed)."""
    events = trace.events
    if not events:
        return ()
    last = events[-1].round
    found: list[Outcome] = []
    for event in reversed(events):
        if event.round != last:
            break
        if event.proposed or event.vetoed or event.result is None or event.status is Status.MISSING:
            continue
        endpoint = event.remote
        if endpoint is None:
            continue
        if event.status is Status.ERROR:
            sample = " ".join(normalize_result(event.result, settings).split())[:SAMPLE_CHARS]
            found.append(Outcome(event.tool, endpoint, False, event.failure_hash or "", sample))
        elif event.status is Status.OK:
            found.append(Outcome(event.tool, endpoint, True))
    return tuple(reversed(found))


def watched(trace: Trace, fresh: tuple[Outcome, ...]) -> tuple[tuple[str, str], ...]:
    """Remote tools that failed earlier in the run (besides ``fresh``'s): whether they are down
    decides a retry the model may propose now."""
    seen = {(o.tool, o.endpoint) for o in fresh}
    found: dict[tuple[str, str], None] = {}
    for event in trace.events:
        if event.status is not Status.ERROR or event.vetoed or event.proposed:
            continue
        endpoint = event.remote
        if endpoint is not None and (event.tool, endpoint) not in seen:
            found[event.tool, endpoint] = None
    return tuple(found)


def repeats(trace: Trace) -> bool:
    """The latest call repeats one of its run (the same call, or the same failure of the same
    tool): only then can it be a loop an earlier run was stopped for."""
    latest = trace.latest
    if latest is None or latest.proposed:
        return False
    if trace.repeats(len(trace.events)):
        return True
    shape = latest.failure_hash
    return shape is not None and any(e.failure_hash == shape and e.tool == latest.tool for e in trace.events[:-1])


def agent_key(namespace: str, agent: str, conv: Conversation, memo: dict[str, object] | None) -> str:
    """The run's agent across its sessions: the client's namespace, its ``x-loopguard-agent``
    header and how its conversation opens (system prompt, first user message, tools)."""
    opening = fingerprint(conv, memo)
    digest = hashlib.blake2b(f"{agent}\0{opening}".encode("utf-8", "replace"), digest_size=12).hexdigest()
    return namespace + digest
