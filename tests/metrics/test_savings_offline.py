"""Savings on a plain install: the serving process prices a stopped gpt-4o run from litellm's
bundled price table read as data, and never imports litellm."""

from __future__ import annotations

import json
import sys

import openai
from support.looping import RespondingUpstream, stubborn
from support.policies import ladder_policy
from support.process import ROOT, child_env, free_port, gateway_process
from support.servers import serve
from support.waiting import wait_for

from .test_live_savings import metric, run_loop

MODEL = "gpt-4o"


def test_a_stopped_gpt4o_run_is_priced_without_importing_litellm(tmp_path):
    upstream = RespondingUpstream(stubborn())
    modules = tmp_path / "modules.json"
    with serve(upstream.app) as upstream_url:
        (tmp_path / "policy.yaml").write_text(ladder_policy())
        config = tmp_path / "gw.yaml"
        config.write_text(f"upstream:\n  base_url: {upstream_url}/v1\npolicy: {tmp_path / 'policy.yaml'}\n")
        port = free_port()
        command = [sys.executable, str(ROOT / "tests/support/modules_at_exit.py"), str(modules)]
        with gateway_process(
            ["serve", "--config", str(config), "--port", str(port)],
            port,
            tmp_path / "stderr.log",
            env=child_env(),
            command=command,
        ) as gw:
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-test", max_retries=0, timeout=30)
            answer, executed = run_loop(client, "summarise a.txt", model=MODEL)
            assert executed == 3 and answer.startswith("[LoopGuard] This run was stopped")
            labels = {"detector": "no_progress", "model": MODEL}
            assert wait_for(lambda: metric(gw.url, "loopguard_cost_saved_usd_total", **labels) > 0, timeout=60)
            # how the model was counted: tiktoken's encoding for it, litellm's list price
            assert metric(gw.url, "loopguard_savings_model_info", model=MODEL, tokens="o200k_base", price="table") == 1
    assert json.loads(modules.read_text()) == []  # written as the gateway exited: litellm never imported
