"""What this process knows Redis holds for its recent sessions, kept true by Redis itself.

Most requests of a session find nothing stored but the history mark their own previous request
left. Asking Redis for that every time costs a round trip on the request's path; the mirror
answers instead, as long as it can prove its copy is current:

- Redis tracks the session keys for us (client-side caching, ``CLIENT TRACKING ... BCAST``
  on the mark, veto and compaction prefixes) and pushes the name of every key any replica
  changes, or that expires, to one listening connection per process;
- a key named by such a message is forgotten here, unless the message is the echo of a write
  this process made itself (``expect``), so a process keeps what it wrote until someone else
  writes over it;
- what a read learned is kept only when no foreign change of the session arrived while the read
  was in flight, and only for sessions holding nothing but their mark (no vetoed exchange,
  compaction marker, warned call or judge verdict: those rare sessions always read Redis);
- while the listening connection is down, or before it is subscribed, nothing is trusted and
  every request reads Redis, as it would without a mirror.

Replicas therefore decide alike up to the time an invalidation takes to arrive (well under a
millisecond on a local network), far below the time an agent takes between two requests.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from gateway.state.base import HistoryMark
from gateway.state.redis_keys import parse_session_key

# Key kinds of a session: its history mark, and the rare ones a known session holds none of.
MARK, VETOES, COMPACTED, WARNED, VERDICT = "h", "v", "c", "w", "j"
TRACKED = (MARK, VETOES, COMPACTED, WARNED, VERDICT)


@dataclass(slots=True)
class Known:
    mark: HistoryMark  # the mark Redis holds for the session (the last one written)
    written_at: float  # when this process last wrote it (monotonic): its TTL was refreshed then


class Mirror:
    """Sessions known to hold only ``Known.mark`` in Redis, nothing of the other kinds."""

    def __init__(self, key_prefix: str, max_sessions: int = 10_000) -> None:
        self.key_prefix = key_prefix
        self.max_sessions = max_sessions
        self.trusted = False  # the listener is subscribed: invalidations are arriving
        self.epoch = 0  # bumped whenever the mirror is emptied (listener lost, Redis flushed)
        self.hits = 0
        self._known: OrderedDict[str, Known] = OrderedDict()
        self._echoes: dict[str, int] = {}  # session -> own mark writes whose invalidation is due
        self._reading: dict[str, int] = {}  # session -> reads in flight
        self._dirty: set[str] = set()  # sessions changed by others while a read was in flight

    def __len__(self) -> int:
        return len(self._known)

    def prefixes(self) -> list[str]:
        return [f"{self.key_prefix}{kind}:" for kind in TRACKED]

    # --- the request path ---------------------------------------------------------------------

    def known(self, session: str) -> Known | None:
        if not self.trusted:
            return None
        found = self._known.get(session)
        if found is not None:
            self._known.move_to_end(session)
            self.hits += 1
        return found

    def expect(self, session: str) -> None:
        """This process is about to write the session's mark: its invalidation is our own echo."""
        self._echoes[session] = self._echoes.get(session, 0) + 1

    def wrote(self, session: str, mark: HistoryMark, now: float) -> None:
        found = self._known.get(session)
        if found is not None:
            found.mark, found.written_at = mark, now

    def forget(self, session: str) -> None:
        """A write of ours may not have landed, or changes more than the mark: ask Redis next time."""
        self._known.pop(session, None)
        self._echoes.pop(session, None)

    def begin_read(self, session: str) -> int:
        self._reading[session] = self._reading.get(session, 0) + 1
        return self.epoch

    def end_read(self, session: str, epoch: int, learned: Known | None) -> None:
        """``learned``: the session holds only this mark (None: it holds more, keep nothing)."""
        clean = session not in self._dirty and epoch == self.epoch and self.trusted
        left = self._reading[session] - 1
        if left:
            self._reading[session] = left
        else:
            del self._reading[session]
            self._dirty.discard(session)
        if learned is None or not clean:
            self.forget(session)
            return
        self._known[session] = learned
        self._known.move_to_end(session)
        while len(self._known) > self.max_sessions:
            dropped, _ = self._known.popitem(last=False)
            self._echoes.pop(dropped, None)

    # --- the listener -------------------------------------------------------------------------

    def invalidated(self, keys: list[bytes] | None) -> None:
        """Redis says these keys changed or expired (None: everything, e.g. FLUSHDB)."""
        if keys is None:
            self.clear()
            return
        for raw in keys:
            kind, session = parse_session_key(self.key_prefix, raw.decode("utf-8", "surrogateescape"))
            if kind == MARK and self._own_echo(session):
                continue
            self._known.pop(session, None)
            if session in self._reading:
                self._dirty.add(session)

    def _own_echo(self, session: str) -> bool:
        due = self._echoes.get(session, 0)
        if not due:
            return False
        if due == 1:
            del self._echoes[session]
        else:
            self._echoes[session] = due - 1
        return True

    def subscribed(self) -> None:
        self.clear()
        self.trusted = True

    def clear(self) -> None:
        """Invalidations may have been missed: trust nothing learned before."""
        self.epoch += 1
        self._known.clear()
        self._echoes.clear()
        self._dirty.update(self._reading)

    def lost(self) -> None:
        self.clear()
        self.trusted = False
