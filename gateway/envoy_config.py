"""Envoy's configuration, rendered from the one template (`envoy.yaml.template`) for wherever it runs.

`local_layout` points Envoy at the services on this machine (their configured ports); `kubernetes_layout` at the
Kubernetes services by name. Both render the same routes, filters and timeouts: only addresses and origins differ.
"""

from __future__ import annotations

import json
import os
import resource
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import urlsplit

from secondbrain.config import Settings
from secondbrain.errors import ConfigError
from secondbrain.gateway.local_requests import FOREIGN_HOST_REFUSAL, LOOPBACK_NAMES
from secondbrain.service.listener_bounds import ENVOY_MAX_CONNECTIONS, envoy_max_connections
from secondbrain.service.tracing import otlp_headers, otlp_traces_endpoint

TEMPLATE = "envoy.yaml.template"
# A stream silent this long in both directions is stalled: a slow model still sends a token within it.
STREAM_IDLE_TIMEOUT_SECONDS = 300
# Unary calls (settings, conversations, search, status) answer in well under this.
UNARY_TIMEOUT_SECONDS = 60
# A client connection with no request in flight is closed after this (Envoy's default, an hour, let a probe hold ten
# thousand silent connections, every one Envoy would take, and lock everyone else out).
CONNECTION_IDLE_TIMEOUT_SECONDS = 60
# Envoy's admin API, locally: a Unix socket in its working directory that only its user can open (0600).
ADMIN_SOCKET = "admin.sock"
ADMIN_SOCKET_MODE = 0o600
# The longest path a Unix socket can have on Linux (sun_path is 108 bytes, one for the terminating NUL).
MAX_SOCKET_PATH_BYTES = 107


@dataclass(frozen=True)
class Upstream:
    host: str
    port: int

    @classmethod
    def parse(cls, address: str) -> Upstream:
        """`host:port` (or `[v6]:port`) as an Upstream; anything else is a ConfigError naming it."""
        host, separator, port = address.rpartition(":")
        if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{address!r} is not host:port")
        return cls(host.strip("[]"), int(port))


@dataclass(frozen=True)
class TlsFiles:
    """The certificate (PEM, its chain after it) and private key Envoy serves HTTPS with."""

    cert: Path
    key: Path


