"""Two gateway processes on one Redis, as replicas behind a load balancer: a run stopped by one
shows in the console of both, with the same feed and the same run page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from support.browser import SHOWN_S, loop_run
from support.looping import RespondingUpstream, stubborn
from support.policies import ladder_policy
from support.process import free_port, gateway_process
from support.redis_server import RedisServer
from support.servers import serve

FEED_IDS = "rows => rows.map(r => r.dataset.id)"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> Iterator[list[str]]:
    workdir = tmp_path_factory.mktemp("console-replicas")
    redis = RedisServer(workdir).start()
    upstream = RespondingUpstream(stubborn())
    try:
        with serve(upstream.app) as upstream_url:
            policy = workdir / "policy.yaml"
            policy.write_text(ladder_policy())
            config = workdir / "loopguard.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "upstream": {"base_url": upstream_url + "/v1"},
                        "policy": str(policy),
                        "state": {"backend": "redis", "url": redis.url, "key_prefix": "console:", "op_timeout_s": 5.0},
                        "auth": {"metrics_keys": ["operator-key"]},
                    }
                )
            )
            urls = []
            ports = [free_port(), free_port()]
            with (
                gateway_process(
                    ["serve", "--config", str(config), "--port", str(ports[0])],
                    ports[0],
                    workdir / "a.log",
                    ready_timeout=60,
                ) as a,
                gateway_process(
                    ["serve", "--config", str(config), "--port", str(ports[1])],
                    ports[1],
                    workdir / "b.log",
                    ready_timeout=60,
                ) as b,
            ):
                urls = [a.url, b.url]
                yield urls
    finally:
        redis.stop()


def signed_in(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    response = page.goto(url + "/ui")
    assert response.status == 401  # the operator key is needed: the sign-in form
    page.fill("#key", "operator-key")
    page.click("button[type=submit]")
    page.wait_for_selector("#feed")
    cookie = next(c for c in context.cookies() if c["name"] == "loopguard_console")
    assert cookie["httpOnly"] and "operator-key" not in cookie["value"]
    return page


def test_both_replicas_show_the_run_one_of_them_stopped(replicas, browser):
    a, b = replicas
    page_b = signed_in(browser, b)  # open before the run: it must arrive without a reload
    runner = loop_run(a, "through-replica-a")
    assert runner.actions[-1] == "terminate"
    page_b.wait_for_selector("#feed tbody tr[data-action=terminate]", timeout=SHOWN_S)
    page_a = signed_in(browser, a)
    page_a.wait_for_selector("#feed tbody tr[data-action=terminate]", timeout=SHOWN_S)
    assert page_a.eval_on_selector_all("#feed tbody tr", FEED_IDS) == page_b.eval_on_selector_all(
        "#feed tbody tr", FEED_IDS
    )

    page_b.locator("#feed tbody tr[data-action=terminate] td.session a").click()
    page_b.wait_for_selector("table.timeline")
    assert page_b.locator("table.timeline tbody tr.call").count() >= 5
    assert page_b.locator("article.finding[data-action=terminate]").count() == 1
    assert page_b.locator("table.timeline .mark-terminate").count() == 1
