"""The console in a real browser (headless Chromium): a looping run through a real gateway shows
up in the feed without a reload, its run page shows the calls, the finding and what was sent,
and the filters narrow the feed."""

from __future__ import annotations

import re

from support.browser import SHOWN_S, loop_run
from support.guarded import guarded
from support.looping import stubborn
from support.policies import ladder_policy


def test_a_stopped_run_appears_live_and_its_page_explains_it(tmp_path, page):
    with guarded(stubborn(), tmp_path) as g:
        page.goto(g.url + "/ui")
        page.wait_for_selector("#status-line:has-text('policy test-ladder')")
        assert page.locator("#feed tbody tr").count() == 0
        runner = loop_run(g.url, "browser-run")
        assert runner.actions[-1] == "terminate"

        # The page was loaded before the run: the rows arrive by polling, newest first.
        stop = page.wait_for_selector("#feed tbody tr[data-action=terminate]", timeout=SHOWN_S)
        cells = [c.inner_text() for c in stop.query_selector_all("td")]
        assert cells[1] == "-" and cells[2].endswith("browser-run")  # no tenants configured
        assert cells[4:7] == ["chat", "test-model", "no_progress"]
        actions = page.eval_on_selector_all("#feed tbody tr", "rows => rows.map(r => r.dataset.action)")
        assert actions[0] == "terminate" and "warn" in actions and "reject" in actions
        assert page.inner_text("#t-terminated") == "1" and page.inner_text("#t-warned") == "1"
        # What the stop saved follows it (priced off the request path), still without a reload.
        page.wait_for_selector("#feed tbody tr[data-action=terminate] td:has-text('tok')", timeout=SHOWN_S)
        assert int(page.inner_text("#t-tokens").replace(",", "")) > 0

        page.select_option("#f-action", "warn")
        assert page.eval_on_selector_all("#feed tbody tr", "rows => rows.map(r => r.dataset.action)") == ["warn"]
        page.select_option("#f-action", "")

        page.locator("#feed tbody tr[data-action=terminate] td.session a").click()
        page.wait_for_selector("table.timeline")
        calls = page.eval_on_selector_all(
            "table.timeline tbody tr.call", "rows => rows.map(r => r.querySelector('td.tool').innerText)"
        )
        assert calls and set(calls) == {"read_file"}
        repeats = page.eval_on_selector_all("table.timeline tr.repeat", "rows => rows.length")
        assert repeats >= 2  # the repeated steps are highlighted
        assert page.locator("table.timeline .mark-terminate").count() == 1
        assert page.locator("table.timeline .mark-warn").count() == 1
        finding = page.locator("article.finding[data-action=terminate]")
        assert "no_progress" in finding.inner_text() and re.search(r"at steps \d", finding.inner_text())
        warn = page.locator("article.finding[data-action=warn]")
        assert "anchor sent to the model" in warn.inner_text()
        assert "[LoopGuard]" in warn.locator("pre.sent").inner_text()
        assert page.inner_text("#outcome").startswith("terminated")
        assert int(page.inner_text("#tokens-saved").replace(",", "")) > 0


CRAWLER = """
agents:
  - id: crawler
    match: {header: crawler}
    detectors:
      no_progress: {warn_at: 2}
"""


def test_the_feed_filters_by_agent_and_detector(tmp_path, page):
    with guarded(stubborn(), tmp_path, ladder_policy(CRAWLER)) as g:
        loop_run(g.url, "first", agent="crawler")
        loop_run(g.url, "second")
        page.goto(g.url + "/ui")
        page.wait_for_selector("#feed tbody tr[data-agent=crawler]", timeout=SHOWN_S)
        page.wait_for_selector("#f-agent option[value=crawler]", state="attached")
        page.select_option("#f-agent", "crawler")
        agents = page.eval_on_selector_all("#feed tbody tr", "rows => [...new Set(rows.map(r => r.dataset.agent))]")
        assert agents == ["crawler"]
        page.select_option("#f-agent", "")
        page.select_option("#f-detector", "no_progress")
        assert (
            page.locator("#feed tbody tr").count()
            == page.locator("#feed tbody tr[data-detector=no_progress]").count()
            > 0
        )
        by_agent = page.eval_on_selector_all("#by-agent tbody tr", "rows => rows.map(r => r.cells[0].innerText)")
        assert set(by_agent) == {"(default)", "crawler"}
        page.wait_for_selector("#overrides tbody tr:has-text('crawler')")  # the policy's overrides, listed
        assert "no_progress 2/4/5" in page.inner_text("#overrides")
