"""Hot reload of a policy mounted from a Kubernetes ConfigMap (as a folder, no subPath).

The kubelet never edits the file: it writes a new timestamped folder, points a temporary
``..data_tmp`` symlink at it, renames that over ``..data`` and deletes the old folder. The file the
gateway reads, ``policy.yaml``, is a symlink to ``..data/policy.yaml`` that never changes itself.
These tests perform that exact swap with real symlinks.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from policy_fakes import REGISTRY, policy_text

from gateway.policy import PolicyHolder


class ConfigMapVolume:
    """A folder laid out the way the kubelet's atomic writer lays out a ConfigMap volume."""

    def __init__(self, root: Path, body: str) -> None:
        self.root, self.generation = root, 0
        root.mkdir()
        self._current = self._write(body)
        os.symlink(self._current.name, root / "..data")
        os.symlink("..data/policy.yaml", root / "policy.yaml")

    @property
    def path(self) -> Path:
        return self.root / "policy.yaml"

    def update(self, body: str) -> None:
        new = self._write(body)
        os.symlink(new.name, self.root / "..data_tmp")
        os.rename(self.root / "..data_tmp", self.root / "..data")  # the atomic swap
        shutil.rmtree(self._current)
        self._current = new

    def _write(self, body: str) -> Path:
        self.generation += 1
        folder = self.root / f"..2026_01_01_00_00_00.{self.generation:06d}"
        folder.mkdir()
        (folder / "policy.yaml").write_text(policy_text(body), encoding="utf-8")
        return folder


@pytest.fixture
def volume(tmp_path):
    return ConfigMapVolume(tmp_path / "policy", "mode: enforce\n")


def test_a_symlink_swap_is_a_change(volume):
    holder = PolicyHolder(volume.path, REGISTRY)
    assert holder.reload_if_changed() is False
    volume.update("mode: shadow\n")  # same size as before: only the inode tells them apart
    assert holder.reload_if_changed() is True
    assert holder.current.resolve().shadow
    assert holder.reload_if_changed() is False  # and it is reloaded once


def test_a_bad_update_keeps_the_running_policy_and_the_next_good_one_applies(volume):
    holder = PolicyHolder(volume.path, REGISTRY)
    volume.update("mode: loud\n")
    assert holder.reload_if_changed() is False and holder.reload_errors == 1
    assert holder.current.resolve().mode == "enforce"
    volume.update("mode: shadow\n")
    assert holder.reload_if_changed() is True and holder.current.resolve().shadow


async def test_the_watcher_notices_the_swap_without_polling(volume):
    holder = PolicyHolder(volume.path, REGISTRY)
    # A poll interval longer than the test: only the folder's change events can trigger it.
    task = asyncio.create_task(holder.watch(poll_interval=60, debounce_ms=20))
    await asyncio.sleep(0.3)  # let the watcher start
    try:
        for generation, mode in enumerate(("shadow", "enforce", "shadow"), start=1):
            volume.update(f"mode: {mode}\n")
            await _until(lambda: holder.reloads == generation)
            assert holder.current.resolve().mode == mode
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)


async def _until(predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "the swap was not noticed"
        await asyncio.sleep(0.02)
