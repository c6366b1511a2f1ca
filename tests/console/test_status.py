"""The status panel's data: the policy in effect (name, file, when loaded, overrides as written)
and the state backend's health."""

from __future__ import annotations

import time

import httpx
from support.guarded import guarded
from support.looping import stubborn
from support.policies import ladder_policy

OVERRIDE = """
agents:
  - id: nightly
    match: {header: nightly-bot, model: "gpt-4o*"}
    max_action: warn
"""


def test_the_policy_in_effect_and_its_reload_are_shown(tmp_path):
    with guarded(stubborn(), tmp_path, ladder_policy(OVERRIDE)) as g:
        with httpx.Client(base_url=g.url) as http:
            before = http.get("/ui/api/status").json()
            policy = before["policy"]
            assert policy["name"] == "test-ladder" and policy["file"] == str(tmp_path / "policy.yaml")
            assert policy["default"]["detectors"]["no_progress"] == [3, 4, 5]
            (nightly,) = policy["overrides"]
            assert nightly["agent"] == "nightly" and nightly["max_action"] == "warn"
            assert nightly["match"] == {"header": "nightly-bot", "model": "gpt-4o*"}  # the glob as written
            assert before["state"] == {"backend": "memory", "healthy": True, "degradations": 0}

            time.sleep(1.1)  # loaded_at has second precision: the reload must read later
            (tmp_path / "policy.yaml").write_text(ladder_policy(OVERRIDE, warn_at=2).replace("test-ladder", "edited"))
            assert g.gateway.policies.reload_if_changed()
            after = http.get("/ui/api/status").json()["policy"]
            assert after["name"] == "edited" and after["reloads"] == 1 and after["loaded_at"] > policy["loaded_at"]
