"""The running policy, swapped atomically when its file changes on disk.

An invalid edit never replaces a working policy: it is logged (file and reason) and the old one
keeps running, so an operator's typo cannot switch loop protection off or break traffic.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from structlog import get_logger as _log

from gateway.policy.engine import Registry
from gateway.policy.loader import load_policy, shipped_policy_path
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError

Stamp = tuple[int, int, int] | None
SETTLE_S = 0.5  # how long a changed policy file must stay unchanged before it is loaded


class PolicyHolder:
    def __init__(
        self,
        path: str | Path | None = None,
        registry: Registry | None = None,
        *,
        on_reload: Callable[[Policy], None] | None = None,
    ) -> None:
        """Load ``path`` (the shipped default pack when None). A bad file raises PolicyError
        here: at startup failing loudly is right, there is no previous policy to keep."""
        self.path = Path(path) if path is not None else shipped_policy_path()
        self._registry = registry
        self._on_reload = on_reload
        self._stamp = _stamp(self.path)
        self._policy = load_policy(self.path, registry)
        self.loaded_at = time.time()  # when the running policy was loaded (wall clock), for the console
        self.reloads = 0  # successful reloads, for metrics
        self.reload_errors = 0  # rejected edits, for metrics and alerts
        self.last_error: str | None = None

    @property
    def current(self) -> Policy:
        return self._policy  # one attribute read: requests never see a half-swapped policy

    def reload_if_changed(self) -> bool:
        """Reload when the file's mtime, size or inode changed; True if a new policy is active.
        The inode catches editors and Kubernetes ConfigMaps that replace the file by rename."""
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp  # remembered even if invalid, so a bad edit is reported once
        if stamp is None:
            return self._reject(f"{self.path}: file not found; keeping the running policy")
        try:
            policy = load_policy(self.path, self._registry)
        except PolicyError as exc:
            return self._reject(str(exc))
        except Exception as exc:
            _log(__name__).exception("policy.reload_crashed", file=str(self.path))
            return self._reject(f"{self.path}: {type(exc).__name__}: {exc}")
        self._policy = policy
        self.loaded_at = time.time()
        self.reloads += 1
        self.last_error = None
        _log(__name__).info("policy.reloaded", file=str(self.path), policy=policy.name)
        if self._on_reload is not None:
            try:
                self._on_reload(policy)
            except Exception:
                _log(__name__).exception("policy.on_reload_failed", file=str(self.path))
        return True

    async def watch(self, *, poll_interval: float = 5.0, debounce_ms: int = 200, settle_s: float = SETTLE_S) -> None:
        """Reload on every change until cancelled; meant for the app's lifespan task.

        Watches the file's folder (a rename-replaced file or a ConfigMap symlink swap is not an
        event on the old file) and also re-checks every ``poll_interval`` seconds, for
        filesystems without change notification. A changed file is loaded only once it has
        stayed unchanged for ``settle_s``: an editor or ``cp`` writing it in pieces must not
        get a half-written file (which may still parse, e.g. cut after ``warn_at:``) loaded.
        Never raises except on cancellation, which is prompt.
        """
        stop = threading.Event()  # read by the watcher thread, so cancelling is prompt
        inner = asyncio.ensure_future(self._watch_forever(stop, poll_interval, debounce_ms, settle_s))
        try:
            await asyncio.shield(inner)
        finally:
            stop.set()
            if not inner.done():
                await asyncio.wait([inner], timeout=2.0)
            if not inner.done():
                inner.cancel()

    async def _watch_forever(
        self, stop: threading.Event, poll_interval: float, debounce_ms: int, settle_s: float
    ) -> None:
        while not stop.is_set():
            try:
                from watchfiles import awatch  # declared; imported here to keep startup light

                async for _ in awatch(
                    self.path.parent,
                    watch_filter=None,
                    debounce=debounce_ms,
                    rust_timeout=int(poll_interval * 1000),
                    yield_on_timeout=True,
                    recursive=False,
                    stop_event=stop,
                ):
                    await self._settled(stop, settle_s)
                    self.reload_if_changed()
            except Exception:
                _log(__name__).warning("policy.watch_failed", file=str(self.path), retry_s=poll_interval)
                await _wait(stop, poll_interval)
                await self._settled(stop, settle_s)
                self.reload_if_changed()

    async def _settled(self, stop: threading.Event, settle_s: float) -> None:
        """Return once the file's stamp has not changed for ``settle_s`` (at once when it is
        the loaded one)."""
        stamp = _stamp(self.path)
        while stamp != self._stamp and not stop.is_set():
            await _wait(stop, settle_s)
            now = _stamp(self.path)
            if now == stamp:
                return
            stamp = now

    def _reject(self, reason: str) -> bool:
        self.reload_errors += 1
        self.last_error = reason
        _log(__name__).error("policy.reload_rejected", file=str(self.path), reason=reason, kept=self._policy.name)
        return False


def _stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


async def _wait(stop: threading.Event, seconds: float) -> None:
    """Sleep ``seconds``, waking early (within 50 ms) when ``stop`` is set."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not stop.is_set() and loop.time() < deadline:
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))
