"""``loopguard serve`` as an operator runs it: real subprocesses, real signals, real stderr."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx
import pytest
from support.process import ROOT, child_env, free_port, gateway_process, loopguard_command

PYTHON_M = [sys.executable, "-m", "gateway"]


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PYTHON_M, *args], env=env or child_env(), cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_bad_config_exits_1_naming_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("upstream:\n  base_url: http://x/v1\n  timeout: 5\n")
    result = run(["serve", "--config", str(bad)])
    assert result.returncode == 1
    assert str(bad) in result.stderr and "upstream.timeout" in result.stderr
    assert "Traceback" not in result.stderr  # an operator error, not a crash


def test_bad_config_from_env_var(tmp_path):
    bad = tmp_path / "from-env.yaml"
    bad.write_text("server:\n  port: not-a-port\n")
    result = run(["serve"], env=child_env(LOOPGUARD_CONFIG=str(bad)))
    assert result.returncode == 1
    assert str(bad) in result.stderr and "server.port" in result.stderr


def test_missing_config_file_exits_1(tmp_path):
    result = run(["serve", "--config", str(tmp_path / "absent.yaml")])
    assert result.returncode == 1
    assert "absent.yaml" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("argv", [[], ["serve", "--port", "x"], ["frobnicate"]])
def test_usage_errors_exit_2(argv):
    assert run(argv).returncode == 2


def test_serve_port_answers_then_terminates_cleanly(tmp_path):
    port = free_port()
    with gateway_process(
        ["serve", "--port", str(port)], port, tmp_path / "stderr.log", command=loopguard_command()
    ) as gw:
        assert httpx.get(gw.url + "/healthz").json() == {"status": "ok"}
        assert httpx.get(gw.url + "/readyz").status_code == 200
        gw.process.send_signal(signal.SIGTERM)
        gw.process.wait(timeout=10)
    # uvicorn finishes its graceful shutdown, then re-raises SIGTERM: 0 or "killed by SIGTERM".
    assert gw.process.returncode in (0, -signal.SIGTERM)
    assert "Traceback" not in gw.stderr and "error" not in gw.stderr.lower()


def test_sigint_stops_it_too(tmp_path):
    port = free_port()
    with gateway_process(["serve", "--port", str(port)], port, tmp_path / "stderr.log") as gw:
        gw.process.send_signal(signal.SIGINT)
        gw.process.wait(timeout=10)
    assert gw.process.returncode in (0, 130, -signal.SIGINT)
    assert "Traceback" not in gw.stderr


def test_config_from_env_var_and_host_flag(tmp_path):
    port = free_port()
    config = tmp_path / "c.yaml"
    config.write_text(f"server:\n  host: 192.0.2.1\n  port: {port}\n")  # host overridden below
    env = child_env(LOOPGUARD_CONFIG=str(config))
    with gateway_process(["serve", "--host", "127.0.0.1"], port, tmp_path / "stderr.log", env=env) as gw:
        assert httpx.get(gw.url + "/healthz").status_code == 200


def test_upstream_base_url_env_override_reaches_the_server(tmp_path, upstream):
    port = free_port()
    env = child_env(LOOPGUARD_UPSTREAM_BASE_URL=upstream.url + "/v1")
    with gateway_process(["serve", "--port", str(port)], port, tmp_path / "stderr.log", env=env) as gw:
        response = httpx.get(gw.url + "/v1/models")
    assert response.status_code == 200 and upstream.last["path"] == "/v1/models"


def test_relayed_response_has_one_date_header(tmp_path, upstream):
    # The server options of `loopguard serve` (not only the test harness) must not double Date.
    port = free_port()
    env = child_env(LOOPGUARD_UPSTREAM_BASE_URL=upstream.url + "/v1")
    with gateway_process(["serve", "--port", str(port)], port, tmp_path / "stderr.log", env=env) as gw:
        started = time.monotonic()
        response = httpx.post(gw.url + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert time.monotonic() - started < 10
    assert response.status_code == 200
    assert len(response.headers.get_list("date")) == 1
    assert len(response.headers.get_list("server")) <= 1
