"""deploy/docker-compose.yml: every file it mounts exists, the gateway config it mounts loads and
points at a mounted policy, and Prometheus and Grafana are wired to what the gateway serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gateway.config import load_config
from gateway.policy.loader import load_policy

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def mounts(service: str) -> dict[str, Path]:
    """container path -> host path of a service's bind mounts."""
    found = {}
    for volume in compose()["services"][service].get("volumes", []):
        host, container, *_ = volume.split(":")
        found[container] = (COMPOSE.parent / host).resolve()
    return found


def defaults(environment: dict[str, str]) -> dict[str, str]:
    """The values compose gives ``${NAME:-default}`` when the shell sets nothing."""
    return {name: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value) for name, value in environment.items()}


def test_services_and_published_ports():
    services = {name: s for name, s in compose()["services"].items() if not s.get("profiles")}
    assert set(services) == {"gateway", "redis", "prometheus", "grafana"}
    ports = {name: [p.split(":")[-1] for p in s.get("ports", [])] for name, s in services.items()}
    assert ports == {"gateway": ["8080"], "redis": [], "prometheus": ["9090"], "grafana": ["3000"]}
    assert services["gateway"]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert (COMPOSE.parent / services["gateway"]["build"]["context"] / "Dockerfile").is_file()


@pytest.mark.parametrize("service", ["gateway", "prometheus", "grafana"])
def test_every_mounted_file_exists(service):
    missing = [str(host) for host in mounts(service).values() if not host.exists()]
    assert not missing


def test_the_gateway_config_loads_and_its_policy_is_mounted():
    files = mounts("gateway")
    env = defaults(compose()["services"]["gateway"]["environment"])
    config_in_container = env["LOOPGUARD_CONFIG"]
    config = load_config(files[config_in_container], env={"REDIS_URL": env["REDIS_URL"]})
    assert config.server.host == "0.0.0.0" and config.server.port == 8080
    assert config.state.backend == "redis" and config.state.url == "redis://redis:6379/0"
    assert config.state.mode == "single"
    # The policy path as the container sees it, mapped back through the mounts.
    in_container = Path(config_in_container).parent / Path(config.policy).relative_to(files[config_in_container].parent)
    folder = next(c for c in files if in_container.is_relative_to(c))
    load_policy(files[folder] / in_container.relative_to(folder))


def test_the_cluster_profile_makes_three_primaries_the_gateway_can_be_pointed_at():
    services = compose()["services"]
    nodes = sorted(name for name, s in services.items() if s.get("profiles") == ["cluster"] and "init" not in name)
    assert nodes == ["redis-cluster-1", "redis-cluster-2", "redis-cluster-3"]
    for name in nodes:
        assert "--cluster-enabled yes" in services[name]["command"] and services[name]["environment"]["NODE"] == name
    init = services["redis-cluster-init"]
    assert "--cluster create" in init["command"] and set(init["depends_on"]) == set(nodes)
    # What the file's header says to set for the profile.
    seeds = "redis://" + ",".join(f"{name}:6379" for name in nodes)
    assert f"REDIS_MODE=cluster REDIS_URL={seeds}" in COMPOSE.read_text()
    files = mounts("gateway")
    config_file = files[services["gateway"]["environment"]["LOOPGUARD_CONFIG"]]
    state = load_config(config_file, env={"REDIS_MODE": "cluster", "REDIS_URL": seeds}).state
    assert state.mode == "cluster" and state.url == seeds


def test_prometheus_scrapes_the_gateway():
    scrape = yaml.safe_load((DEPLOY / "prometheus.yml").read_text(encoding="utf-8"))
    (job,) = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["gateway:8080"]


def test_grafana_is_provisioned_with_the_datasource_the_dashboard_uses():
    import json

    files = mounts("grafana")
    provisioning = files["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load((provisioning / "datasources/prometheus.yml").read_text())["datasources"]
    assert source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load((provisioning / "dashboards/loopguard.yml").read_text())["providers"]
    dashboard = next(
        host for container, host in files.items() if container.startswith(provider["options"]["path"] + "/")
    )
    panels = json.loads(dashboard.read_text(encoding="utf-8"))["panels"]
    uids = {p["datasource"]["uid"] for p in panels if "datasource" in p}
    assert uids == {source["uid"]}


def compose_command() -> list[str] | None:
    """docker-compose (v1), or the docker CLI's compose plugin (v2), whichever is installed."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


@pytest.mark.skipif(compose_command() is None, reason="docker compose is not installed")
def test_docker_compose_validates_the_file():
    done = subprocess.run(
        [*compose_command(), "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
