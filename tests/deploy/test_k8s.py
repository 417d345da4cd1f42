"""deploy/k8s: every overlay renders with kustomize, every object validates against the Kubernetes schemas, and
the pods are what the issue asks for (probes, limits, non-root read-only, the migration Job first, autoscaling, a
grace period longer than the chat stream grace). The Envoy ConfigMap is the template's rendering."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from secondbrain.config import Settings, load_settings
from secondbrain.gateway.envoy_config import kubernetes_layout, render
from tests.environment import clean_environ

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
# Where `make setup` puts a kubectl when the PATH has none recent enough (scripts/kubectl.py).
LOCAL_KUBECTL = ROOT / ".tools" / "bin" / "kubectl"
KUBERNETES_VERSION = "1.32"
SERVICES = {"ingest": 50051, "retrieve": 50052, "chat": 50053}


def kustomize(directory: Path) -> list[dict[str, Any]]:
    kubectl = str(LOCAL_KUBECTL) if LOCAL_KUBECTL.exists() else shutil.which("kubectl")
    assert kubectl, "kubectl is not installed: run `make setup`"
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module", params=["dev", "prod"])
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return kustomize(K8S / "overlays" / request.param)


def test_every_rendered_object_validates_against_the_kubernetes_schemas(rendered: list[dict[str, Any]]) -> None:
    kinds = {o["kind"] for o in rendered}
    assert {
        "Deployment",
        "Service",
        "Job",
        "StatefulSet",
        "HorizontalPodAutoscaler",
        "ConfigMap",
        "NetworkPolicy",
    } <= kinds
    for obj in rendered:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def _pod_specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    specs = {}
    for kind in ("Deployment", "StatefulSet", "Job"):
        for name, obj in by_kind(objects, kind).items():
            specs[name] = obj["spec"]["template"]["spec"]
    return specs


def test_every_container_has_limits_and_runs_non_root_on_a_read_only_filesystem(
    rendered: list[dict[str, Any]],
) -> None:
    for name, spec in _pod_specs(rendered).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec.get("automountServiceAccountToken") is False, name
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{name}/{container['name']}"
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]) and {"cpu", "memory"} <= set(resources["limits"])
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where


def test_services_have_native_grpc_probes_and_wait_for_the_migration_job(rendered: list[dict[str, Any]]) -> None:
    deployments = by_kind(rendered, "Deployment")
    for name, port in SERVICES.items():
        spec = deployments[name]["spec"]["template"]["spec"]
        container = spec["containers"][0]
        assert container["args"] == ["serve", name]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == port, (name, probe)
        assert container["readinessProbe"]["grpc"]["service"] == f"secondbrain.{name}.v1.{name.title()}Service"
        assert [c["args"] for c in spec["initContainers"]] == [["migrate", "--wait", "600"]]
    for name in ("shim", "envoy"):
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
        assert "livenessProbe" in container
    job = by_kind(rendered, "Job")["secondbrain-migrate"]
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    postgres = by_kind(rendered, "StatefulSet")["postgres"]
    assert postgres["spec"]["template"]["spec"]["containers"][0]["image"].startswith("pgvector/pgvector:")
    assert postgres["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"]


def test_services_leave_migrations_to_the_job(rendered: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    config = by_kind(rendered, "ConfigMap")["secondbrain-config"]
    for name, value in config["data"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", "a-long-random-secret")  # the ConfigMap binds 0.0.0.0
    assert load_settings().migrate_on_start is False, "every pod would migrate at start, beside the Job"
    deployments = by_kind(rendered, "Deployment")
    for name in SERVICES:
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert {"configMapRef": {"name": "secondbrain-config"}} in container["envFrom"], name


def test_grace_outlasts_the_chat_stream_grace_and_secrets_come_from_one_secret(rendered: list[dict[str, Any]]) -> None:
    config = next(c for name, c in by_kind(rendered, "ConfigMap").items() if name == "secondbrain-config")
    stream_grace = float(config["data"]["SECONDBRAIN_SHUTDOWN_GRACE_SECONDS"])
    for name, deployment in by_kind(rendered, "Deployment").items():
        spec = deployment["spec"]["template"]["spec"]
        assert spec["terminationGracePeriodSeconds"] > stream_grace, name
        for container in spec["containers"]:
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"]["name"] == "secondbrain-secrets"
    # The token guards every server that binds beyond loopback.
    assert config["data"]["SECONDBRAIN_HOST"] == "0.0.0.0"


def test_retrieve_and_chat_autoscale_behind_headless_services(rendered: list[dict[str, Any]]) -> None:
    autoscalers = by_kind(rendered, "HorizontalPodAutoscaler")
    assert {a["spec"]["scaleTargetRef"]["name"] for a in autoscalers.values()} == {"retrieve", "chat"}
    services = by_kind(rendered, "Service")
    for name in SERVICES:
        assert services[name]["spec"]["clusterIP"] == "None", "Envoy balances per call only over pod addresses"


def test_network_policies_let_each_port_be_reached_only_by_its_callers(rendered: list[dict[str, Any]]) -> None:
    policies = by_kind(rendered, "NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}

    def admitted(pod: str, port: str) -> set[str]:
        """Who the policies let reach `pod` on its port named `port`: "*" for anyone."""
        who = set()
        for policy in policies.values():
            if policy["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name") != pod:
                continue
            for rule in policy["spec"].get("ingress", []):
                if port in [p["port"] for p in rule.get("ports", [])]:
                    who |= {"*"} if "from" not in rule else {_peer(peer) for peer in rule["from"]}
        return who

    assert admitted("envoy", "http") == {"*"}
    assert admitted("shim", "http") == {"envoy", "prometheus, any namespace"}
    assert admitted("ingest", "grpc") == {"envoy", "shim"}
    assert admitted("retrieve", "grpc") == {"envoy", "shim", "chat"}
    assert admitted("chat", "grpc") == {"envoy", "shim"}
    for service in SERVICES:
        assert admitted(service, "metrics") == {"prometheus, any namespace"}, "metrics need no token"
    assert admitted("postgres", "postgres") == {"migrate", "ingest", "retrieve", "chat"}
    # The services serve their metrics beyond loopback here, where these policies keep them to Prometheus.
    assert by_kind(rendered, "ConfigMap")["secondbrain-config"]["data"]["SECONDBRAIN_METRICS_HOST"] == "0.0.0.0"
    # Every port a pod opens is let in from someone: a port no policy names would be silently unreachable.
    for name, spec in _pod_specs(rendered).items():
        for container in spec["containers"]:
            for port in container.get("ports", []):
                assert admitted(name, port["name"]), f"{name}:{port['name']} is reachable by no one"


def _peer(peer: dict[str, Any]) -> str:
    name = peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
    return f"{name}, any namespace" if peer.get("namespaceSelector") == {} else name


def test_prod_runs_two_of_what_serves_users_and_dev_one() -> None:
    prod = by_kind(kustomize(K8S / "overlays" / "prod"), "Deployment")
    dev = by_kind(kustomize(K8S / "overlays" / "dev"), "Deployment")
    for name in ("retrieve", "chat", "shim", "envoy"):
        assert prod[name]["spec"]["replicas"] == 2 and dev[name]["spec"]["replicas"] == 1
    assert {o["metadata"]["namespace"] for o in prod.values()} == {"secondbrain"}


def test_the_envoy_config_map_is_the_templates_kubernetes_rendering(
    rendered: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)  # the committed file is rendered without tracing
    committed = (K8S / "base" / "envoy" / "envoy.yaml").read_text()
    expected = render(kubernetes_layout(Settings()))
    assert committed == expected, (
        "stale: run `secondbrain gateway-config --kubernetes -o deploy/k8s/base/envoy/envoy.yaml`"
    )
    envoy_config = next(c for name, c in by_kind(rendered, "ConfigMap").items() if name.startswith("envoy-config"))
    assert envoy_config["data"]["envoy.yaml"] == expected
    volumes = by_kind(rendered, "Deployment")["envoy"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": envoy_config["metadata"]["name"]}} in volumes


def test_the_git_sync_component_replaces_the_vault_volume(tmp_path: Path) -> None:
    # A copy, so the overlay that uses the component sits beside it (kustomize takes relative paths only).
    tree = tmp_path / "k8s"
    shutil.copytree(K8S, tree)
    overlay = tree / "overlays" / "git-sync"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../../base"],
                "components": ["../../components/git-sync"],
            }
        )
    )
    objects = kustomize(overlay)
    assert "vault" not in by_kind(objects, "PersistentVolumeClaim")
    spec = by_kind(objects, "Deployment")["ingest"]["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["ingest", "git-sync"]
    assert {"name": "vault", "emptyDir": {}} in spec["volumes"]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "hadolint")
    result = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_images_model_export_step_makes_a_cache_the_services_read(tmp_path: Path) -> None:
    """The Dockerfile's export step, run here as it is written (only its directory changed): it must leave the file
    a service started with SECONDBRAIN_MODEL_CACHE_DIR pointing there loads without exporting again."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", "")
    pattern = r"RUN pip install \. && secondbrain (?P<command>prepare-model --models-dir (?P<dir>\S+))"
    step = re.search(pattern, dockerfile)
    assert step is not None, "the Dockerfile no longer makes the model's export after installing"
    assert step["dir"] == dockerfile.split("SECONDBRAIN_MODEL_CACHE_DIR=", 1)[1].split()[0]
    arguments = step["command"].replace(step["dir"], str(tmp_path / "models")).split()
    env = {**clean_environ(), "SECONDBRAIN_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "secondbrain", *arguments]
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)
    built = sorted(path.name for path in (tmp_path / "models").glob("*.onnx"))
    assert len(built) == 1, built
    check = (
        "import asyncio, sys\n"
        "from secondbrain.config import load_settings\n"
        "from secondbrain.vault_config import EmbeddingSection\n"
        "from secondbrain.embedding import create_embedder\n"
        "embedder = create_embedder(EmbeddingSection(), models_dir=load_settings().models_dir)\n"
        "assert asyncio.run(embedder.embed_query('a question')).shape == (384,)\n"
        "print('torch' in sys.modules)\n"
    )
    env = {**os.environ, "SECONDBRAIN_MODEL_CACHE_DIR": str(tmp_path / "models")}
    result = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False", "the service exported again instead of reading the image's export"
