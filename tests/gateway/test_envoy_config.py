"""The Envoy template: it renders for this machine and for Kubernetes, Envoy itself accepts both, and its routes
send every RPC of every service to that service, with no total timeout on the streams."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondbrain.config import Settings
from secondbrain.errors import ConfigError
from secondbrain.gateway.endpoints import SERVICES
from secondbrain.gateway.envoy import validate
from secondbrain.gateway.envoy_config import Upstream, kubernetes_layout, local_layout, render


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("SECONDBRAIN_"):
            monkeypatch.delenv(key)


def _routes(config: dict[str, Any]) -> list[dict[str, Any]]:
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return manager["route_config"]["virtual_hosts"][0]["routes"]


def _route_for(config: dict[str, Any], path: str, method: str = "POST") -> dict[str, Any]:
    """The first route that matches, as Envoy picks it."""
    for route in _routes(config):
        match = route["match"]
        if any(h["name"] == ":method" and h["string_match"]["exact"] != method for h in match.get("headers", [])):
            continue
        if match.get("path") == path or ("prefix" in match and path.startswith(match["prefix"])):
            return route["route"]
    raise AssertionError(f"no route for {path}")


@pytest.mark.parametrize(
    "layout",
    [
        local_layout(Settings(cors_origins=["http://localhost:5173"])),
        kubernetes_layout(Settings(api_token="a-token-of-sixteen-chars", host="0.0.0.0")),
    ],
    ids=["local", "kubernetes"],
)
def test_envoy_accepts_the_rendered_config(layout: Any, tmp_path: Path) -> None:
    text = render(layout)
    assert "${" not in text, "every placeholder was filled"
    path = tmp_path / "envoy.yaml"
    path.write_text(text)
    validate(path)  # `envoy --mode validate`, the real binary


def test_envoy_rejects_a_broken_config_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "envoy.yaml"
    path.write_text(render(local_layout(Settings())).replace("codec_type: AUTO", "codec_type: TELEPATHY"))
    with pytest.raises(ConfigError) as raised:
        validate(path)
    assert "TELEPATHY" in str(raised.value) and str(path) in str(raised.value)


def test_every_rpc_is_routed_to_its_service_and_streams_have_no_total_timeout() -> None:
    config = yaml.safe_load(render(local_layout(Settings())))
    for service, descriptor in SERVICES.items():
        for method in descriptor.methods:
            route = _route_for(config, f"/{descriptor.full_name}/{method.name}")
            assert route["cluster"] == service, method.full_name
            if method.server_streaming:
                assert route["timeout"] == "0s" and route["idle_timeout"] == "300s", method.full_name
            else:
                assert route["timeout"] == "60s", method.full_name
    assert _route_for(config, "/api/chat/conversations/x/messages")["cluster"] == "shim"
    assert _route_for(config, "/api/chat/options")["timeout"] == "0s"
    assert _route_for(config, "/")["cluster"] == "shim"
    assert _route_for(config, "/secondbrain.chat.v1.ChatService/GetOptions", "OPTIONS")["cluster"] == "shim"


def test_filters_are_grpc_web_cors_compressor_router_and_clusters_speak_http2_to_services() -> None:
    config = yaml.safe_load(render(local_layout(Settings(cors_origins=["http://localhost:5173"]))))
    listener = config["static_resources"]["listeners"][0]
    manager = listener["filter_chains"][0]["filters"][0]["typed_config"]
    assert [f["name"] for f in manager["http_filters"]] == [
        "envoy.filters.http.grpc_web",
        "envoy.filters.http.cors",
        "envoy.filters.http.compressor",
        "envoy.filters.http.router",
    ]
    assert all("typed_config" in f for f in manager["http_filters"])
    cors = manager["route_config"]["virtual_hosts"][0]["typed_per_filter_config"]["envoy.filters.http.cors"]
    assert cors["allow_origin_string_match"] == [{"exact": "http://localhost:5173"}]
    assert "grpc-status" in cors["expose_headers"] and "grpc-message" in cors["expose_headers"]
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    for name in ("ingest", "retrieve", "chat"):
        options = clusters[name]["typed_extension_protocol_options"]
        assert "http2_protocol_options" in str(options), name
    shim = clusters["shim"]["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
    ]
    assert "http_protocol_options" in shim["explicit_http_config"], "the shim speaks HTTP/1.1"
    # Envoy lets go of an idle connection before the shim's 5 s keep-alive closes it under a request.
    assert shim["common_http_protocol_options"]["idle_timeout"] == "4s"
    assert listener["address"]["socket_address"] == {"address": "127.0.0.1", "port_value": 8080}


def test_one_template_renders_local_ports_and_kubernetes_service_names() -> None:
    local = yaml.safe_load(render(local_layout(Settings(chat_port=6003))))
    kube = yaml.safe_load(render(kubernetes_layout(Settings(api_token="a-token-of-sixteen-chars", host="0.0.0.0"))))

    def endpoints(config: dict[str, Any]) -> dict[str, tuple[str, int]]:
        found = {}
        for cluster in config["static_resources"]["clusters"]:
            socket = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
            found[cluster["name"]] = (socket["socket_address"]["address"], socket["socket_address"]["port_value"])
        return found

    assert endpoints(local) == {
        "ingest": ("127.0.0.1", 50051),
        "retrieve": ("127.0.0.1", 50052),
        "chat": ("127.0.0.1", 6003),
        "shim": ("127.0.0.1", 8081),
    }
    assert endpoints(kube) == {
        "ingest": ("ingest", 50051),
        "retrieve": ("retrieve", 50052),
        "chat": ("chat", 50053),
        "shim": ("shim", 8081),
    }
    assert kube["static_resources"]["listeners"][0]["address"]["socket_address"]["address"] == "0.0.0.0"
    # The admin API answers anyone who reaches it: never on TCP. Locally a Unix socket of Envoy's user; none in a pod.
    assert "admin" not in kube
    assert local["admin"]["address"] == {
        "pipe": {"path": str(Settings().data_dir / "envoy" / "admin.sock"), "mode": 0o600}
    }
    assert _routes(local) == _routes(kube), "the same routes either way"


def test_a_bad_upstream_address_names_itself() -> None:
    with pytest.raises(ConfigError, match="'chat' is not host:port"):
        Upstream.parse("chat")
    assert Upstream.parse("[::1]:50053") == Upstream("::1", 50053)


def test_with_an_otlp_endpoint_envoy_reports_spans_there_checking_https_and_sending_the_headers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example.com")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret, x-team=notes")
    text = render(local_layout(Settings()))
    config = yaml.safe_load(text)
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    service = manager["tracing"]["provider"]["typed_config"]["http_service"]
    assert service["http_uri"]["uri"] == "https://collector.example.com/v1/traces"
    sent = {h["header"]["key"]: h["header"]["value"] for h in service["request_headers_to_add"]}
    assert sent == {"authorization": "Bearer s3cret", "x-team": "notes"}
    (collector,) = [c for c in config["static_resources"]["clusters"] if c["name"] == "trace_collector"]
    tls = collector["transport_socket"]["typed_config"]
    assert tls["sni"] == "collector.example.com"
    assert tls["common_tls_context"]["validation_context"]["trusted_ca"]["filename"].endswith(".crt")
    path = tmp_path / "envoy.yaml"
    path.write_text(text)
    validate(path)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    assert (
        "tracing"
        not in yaml.safe_load(render(local_layout(Settings())))["static_resources"]["listeners"][0]["filter_chains"][0][
            "filters"
        ][0]["typed_config"]
    ), "no endpoint, no tracer"


@pytest.mark.parametrize("endpoint", ["collector:4318", "http://collector:port", "ftp://collector"])
def test_an_otlp_endpoint_that_is_not_an_http_url_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, endpoint: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    with pytest.raises(ConfigError, match="not an http"):
        render(local_layout(Settings()))
