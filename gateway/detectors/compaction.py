"""post_compaction: the same loop, continued right after the agent compacted its context.

The post-compaction guard (OpenClaw's postCompactionGuard): context overflow -> compaction -> the
same loop again burns tokens without end, so after a compaction the next ``window`` tool calls
are watched, and the same (tool, args hash, result hash) ``window`` times in them ends the run with
``compaction_loop_persisted``: the compaction did not break the loop. It never fires while the
results keep changing, and only right after a compaction (``Trace.compacted_at``, set by the
request path from the session's history marks), never elsewhere in a run.

It terminates: ``terminate_at`` follows ``window`` unless set (a lower window is stricter, a
higher one gives the agent more attempts to recover). It is on unless disabled itself or by
the policy's master switch ``enabled: false`` (the guard stays on when the switch is
unset, even where every other detector is off).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import comparable, rounds, steps_of
from gateway.trace.model import Trace

NAME = "post_compaction"
REASON = "compaction_loop_persisted"


class PostCompactionSettings(DetectorSettings):
    warn_at: int | None = None
    reject_at: int | None = None
    terminate_at: int | None = 3  # follows window unless set
    window: int = Field(default=3, ge=2)  # OpenClaw postCompactionGuard.windowSize

    @model_validator(mode="before")
    @classmethod
    def _terminate_follows_window(cls, data: Any) -> Any:
        if isinstance(data, dict) and "terminate_at" not in data and "window" in data:
            return {**data, "terminate_at": data["window"]}
        return data


def detect(trace: Trace, settings: PostCompactionSettings) -> Finding | None:
    start = trace.compacted_at
    latest = trace.latest
    if start is None or latest is None or (result := comparable(latest)) is None:
        return None
    # The calls the agent made since the compaction (executed ones: a proposal has no result
    # yet, a vetoed call's result is our observation). Only the first ``window`` are watched.
    after = [e for e in trace.events if e.message_index >= start and comparable(e) is not None]
    if not after or after[-1] is not latest or len(after) > settings.window:
        return None
    same = [e for e in after if e.tool == latest.tool and e.args_hash == latest.args_hash and e.result_hash == result]
    count = rounds(same)
    if count < 2:
        return None
    return Finding(
        NAME,
        count,
        steps_of(same),
        (latest.tool,),
        f"{REASON}: `{latest.tool}` was called {count} times with the same arguments "
        f"and the same result in the first {len(after)} calls after the context was "
        "compacted, so the compaction did not break the loop",
    )
