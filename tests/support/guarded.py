"""A looping model behind a real gateway, with the config the test needs (audit sinks, policy)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from starlette.applications import Starlette

from gateway.audit.events import InterventionEvent, intervention
from gateway.config import Config
from gateway.detectors.base import Finding
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.servers import serve
from support.upstream import Reply
from support.waiting import wait_for


@dataclass
class Guarded:
    url: str
    app: Starlette
    upstream: RespondingUpstream
    client: openai.OpenAI

    @property
    def gateway(self) -> Any:
        return self.app.state.gateway


@contextmanager
def guarded(
    responder: Callable[[dict], Reply],
    tmp_path: Path,
    policy_text: str | None = None,
    registry: Any = None,
    **config: Any,
) -> Iterator[Guarded]:
    upstream = RespondingUpstream(responder)
    with serve(upstream.app) as upstream_url:
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        raw = {"upstream": {"base_url": upstream_url + "/v1"}, **config}
        app = build_app(Config.model_validate(raw), policies=PolicyHolder(policy, registry))
        with serve(app, **SERVER_OPTIONS) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=10)
            yield Guarded(url, app, upstream, client)


def sample_event(detector: str = "exact_repeat", action: Action = Action.WARN, session: str = "s") -> InterventionEvent:
    finding = Finding(detector, 3, (1, 2, 3), ("read_file",), "same call 3 times")
    return intervention(Judgement(action, action, finding), phase="request", session=session, policy="p")
