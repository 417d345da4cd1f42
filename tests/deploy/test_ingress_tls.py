"""deploy/k8s/components/ingress-tls: the Ingress that ends TLS in front of Envoy, for phones (which install the web
UI only over HTTPS). Added to the prod overlay's components it renders, validates against the Kubernetes schemas,
and sends every path of its host to the gateway Service with the certificate's Secret, without buffering streams."""

from __future__ import annotations

import shutil
from pathlib import Path

import kubernetes_validate
import yaml

from tests.deploy.test_k8s import K8S, KUBERNETES_VERSION, by_kind, kustomize


def test_the_ingress_tls_component_serves_the_gateway_over_https(tmp_path: Path) -> None:
    # The prod overlay, copied, with the component added to its components as docs/deploy.md says.
    tree = tmp_path / "k8s"
    shutil.copytree(K8S, tree)
    overlay = tree / "overlays" / "prod"
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["components"].append("../../components/ingress-tls")
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    objects = kustomize(overlay)
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    ingress = by_kind(objects, "Ingress")["gateway"]
    assert ingress["metadata"]["namespace"] == "secondbrain"
    (tls,) = ingress["spec"]["tls"]
    (rule,) = ingress["spec"]["rules"]
    assert tls["secretName"] == "secondbrain-tls" and tls["hosts"] == [rule["host"]]
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/", "Prefix")
    service = by_kind(objects, "Service")[path["backend"]["service"]["name"]]
    assert service["metadata"]["labels"]["app.kubernetes.io/name"] == "envoy"
    assert path["backend"]["service"]["port"]["name"] in [port["name"] for port in service["spec"]["ports"]]
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    # The proxy waits longer than Envoy's stream idle timeout, so a slow answer is not cut by the Ingress.
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > 300
