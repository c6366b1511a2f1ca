"""Hot reload: a valid edit is picked up without a restart, an invalid one keeps the old policy."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from policy_fakes import REGISTRY, policy_text
from structlog.testing import capture_logs

from gateway.policy import PolicyError, PolicyHolder, shipped_policy_path
from gateway.policy.loader import SHIPPED_DIRS


def edit(path: Path, body: str) -> None:
    """Rewrite and bump the mtime, so the change is seen even within one clock tick."""
    before = path.stat().st_mtime_ns
    path.write_text(policy_text(body), encoding="utf-8")
    os.utime(path, ns=(before + 10_000_000, before + 10_000_000))


@pytest.fixture
def holder(write_policy):
    return PolicyHolder(write_policy("mode: enforce\n"), REGISTRY)


def test_unchanged_file_is_not_reloaded(holder):
    first = holder.current
    assert holder.reload_if_changed() is False and holder.current is first


def test_valid_edit_is_picked_up(holder):
    edit(holder.path, "mode: shadow\n")
    with capture_logs() as logs:
        assert holder.reload_if_changed() is True
    assert holder.current.resolve().mode == "shadow"
    assert holder.reloads == 1
    assert [e["event"] for e in logs] == ["policy.reloaded"]


def test_invalid_edit_keeps_the_old_policy_and_logs_file_and_reason(holder):
    old = holder.current
    edit(holder.path, "mode: loud\n")
    with capture_logs() as logs:
        assert holder.reload_if_changed() is False
    assert holder.current is old
    (event,) = logs
    assert event["event"] == "policy.reload_rejected" and event["log_level"] == "error"
    assert event["file"] == str(holder.path)
    assert f"{holder.path}: mode: Input should be 'enforce' or 'shadow'" in event["reason"]
    assert holder.reload_errors == 1 and "mode" in holder.last_error
    # reported once, not on every check
    assert holder.reload_if_changed() is False and holder.reload_errors == 1
    # and a fixed file is picked up again
    edit(holder.path, "mode: shadow\n")
    assert holder.reload_if_changed() is True and holder.last_error is None


def test_yaml_syntax_error_keeps_the_old_policy(holder):
    old = holder.current
    holder.path.write_text("version: 1\nmode: [shadow\n", encoding="utf-8")
    assert holder.reload_if_changed() is False and holder.current is old
    assert "line 3" in holder.last_error


def test_deleted_file_keeps_the_old_policy(holder):
    old = holder.current
    holder.path.unlink()
    assert holder.reload_if_changed() is False and holder.current is old
    assert "not found" in holder.last_error


def test_replacing_by_rename_is_seen(holder, tmp_path):
    new = tmp_path / "new.yaml"
    new.write_text(policy_text("max_action: warn\n"), encoding="utf-8")
    os.replace(new, holder.path)  # what editors and ConfigMap updates do
    assert holder.reload_if_changed() is True
    assert holder.current.resolve().max_action.label == "warn"


def test_a_failing_listener_does_not_undo_the_reload(write_policy):
    def listener(policy):
        raise RuntimeError("metrics down")

    holder = PolicyHolder(write_policy(""), REGISTRY, on_reload=listener)
    edit(holder.path, "mode: shadow\n")
    assert holder.reload_if_changed() is True and holder.current.resolve().shadow


def test_startup_with_a_bad_file_raises(write_policy):
    with pytest.raises(PolicyError, match="mode"):
        PolicyHolder(write_policy("mode: loud\n"), REGISTRY)


def test_shipped_policy_path_prefers_the_package_folder():
    assert SHIPPED_DIRS[0].parent.name == "gateway" and SHIPPED_DIRS[1].name == "policies"
    path = shipped_policy_path()
    assert path.name == "default.yaml" and path.is_file()
    assert shipped_policy_path("strict.yaml").name == "strict.yaml"
    with pytest.raises(FileNotFoundError):
        shipped_policy_path("nope")
    with pytest.raises(ValueError):
        shipped_policy_path("../etc/passwd")


async def _until(predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_watch_reloads_on_change_and_stops_on_cancel(holder):
    task = asyncio.create_task(holder.watch(poll_interval=0.5, debounce_ms=20))
    await asyncio.sleep(0.3)  # let the watcher start
    edit(holder.path, "mode: loud\n")  # invalid first: kept, logged
    await _until(lambda: holder.reload_errors == 1)
    assert holder.current.resolve().mode == "enforce"
    edit(holder.path, "mode: shadow\n")
    await _until(lambda: holder.current.resolve().mode == "shadow")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=3)


async def test_watch_survives_its_folder_disappearing(tmp_path):
    folder = tmp_path / "conf"
    folder.mkdir()
    path = folder / "p.yaml"
    path.write_text(policy_text(""), encoding="utf-8")
    holder = PolicyHolder(path, REGISTRY)
    task = asyncio.create_task(holder.watch(poll_interval=0.2, debounce_ms=20))
    await asyncio.sleep(0.3)
    path.unlink()
    folder.rmdir()
    await asyncio.sleep(0.6)
    assert not task.done()  # still running: it falls back to polling
    folder.mkdir()
    path.write_text(policy_text("mode: shadow\n"), encoding="utf-8")
    await _until(lambda: holder.current.resolve().shadow)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=3)


async def test_watch_loads_a_file_only_once_it_has_settled(holder):
    """A file written in pieces: the half written state (here it still parses) is never loaded."""
    loaded = []
    holder._on_reload = loaded.append
    task = asyncio.create_task(holder.watch(poll_interval=0.5, debounce_ms=20, settle_s=0.6))
    await asyncio.sleep(0.3)
    edit(holder.path, "mode: shadow\n")  # the first piece of the write
    await asyncio.sleep(0.2)  # less than the settle time
    edit(holder.path, "mode: enforce\n# the rest of the file\n")
    await _until(lambda: holder.reloads == 1)
    assert [p.resolve().mode for p in loaded] == ["enforce"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=3)


async def test_watch_stops_promptly_even_while_polling(holder, monkeypatch):
    """Without change notification (the folder gone, or watchfiles missing) the watcher polls;
    shutting down must not wait out a poll interval."""
    import builtins

    real_import = builtins.__import__

    def no_watchfiles(name, *args, **kwargs):
        if name == "watchfiles":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_watchfiles)
    task = asyncio.create_task(holder.watch(poll_interval=30, debounce_ms=20))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=3)  # a poll interval is 30 s