# What the first PEM block of each file must be: (the setting, what it should hold, the labels that are that).
_PEM_KINDS = {
    "cert": ("SECONDBRAIN_TLS_CERT", "a PEM certificate", ("CERTIFICATE",)),
    "key": ("SECONDBRAIN_TLS_KEY", "a PEM private key", ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")),
}


def tls_files(settings: Settings) -> TlsFiles | None:
    """The configured certificate and key as absolute paths, each checked to be a PEM file of its kind that this
    process (Envoy's user) can read, or None for plain HTTP. A ConfigError names the setting and says why, in one
    line, instead of Envoy's own words for it at start."""
    if settings.tls_cert is None or settings.tls_key is None:
        return None
    checked = {}
    for part, path in (("cert", settings.tls_cert), ("key", settings.tls_key)):
        name, kind, labels = _PEM_KINDS[part]
        try:
            text = path.read_text(encoding="ascii", errors="replace")
        except OSError as error:
            raise ConfigError(f"{name}: {path} cannot be read ({error.strerror or error})") from None
        first = next((line for line in text.splitlines() if line.startswith("-----BEGIN ")), "")
        if first.removeprefix("-----BEGIN ").removesuffix("-----") not in labels:
            raise ConfigError(f"{name}: {path} is not {kind} (no '-----BEGIN {labels[0]}-----' line)")
        checked[part] = path.resolve()
    return TlsFiles(**checked)


@dataclass(frozen=True)
class GatewayLayout:
    """Where Envoy listens and where each upstream is."""

    listen_host: str
    listen_port: int
    # Where the admin API listens (a Unix socket), or None for no admin API.
    admin_socket: Path | None
    ingest: Upstream
    retrieve: Upstream
    chat: Upstream
    shim: Upstream
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    trusted_proxy_hops: int = 0
    # With no API token the servers listen on loopback only, and Envoy answers only requests addressed to this
    # machine by a loopback name: a web page elsewhere could otherwise reach it by rebinding its own name to
    # 127.0.0.1 (DNS rebinding), and read the notes through grpc-web as a page of that name.
    loopback_names_only: bool = False
    # OTLP/HTTP traces endpoint (a whole URL): Envoy reports a span per request there, as the services do.
    trace_endpoint: str | None = None
    # With a certificate and key the listener serves HTTPS only (HTTP/2 or HTTP/1.1, chosen by ALPN).
    tls: TlsFiles | None = None
    # Client connections Envoy holds at once (listener_bounds.py).
    max_connections: int = ENVOY_MAX_CONNECTIONS


def local_layout(settings: Settings, *, listen_port: int | None = None) -> GatewayLayout:
    """Envoy on this machine in front of the configured services; the admin API on a Unix socket of its user's; its
    cap on connections within the file limit of this process, which Envoy inherits (`secondbrain serve envoy` execs
    it)."""
    return GatewayLayout(
        listen_host=settings.host,
        listen_port=settings.gateway_port if listen_port is None else listen_port,
        admin_socket=envoy_workdir(settings) / ADMIN_SOCKET,
        ingest=Upstream.parse(settings.address_of("ingest")),
        retrieve=Upstream.parse(settings.address_of("retrieve")),
        chat=Upstream.parse(settings.address_of("chat")),
        shim=Upstream.parse(settings.address_of("shim")),
        cors_origins=tuple(settings.cors_origins),
        trusted_proxy_hops=settings.trusted_proxy_hops,
        trace_endpoint=otlp_traces_endpoint(),
        loopback_names_only=not settings.token,
        tls=tls_files(settings),
        max_connections=envoy_max_connections(resource.getrlimit(resource.RLIMIT_NOFILE)[0]),
    )


def kubernetes_layout(settings: Settings) -> GatewayLayout:
    """Envoy in a pod: listening on every interface, upstreams by service name (headless services, so Envoy sees
    every pod), and no admin API: the probes go through the listener. Plain HTTP: in a cluster the Ingress holds the
    certificate and ends TLS (docs/deploy.md)."""
    return GatewayLayout(
        listen_host="0.0.0.0",
        listen_port=settings.gateway_port,
        admin_socket=None,
        ingest=Upstream("ingest", settings.ingest_port),
        retrieve=Upstream("retrieve", settings.retrieve_port),
        chat=Upstream("chat", settings.chat_port),
        shim=Upstream("shim", settings.shim_port),
        cors_origins=tuple(settings.cors_origins),
        trusted_proxy_hops=settings.trusted_proxy_hops,
        trace_endpoint=otlp_traces_endpoint(),
    )


def envoy_workdir(settings: Settings) -> Path:
    """Where a local Envoy keeps its rendered config and its admin socket."""
    return settings.data_dir / "envoy"


def _admin(socket: Path | None) -> str:
    """The template's admin part: a Unix socket only Envoy's user can open, or nothing."""
    if socket is None:
        return ""
    if len(os.fsencode(socket)) > MAX_SOCKET_PATH_BYTES:
        raise ConfigError(
            f"Envoy's admin socket {socket} is a longer path than a Unix socket can have "
            f"({MAX_SOCKET_PATH_BYTES} bytes): set SECONDBRAIN_DATA_DIR to a shorter one"
        )
    return "admin: " + json.dumps({"address": {"pipe": {"path": str(socket), "mode": ADMIN_SOCKET_MODE}}})


def _reachable(upstream: Upstream) -> Upstream:
    # A server bound to every interface is reached on loopback from the same machine.
    if upstream.host in ("0.0.0.0", "::"):
        return Upstream("127.0.0.1", upstream.port)
    return upstream


TRACE_COLLECTOR = "trace_collector"
# Where Envoy finds the certificates it checks an https collector against (Debian's, and Red Hat's).
SYSTEM_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
# Envoy sends its spans this often (its default is 5 s), or sooner once it holds 5.
TRACE_FLUSH_MILLISECONDS = 1000


def _tracing(endpoint: str | None) -> dict[str, str]:
    """The template's tracing parts, as YAML flow mappings (JSON): none when `endpoint` is None; else the OpenTelemetry
    tracer reporting to `endpoint`, the cluster that reaches it, and the runtime setting for its flush interval."""
    if endpoint is None:
        return {"tracing": "", "trace_collector_cluster": "", "layered_runtime": ""}
    url = urlsplit(endpoint)
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        port = 0
    if url.scheme not in ("http", "https") or not url.hostname or not port:
        raise ConfigError(f"the OTLP endpoint {endpoint!r} is not an http(s) URL (OTEL_EXPORTER_OTLP_ENDPOINT)")
    headers = [
        {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
        for key, value in otlp_headers().items()
    ]
    tracer = {
        "provider": {
            "name": "envoy.tracers.opentelemetry",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig",
                "http_service": {
                    "http_uri": {"uri": endpoint, "cluster": TRACE_COLLECTOR, "timeout": "2s"},
                    "request_headers_to_add": headers,
                },
                "service_name": "secondbrain-envoy",
            },
        }
    }
    address = {"socket_address": {"address": url.hostname, "port_value": port}}
    cluster: dict[str, Any] = {
        "name": TRACE_COLLECTOR,
        "type": "STRICT_DNS",
        "connect_timeout": "2s",
        "dns_lookup_family": "V4_PREFERRED",
        "load_assignment": {
            "cluster_name": TRACE_COLLECTOR,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": address}}]}],
        },
    }
    if url.scheme == "https":
        bundle = next((path for path in SYSTEM_CA_BUNDLES if Path(path).exists()), None)
        if bundle is None:
            raise ConfigError(
                f"Envoy cannot check the certificate of {endpoint}: no CA bundle at {' or '.join(SYSTEM_CA_BUNDLES)}"
                " (install ca-certificates, or use a collector on http)"
            )
        cluster["transport_socket"] = {
            "name": "envoy.transport_sockets.tls",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                "sni": url.hostname,
                "common_tls_context": {
                    "validation_context": {
                        "trusted_ca": {"filename": bundle},
                        "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": url.hostname}}],
                    }
                },
            },
        }
    runtime = {
        "layers": [
            {"name": "static", "static_layer": {"tracing.opentelemetry.flush_interval_ms": TRACE_FLUSH_MILLISECONDS}},
        ]
    }
    return {
        "tracing": f"tracing: {json.dumps(tracer)}",
        "trace_collector_cluster": f"- {json.dumps(cluster)}",
        "layered_runtime": f"layered_runtime: {json.dumps(runtime)}",
    }


