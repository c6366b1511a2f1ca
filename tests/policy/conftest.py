"""Fixtures for the policy tests; the fakes themselves live in policy_fakes.py (a unique module
name, so it never collides with another folder's conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_fakes import REGISTRY, policy_text

from gateway.policy import load_policy_text


@pytest.fixture
def compile_policy():
    """``compile_policy(yaml_body, registry=REGISTRY)`` -> Policy, with version/name prepended."""

    def build(body: str = "", registry=REGISTRY, file: str = "policies/t.yaml"):
        return load_policy_text(policy_text(body), file, registry)

    return build


@pytest.fixture
def write_policy(tmp_path: Path):
    def write(body: str, name: str = "p.yaml") -> Path:
        path = tmp_path / name
        path.write_text(policy_text(body), encoding="utf-8")
        return path

    return write
