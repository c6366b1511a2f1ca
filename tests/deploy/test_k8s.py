"""deploy/k8s: probes on the gateway's health routes, the policy ConfigMap mounted as a folder
(so its symlink swaps reach the running gateway), replicas sharing one Redis."""

from __future__ import annotations

from pathlib import Path

import yaml

from gateway.config import load_config
from gateway.policy.loader import load_policy_text

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"


def documents() -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and "metadata" in doc:
                found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def gateway_pod() -> dict:
    return documents()[("Deployment", "loopguard")]["spec"]["template"]["spec"]


def test_kustomization_lists_every_manifest():
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_probes_use_health_routes_on_the_served_port():
    (container,) = gateway_pod()["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    (port,) = container["ports"]
    assert port["containerPort"] == 8080 and container["readinessProbe"]["httpGet"]["port"] == port["name"]


def test_config_loads_and_points_at_the_policy_folder_mount(tmp_path):
    docs = documents()
    (container,) = gateway_pod()["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v["configMap"]["name"] for v in gateway_pod()["volumes"]}
    assert all("subPath" not in m for m in mounts.values())  # a subPath mount never sees updates

    config_path = Path(env["LOOPGUARD_CONFIG"])
    config_map = docs[("ConfigMap", volumes[_mount_of(mounts, config_path)])]
    text = config_map["data"][config_path.name]
    file = tmp_path / config_path.name
    file.write_text(text, encoding="utf-8")
    config = load_config(file, env={"REDIS_URL": env["REDIS_URL"]})
    assert config.server.host == "0.0.0.0" and config.state.backend == "redis"

    policy = Path(config.policy)
    policy_map = docs[("ConfigMap", volumes[_mount_of(mounts, policy)])]
    assert mounts[_mount_of(mounts, policy)]["mountPath"] == str(policy.parent)
    load_policy_text(policy_map["data"][policy.name], str(policy))


def test_replicas_share_the_redis_service():
    docs = documents()
    assert docs[("Deployment", "loopguard")]["spec"]["replicas"] >= 2
    (container,) = gateway_pod()["containers"]
    redis_url = {e["name"]: e["value"] for e in container["env"]}["REDIS_URL"]
    service = docs[("Service", "loopguard-redis")]
    assert redis_url == f"redis://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/0"
    redis_pod = docs[("Deployment", "loopguard-redis")]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= redis_pod.items()


def test_the_service_selects_the_gateway_pods():
    docs = documents()
    labels = docs[("Deployment", "loopguard")]["spec"]["template"]["metadata"]["labels"]
    assert docs[("Service", "loopguard")]["spec"]["selector"].items() <= labels.items()


def _mount_of(mounts: dict[str, dict], path: Path) -> str:
    return next(name for name, m in mounts.items() if path.is_relative_to(m["mountPath"]))


SENTINEL = K8S.parent / "k8s-sentinel"


def test_the_sentinel_option_points_the_gateway_at_every_sentinel(tmp_path):
    overlay = yaml.safe_load((SENTINEL / "kustomization.yaml").read_text())
    assert overlay["resources"] == ["../k8s", "redis-sentinel.yaml"]
    deleted = {(p["target"]["kind"], p["target"]["name"]) for p in overlay["patches"] if "target" in p}
    assert deleted == {("Deployment", "loopguard-redis"), ("Service", "loopguard-redis")}
    config_map = yaml.safe_load((SENTINEL / "config.yaml").read_text())
    file = tmp_path / "loopguard.yaml"
    file.write_text(config_map["data"]["loopguard.yaml"])
    state = load_config(file, env={}).state
    assert state.backend == "redis" and state.mode == "sentinel" and state.service == "loopguard"
    found = yaml.safe_load_all((SENTINEL / "redis-sentinel.yaml").read_text())
    sets = {(d["kind"], d["metadata"]["name"]): d for d in found}
    sentinels = sets[("StatefulSet", "loopguard-sentinel")]
    assert sentinels["spec"]["serviceName"] == "loopguard-sentinel"
    pods = [f"loopguard-sentinel-{n}.loopguard-sentinel:26379" for n in range(sentinels["spec"]["replicas"])]
    assert state.sentinels == pods and len(pods) == 3
    script = sentinels["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert f"sentinel monitor {state.service} loopguard-redis-node-0.loopguard-redis-node 6379 2" in script
    assert sets[("StatefulSet", "loopguard-redis-node")]["spec"]["replicas"] == 2  # a primary and its replica