def _downstream_tls(tls: TlsFiles | None) -> str:
    """The template's listener transport socket, as a YAML flow mapping (JSON): TLS with `tls`'s certificate, HTTP/2
    offered first by ALPN (a browser's fetches then share one connection), or nothing for plain HTTP."""
    if tls is None:
        return ""
    socket = {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "tls_certificates": [
                    {"certificate_chain": {"filename": str(tls.cert)}, "private_key": {"filename": str(tls.key)}}
                ],
                "alpn_protocols": ["h2", "http/1.1"],
            },
        },
    }
    return f"transport_socket: {json.dumps(socket)}"


def _hosts(loopback_names_only: bool) -> dict[str, str]:
    """The names the listener answers (`domains`) and, when only loopback names are, a virtual host after it that
    refuses every other name in words (`foreign_hosts`; blank otherwise)."""
    if not loopback_names_only:
        return {"domains": json.dumps(["*"]), "foreign_hosts": ""}
    refusal = {
        "name": "not-this-machine",
        "domains": ["*"],
        "routes": [
            {
                "match": {"prefix": "/"},
                "direct_response": {"status": 403, "body": {"inline_string": FOREIGN_HOST_REFUSAL + "\n"}},
            }
        ],
    }
    # Envoy tries exact and suffix names before the catch-all, whatever the order the hosts are listed in.
    return {"domains": json.dumps(list(LOOPBACK_NAMES)), "foreign_hosts": f"- {json.dumps(refusal)}"}


def render(layout: GatewayLayout) -> str:
    """The Envoy YAML for `layout`. Values go in as JSON scalars, which YAML reads as they are."""
    template = Template(resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8"))
    values: dict[str, object] = {
        "admin": _admin(layout.admin_socket),
        "listen_host": json.dumps(layout.listen_host),
        "listen_port": layout.listen_port,
        "stream_idle_timeout": f"{STREAM_IDLE_TIMEOUT_SECONDS}s",
        "unary_timeout": f"{UNARY_TIMEOUT_SECONDS}s",
        "cors_origins": json.dumps([{"exact": origin} for origin in layout.cors_origins]),
        "trusted_proxy_hops": layout.trusted_proxy_hops,
        "connection_idle_timeout": f"{CONNECTION_IDLE_TIMEOUT_SECONDS}s",
        "max_connections": layout.max_connections,
        "transport_socket": _downstream_tls(layout.tls),
        **_tracing(layout.trace_endpoint),
        **_hosts(layout.loopback_names_only),
    }
    for name in ("ingest", "retrieve", "chat", "shim"):
        upstream: Upstream = getattr(layout, name)
        values[f"{name}_host"] = json.dumps(_reachable(upstream).host)
        values[f"{name}_port"] = upstream.port
    # An optional part left out leaves its line blank.
    return "\n".join(line.rstrip() for line in template.substitute(values).splitlines()) + "\n"
