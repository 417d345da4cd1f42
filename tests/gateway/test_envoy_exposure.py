"""What a running Envoy gives away: its admin API only on a Unix socket its user can open, and no credential or
query string in its logs, even when secondbrain logs at debug (found by a probe: `POST /logging?http=debug` on the
loopback admin port made Envoy log `authorization: Bearer <token>`, and `POST /quitquitquit` stopped it)."""

from __future__ import annotations

import stat

import psutil
import pytest

from secondbrain.gateway.envoy import Envoy
from secondbrain.gateway.envoy_config import GatewayLayout, Upstream
from secondbrain.gateway.server import ENVOY_LOG_LEVEL
from tests.gateway.conftest import Gateway

TOKEN = "envoy-must-never-log-this-0123456789"


@pytest.fixture
async def guarded(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> Gateway:
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    await gateway.chat.configure()
    await gateway.start(envoy=False)
    return gateway


async def test_envoy_at_our_debug_level_listens_on_one_tcp_port_and_logs_no_token_or_query(
    guarded: Gateway, capfd: pytest.CaptureFixture[str]
) -> None:
    layout = GatewayLayout(
        listen_host="127.0.0.1",
        listen_port=0,
        admin_socket=guarded.workdir / "admin.sock",
        ingest=Upstream.parse(guarded.ingest_address),
        retrieve=Upstream.parse(guarded.chat.retrieve_address),
        chat=Upstream.parse(guarded.chat.chat_address),
        shim=Upstream.parse(guarded.shim_url.removeprefix("http://")),
    )
    envoy = await Envoy.start(layout, guarded.workdir, log_level=ENVOY_LOG_LEVEL["DEBUG"])
    try:
        listening = {
            connection.laddr.port
            for connection in psutil.Process(envoy.process.pid).net_connections(kind="inet")
            if connection.status == psutil.CONN_LISTEN
        }
        assert listening == {envoy.port}, "nothing but the gateway's own listener on TCP: no admin port"
        mode = (guarded.workdir / "admin.sock").stat().st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600, "the admin socket is its user's alone"

        async with guarded.client(f"http://127.0.0.1:{envoy.port}", authorization=f"Bearer {TOKEN}") as client:
            assert (await client.get("/api/chat/options")).status_code == 200
            # A token wrongly put in a query string, and search text, which is the user's business.
            await client.get("/api/chat/options", params={"access_token": TOKEN, "q": "my-private-search-words"})
    finally:
        await envoy.stop()
    output = capfd.readouterr()
    logged = output.out + output.err
    assert '"path":"/api/chat/options"' in logged, "the access log records the request"
    assert '"client":"127.0.0.1"' in logged, "and whom it came from (issue 47, friction 1)"
    assert TOKEN not in logged
    assert "my-private-search-words" not in logged
