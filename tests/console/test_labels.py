"""An operator labels a live run on its page (in headless Chromium), and ``loopguard labels
export`` writes the console's labels in the format ``loopguard replay --labels`` reads; only
operators label or read labels, and a form from another site is refused."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from support.guarded import guarded
from support.looping import stubborn
from support.process import ROOT, child_env

from gateway.replay.labels import Label, read_labels

from .runs import loop_as, shown, state

AUTH = {"auth": {"keys": ["client-key"], "metrics_keys": ["operator-key"]}}
OPERATOR = {"authorization": "Bearer operator-key"}


def stopped_run(url: str, session: str) -> dict:
    loop_as(url, "client-key", session)
    seen = shown(url, "operator-key", session)
    return next(e for e in seen["events"] if e["session"].endswith(session) and e["action"] == "terminate")


def test_an_operator_marks_a_run_a_loop_and_exports_the_mark(tmp_path, page):
    with guarded(stubborn(), tmp_path, **AUTH) as g:
        stop = stopped_run(g.url, "labelled-run")
        response = page.goto(g.url + "/ui")
        assert response.status == 401
        page.fill("#key", "operator-key")
        page.click("button[type=submit]")
        page.wait_for_selector("#feed tbody tr[data-action=terminate]")
        page.locator("#feed tbody tr[data-action=terminate] td.session a").first.click()
        page.wait_for_selector("#label-form")
        assert page.locator("#current-label").count() == 0  # not labelled yet
        page.fill("#label-step", "3")
        page.click("#label-loop")
        page.wait_for_selector("#current-label[data-label=loop]")
        assert "from step 3" in page.inner_text("#current-label")
        assert page.locator("table.timeline").count() == 1  # back on the run's own page

        rows = httpx.get(g.url + "/ui/api/labels", headers=OPERATOR).json()["labels"]
        assert [(r["run"], r["label"], r["loop_at"]) for r in rows] == [("labelled-run", "loop", 2)]
        assert "prompt 1" in rows[0]["note"] and stop["session"].endswith("labelled-run")

        out = tmp_path / "labels.csv"
        exported = subprocess.run(
            [sys.executable, "-m", "gateway", "labels", "export", "--url", g.url, "--out", str(out)],
            env={**child_env(), "LOOPGUARD_OPERATOR_KEY": "operator-key"},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert exported.returncode == 0, exported.stderr
        assert read_labels(out).by_key == {"labelled-run": Label("loop", 2, rows[0]["note"])}


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_later_mark_replaces_the_earlier_and_healthy_needs_no_step(tmp_path, backend):
    with (
        state(backend, tmp_path) as store,
        guarded(stubborn(), tmp_path, state=store, **AUTH) as g,
        httpx.Client(base_url=g.url, headers=OPERATOR) as http,
    ):
        stop = stopped_run(g.url, "relabelled")
        form = {"session": stop["session"], "run": str(stop["run"])}
        assert http.post("/ui/label", data={**form, "label": "loop", "step": "2"}).status_code == 303
        assert http.post("/ui/label", data={**form, "label": "healthy", "step": ""}).status_code == 303
        rows = http.get("/ui/api/labels").json()["labels"]
        assert [(r["run"], r["label"], r["loop_at"]) for r in rows] == [("relabelled", "healthy", None)]
        page = http.get("/ui/run", params={"session": stop["session"], "run": stop["run"]})
        assert 'data-label="healthy"' in page.text


def test_only_operators_label_and_bad_marks_are_refused(tmp_path):
    auth = {"auth": {"keys": [{"key": "key-a", "tenant": "a"}], "metrics_keys": ["operator-key"]}}
    with guarded(stubborn(), tmp_path, ui={"tenant_view": True}, **auth) as g, httpx.Client(base_url=g.url) as http:
        loop_as(g.url, "key-a", "tenant-run")
        form = {"session": "s", "run": "1", "label": "loop"}
        tenant = {"authorization": "Bearer key-a"}
        assert http.post("/ui/label", data=form, headers=tenant).status_code == 403
        assert http.get("/ui/api/labels", headers=tenant).status_code == 403
        assert http.post("/ui/label", data=form).status_code == 401
        assert http.get("/ui/api/labels").status_code == 401
        elsewhere = {**OPERATOR, "origin": "https://elsewhere.example"}
        assert http.post("/ui/label", data=form, headers=elsewhere).status_code == 403
        for bad in ({**form, "label": "stuck"}, {**form, "run": "0"}, {**form, "step": "-1"}, {**form, "session": ""}):
            answer = http.post("/ui/label", data=bad, headers=OPERATOR)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_label", bad
        assert http.get("/ui/api/labels", headers=OPERATOR).json() == {"labels": []}
        # A tenant's run page carries no labelling form.
        feed = http.get("/ui/api/feed", headers=tenant).json()["events"]
        run = http.get("/ui/run", params={"session": feed[0]["session"], "run": feed[0]["run"]}, headers=tenant)
        assert run.status_code == 200 and "label-form" not in run.text


def test_export_without_a_key_or_a_gateway_says_why(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g:
        env = {k: v for k, v in child_env().items() if k != "LOOPGUARD_OPERATOR_KEY"}
        refused = subprocess.run(
            [sys.executable, "-m", "gateway", "labels", "export", "--url", g.url],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 1 and "operator key" in refused.stderr
    gone = subprocess.run(
        [sys.executable, "-m", "gateway", "labels", "export", "--url", "http://127.0.0.1:9"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gone.returncode == 1 and "cannot reach the gateway" in gone.stderr
