"""The running policy, swapped atomically when its file changes on disk.

An invalid edit never replaces a working policy: it is logged (file and reason) and the old one
keeps running, so an operator's typo cannot switch loop protection off or break traffic.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

from structlog import get_logger as _log

from gateway.policy.engine import Registry
from gateway.policy.loader import load_policy, shipped_policy_path
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError

Stamp = tuple[int, int, int] | None


class PolicyHolder:
    def __init__(self, path: str | Path | None = None, registry: Registry | None = None, *,
                 on_reload: Callable[[Policy], None] | None = None) -> None:
        """Load ``path`` (the shipped default pack when None). A bad file raises PolicyError
        here: at startup failing loudly is right, there is no previous policy to keep."""
        self.path = Path(path) if path is not None else shipped_policy_path()
        self._registry = registry
        self._on_reload = on_reload
        self._stamp = _stamp(self.path)
        self._policy = load_policy(self.path, registry)
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
        except Exception as exc:  # noqa: BLE001 - e.g. a detector settings bug: keep running
            _log(__name__).exception("policy.reload_crashed", file=str(self.path))
            return self._reject(f"{self.path}: {type(exc).__name__}: {exc}")
        self._policy = policy
        self.reloads += 1
        self.last_error = None
        _log(__name__).info("policy.reloaded", file=str(self.path), policy=policy.name)
        if self._on_reload is not None:
            try:
                self._on_reload(policy)
            except Exception:  # noqa: BLE001 - a listener must not undo a good reload
                _log(__name__).exception("policy.on_reload_failed", file=str(self.path))
        return True

    async def watch(self, *, poll_interval: float = 5.0, debounce_ms: int = 200) -> None:
        """Reload on every change until cancelled; meant for the app's lifespan task.

        Watches the file's folder (a rename-replaced file or a ConfigMap symlink swap is not an
        event on the old file) and also re-checks every ``poll_interval`` seconds, for
        filesystems without change notification. Never raises except on cancellation.
        """
        stop = threading.Event()  # read by the watcher thread, so cancelling is prompt
        inner = asyncio.ensure_future(self._watch_forever(stop, poll_interval, debounce_ms))
        try:
            await asyncio.shield(inner)
        finally:
            stop.set()
            if not inner.done():
                await asyncio.wait([inner], timeout=2 * poll_interval)
            if not inner.done():
                inner.cancel()

    async def _watch_forever(self, stop: threading.Event, poll_interval: float,
                             debounce_ms: int) -> None:
        while not stop.is_set():
            try:
                from watchfiles import awatch

                async for _ in awatch(self.path.parent, watch_filter=None, debounce=debounce_ms,
                                      rust_timeout=int(poll_interval * 1000), yield_on_timeout=True,
                                      recursive=False, stop_event=stop):
                    self.reload_if_changed()
            except Exception:  # noqa: BLE001 - e.g. the folder vanished: poll until it is back
                _log(__name__).exception("policy.watch_failed", file=str(self.path))
                await asyncio.sleep(poll_interval)
                self.reload_if_changed()

    def _reject(self, reason: str) -> bool:
        self.reload_errors += 1
        self.last_error = reason
        _log(__name__).error("policy.reload_rejected", file=str(self.path), reason=reason,
                   kept=self._policy.name)
        return False


def _stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
