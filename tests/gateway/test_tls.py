"""Envoy serving HTTPS (SECONDBRAIN_TLS_CERT and SECONDBRAIN_TLS_KEY) with a certificate made in the test: grpc-web,
REST and the web UI answer over it, checked against the test's CA; HTTP/2 is agreed by ALPN and a gRPC call runs
over it; a configuration with half the pair, or a file that is not what it should be, is refused in a line that
names the setting."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx2
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.config import Settings, load_settings
from secondbrain.errors import ConfigError
from secondbrain.gateway.envoy import Envoy
from secondbrain.gateway.envoy_config import local_layout, render
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from tests.gateway.conftest import Gateway
from tests.gateway.grpc_web import call
from tests.gateway.tls import Certificates, make_certificates, start_envoy


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path / "certs")


@pytest.fixture
async def https_envoy(gateway: Gateway, certificates: Certificates, tmp_path: Path) -> AsyncIterator[Envoy]:
    envoy = await start_envoy(gateway, tmp_path / "envoy-tls", tls=certificates.tls, loopback_names_only=True)
    try:
        yield envoy
    finally:
        await envoy.stop()


def _trusting(certificates: Certificates) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificates.ca))


async def test_grpc_web_rest_and_the_ui_answer_over_https_checked_against_the_ca(
    https_envoy: Envoy, certificates: Certificates
) -> None:
    url = f"https://localhost:{https_envoy.port}"
    async with httpx2.AsyncClient(base_url=url, verify=_trusting(certificates), timeout=30.0) as client:
        search = await call(
            client, "/secondbrain.retrieve.v1.RetrieveService/Search", retrieve.SearchRequest(query="Lisbon")
        )
        assert search.grpc_status == 0, search.grpc_message
        assert search.decode(retrieve.SearchResponse)[0].hits[0].path == "Travel.md"
        status = await client.get("/api/index/status")
        assert status.status_code == 200 and status.json()["notes"] == 3
        page = await client.get("/")
        assert page.status_code == 200 and '<div id="root">' in page.text
    # It is TLS for real: a client that does not know the CA refuses the certificate, and plain HTTP gets no answer.
    async with httpx2.AsyncClient(timeout=10.0) as stranger:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await stranger.get(f"{url}/")
        with pytest.raises(httpx2.HTTPError):
            await stranger.get(f"http://localhost:{https_envoy.port}/")


async def test_http2_is_agreed_by_alpn_and_grpc_runs_over_tls(https_envoy: Envoy, certificates: Certificates) -> None:
    async def agreed(offered: list[str]) -> str | None:
        context = _trusting(certificates)
        context.set_alpn_protocols(offered)
        _, writer = await asyncio.open_connection(
            "127.0.0.1", https_envoy.port, ssl=context, server_hostname="localhost"
        )
        try:
            return writer.get_extra_info("ssl_object").selected_alpn_protocol()
        finally:
            writer.close()
            await writer.wait_closed()

    assert await agreed(["h2", "http/1.1"]) == "h2"
    assert await agreed(["http/1.1"]) == "http/1.1"

    # gRPC itself needs HTTP/2 by ALPN over TLS: a real client, trusting only the test's CA.
    credentials = grpc.ssl_channel_credentials(root_certificates=certificates.ca.read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{https_envoy.port}", credentials) as channel:
        options = await chat_grpc.ChatServiceStub(channel).GetOptions(chat.GetOptionsRequest(), timeout=30)
    assert "openai" in [provider.id for provider in options.providers]


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("SECONDBRAIN_"):
            monkeypatch.delenv(key)


@pytest.mark.usefixtures("no_settings")
@pytest.mark.parametrize(("given", "missing"), [("CERT", "KEY"), ("KEY", "CERT")])
def test_half_the_pair_is_refused_naming_both_settings(
    given: str, missing: str, certificates: Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"SECONDBRAIN_TLS_{given}", str(certificates.cert if given == "CERT" else certificates.key))
    with pytest.raises(ConfigError) as raised:
        load_settings()
    problem = str(raised.value).splitlines()[-1]
    assert f"SECONDBRAIN_TLS_{given} is set but SECONDBRAIN_TLS_{missing} is not" in problem


@pytest.mark.usefixtures("no_settings")
def test_a_file_that_cannot_be_read_or_is_not_its_kind_is_refused_in_one_line(
    certificates: Certificates, tmp_path: Path
) -> None:
    def refusal(cert: Path, key: Path) -> str:
        with pytest.raises(ConfigError) as raised:
            local_layout(Settings(tls_cert=cert, tls_key=key))
        message = str(raised.value)
        assert "\n" not in message
        return message

    missing = tmp_path / "nowhere.pem"
    assert refusal(missing, certificates.key) == (
        f"SECONDBRAIN_TLS_CERT: {missing} cannot be read (No such file or directory)"
    )
    assert refusal(certificates.cert, tmp_path) == f"SECONDBRAIN_TLS_KEY: {tmp_path} cannot be read (Is a directory)"
    # The two swapped: each is named for what it should have been.
    assert refusal(certificates.key, certificates.cert) == (
        f"SECONDBRAIN_TLS_CERT: {certificates.key} is not a PEM certificate (no '-----BEGIN CERTIFICATE-----' line)"
    )
    assert refusal(certificates.cert, certificates.cert).startswith(
        f"SECONDBRAIN_TLS_KEY: {certificates.cert} is not a PEM private key"
    )
    # The right pair renders a listener that serves only TLS, with both files by their absolute paths.
    text = render(local_layout(Settings(tls_cert=certificates.cert, tls_key=certificates.key)))
    assert text.count("DownstreamTlsContext") == 1
    assert str(certificates.cert.resolve()) in text and str(certificates.key.resolve()) in text
    assert "DownstreamTlsContext" not in render(local_layout(Settings()))
