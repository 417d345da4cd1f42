"""A command's expected failures as a person meets them: one line saying what is wrong, never a traceback; and `up`
refusing what it cannot do before it claims anything (the database, a server, a port)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.command import secondbrain
from tests.reliability.cluster import free_ports

SERVERS = ("ingest", "retrieve", "chat", "shim", "gateway")


def _no_traceback(result) -> None:
    said = result.stdout + result.stderr
    assert "Traceback" not in said and 'File "' not in said, said


def _said_in_one_line(result) -> str:
    """The command's own message: its last `secondbrain: ...` line on stderr, the end of what it wrote (before it,
    what it said it was doing: working in its own process, preparing the database). An invalid setting's message
    has its key on a line of its own, under it."""
    _no_traceback(result)
    lines = result.stderr.strip().splitlines()
    ours = [i for i, line in enumerate(lines) if line.startswith("secondbrain: ")]
    assert ours, result.stderr
    message = lines[ours[-1] :]
    assert len(message) == 1 or (len(message) == 2 and "invalid configuration" in message[0]), result.stderr
    return "\n".join(message)


@pytest.fixture
def embedded_env(service_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`up` on the embedded PostgreSQL of a data directory of the test's own, on free ports: what it would start is
    seen on disk (the embedded server's data directory)."""
    env = {key: value for key, value in service_env.items() if key != "DATABASE_URL"}
    env["SECONDBRAIN_DATA_DIR"] = str(tmp_path / "embedded")
    env.update(
        {f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in zip(SERVERS, free_ports(5), strict=True)}
    )
    return env


@pytest.fixture
def held_port() -> Iterator[tuple[socket.socket, int]]:
    """A port this test process listens on, as another program would."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener, listener.getsockname()[1]


def test_up_refuses_a_missing_vault_in_one_line(embedded_env: dict[str, str], tmp_path: Path) -> None:
    result = secondbrain("up", "--vault", str(tmp_path / "No Such Vault"), env=embedded_env)
    assert result.returncode == 1
    assert _said_in_one_line(result) == (
        f"secondbrain: the vault folder {tmp_path / 'No Such Vault'} does not exist: give the folder of your notes"
    )
    assert not (tmp_path / "embedded").exists(), "nothing was started"
    # As `ingest` says it, with the same exit code.
    ingest = secondbrain("ingest", str(tmp_path / "No Such Vault"), env=embedded_env)
    assert ingest.returncode == 1 and _said_in_one_line(ingest) == _said_in_one_line(result)


def test_up_refuses_a_taken_port_before_it_starts_anything(
    embedded_env: dict[str, str], held_port: tuple[socket.socket, int], tmp_path: Path
) -> None:
    _, port = held_port
    env = {**embedded_env, "SECONDBRAIN_RETRIEVE_PORT": str(port)}
    result = secondbrain("up", env=env)
    assert result.returncode == 1
    message = _said_in_one_line(result)
    assert message.startswith(f"secondbrain: port {port} (SECONDBRAIN_RETRIEVE_PORT, for retrieve) is in use by pid "
                              f"{os.getpid()} ("), message  # fmt: skip
    assert message.endswith("; nothing was started: stop what holds it or choose another port"), message
    assert "preparing the database" not in result.stderr and not (tmp_path / "embedded").exists()


def test_up_names_every_port_it_cannot_use(
    embedded_env: dict[str, str], held_port: tuple[socket.socket, int], tmp_path: Path
) -> None:
    """A metrics port (a gRPC service's port + 1000) counts as one of its ports; two servers given one port are
    refused before either is started."""
    _, port = held_port
    gateway = embedded_env["SECONDBRAIN_GATEWAY_PORT"]
    env = {**embedded_env, "SECONDBRAIN_CHAT_PORT": str(port - 1000), "SECONDBRAIN_SHIM_PORT": gateway}
    result = secondbrain("up", env=env)
    assert result.returncode == 1
    _no_traceback(result)
    lines = result.stderr.splitlines()
    assert (
        lines[0] == "secondbrain: 2 ports cannot be used; nothing was started: stop what holds them or choose others:"
    )
    assert (
        f"  port {gateway} is wanted by both shim (SECONDBRAIN_SHIM_PORT) and envoy (SECONDBRAIN_GATEWAY_PORT)" in lines
    )
    assert any(
        line.startswith(f"  port {port} (SECONDBRAIN_CHAT_PORT + 1000, for chat's metrics) is in use by pid")
        for line in lines
    ), lines
    assert not (tmp_path / "embedded").exists()


def test_up_refuses_one_metrics_port_for_three_services(embedded_env: dict[str, str], tmp_path: Path) -> None:
    result = secondbrain("up", env={**embedded_env, "SECONDBRAIN_METRICS_PORT": str(free_ports(1)[0])})
    assert result.returncode == 1
    message = _said_in_one_line(result)
    assert "is wanted by ingest's metrics, retrieve's metrics and chat's metrics at once" in message, message
    assert message.endswith("unset SECONDBRAIN_METRICS_PORT, and each serves its metrics at its own port + 1000")
    assert not (tmp_path / "embedded").exists()


def test_serve_refuses_a_taken_port_in_one_line(
    service_env: dict[str, str], held_port: tuple[socket.socket, int]
) -> None:
    _, port = held_port
    for server in ("ingest", "shim", "envoy"):
        result = secondbrain("serve", server, "--port", str(port), env=service_env)
        assert result.returncode == 1, server
        assert _said_in_one_line(result).startswith(f"secondbrain: port {port} (--port, for {server}) is in use by pid")


# -- every command's expected failures --------------------------------------------------------------------------


def _bad_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "bad-vault"
    vault.mkdir(exist_ok=True)
    (vault / "secondbrain.json").write_text('{"chat": {"default_provider": "openai"},\n "oops"}', encoding="utf-8")
    return vault


UNREACHABLE_DATABASE = "postgresql://me:hunter2@127.0.0.1:9/notes"

# (what is wrong, the command's arguments, settings over the test's, the message's first words); "{tmp}" is the
# test's directory. Exit 1 for a failure of the run, 2 for a bad argument (Typer's usage error).
FAILURES = [
    ("database unreachable", ["status"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect to PostgreSQL"),
    ("database unreachable", ["ingest", "{tmp}"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["search", "tomatoes"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["retrieve", "tomatoes"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["ask", "tomatoes?"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["migrate"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["mcp"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("database unreachable", ["serve", "chat", "--port", "0"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot"),
    ("database unreachable", ["up"], {"DATABASE_URL": UNREACHABLE_DATABASE}, "cannot connect"),
    ("service down", ["search", "tomatoes", "--address", "127.0.0.1:9"], {}, "no retrieve service answers"),
    ("service down", ["retrieve", "tomatoes", "--address", "127.0.0.1:9"], {}, "no retrieve service answers"),
    ("service down", ["ask", "tomatoes?", "--address", "127.0.0.1:9"], {}, "no chat service answers"),
    ("service down", ["status", "--address", "127.0.0.1:9"], {}, "no ingest service answers"),
    ("service down", ["ingest", "{tmp}", "--address", "127.0.0.1:9"], {}, "no ingest service answers"),
    ("no such conversation", ["ask", "tomatoes?", "--conversation", "not-an-id"], {}, ""),
    ("missing folder", ["ingest", "{tmp}/nowhere"], {}, "the vault folder"),
    ("missing folder", ["up", "--vault", "{tmp}/nowhere"], {}, "the vault folder"),
    ("missing folder", ["eval", "--vault", "{tmp}/nowhere"], {}, "the vault folder"),
    ("missing file", ["eval", "--qa", "{tmp}/nowhere.jsonl"], {}, "no question file"),
    ("missing folder", ["gateway-config", "-o", "{tmp}/nowhere/envoy.yaml"], {}, "cannot write"),
    ("a file, not a folder", ["ingest", "{tmp}/bad-vault/secondbrain.json"], {}, "the vault folder"),
    ("bad settings file", ["status"], {"SECONDBRAIN_VAULT": "{tmp}/bad-vault"}, "{tmp}/bad-vault/secondbrain.json"),
    ("bad settings file", ["search", "tomatoes"], {"SECONDBRAIN_VAULT": "{tmp}/bad-vault"}, "{tmp}/bad-vault/"),
    ("bad settings file", ["ask", "tomatoes?"], {"SECONDBRAIN_VAULT": "{tmp}/bad-vault"}, "{tmp}/bad-vault/"),
    ("bad settings file", ["up", "--vault", "{tmp}/bad-vault"], {}, "{tmp}/bad-vault/secondbrain.json"),
    ("bad settings file", ["mcp"], {"SECONDBRAIN_VAULT": "{tmp}/bad-vault"}, "{tmp}/bad-vault/"),
    (
        "bad setting",
        ["retrieve", "tomatoes"],
        {"SECONDBRAIN_RETRIEVE_PORT": "seventy"},
        "invalid configuration in the environment:\nSECONDBRAIN_RETRIEVE_PORT: ",
    ),
    (
        "bad setting",
        ["up"],
        {"SECONDBRAIN_GATEWAY_PORT": "seventy"},
        "invalid configuration in the environment:\nSECONDBRAIN_GATEWAY_PORT: ",
    ),
    ("bad argument", ["search", "tomatoes", "--mode", "fuzzy"], {}, None),
    ("bad argument", ["retrieve", "tomatoes", "--passages", "99"], {}, None),
    ("bad argument", ["ask", "tomatoes?", "--since", "yesterday"], {}, None),
    ("bad argument", ["serve", "gateway"], {}, None),
]


@pytest.mark.parametrize(("wrong", "args", "settings", "message"), FAILURES, ids=[" ".join(f[1][:2]) + f": {f[0]}"
                                                                                   for f in FAILURES])  # fmt: skip
def test_an_expected_failure_is_one_line_not_a_traceback(
    wrong: str, args: list[str], settings: dict[str, str], message: str | None, service_env: dict[str, str],
    tmp_path: Path,
) -> None:  # fmt: skip
    _bad_vault(tmp_path)
    env = {**service_env, "SECONDBRAIN_DB_CONNECT_TIMEOUT_SECONDS": "3", "COLUMNS": "200"}
    # Nothing runs at the configured ports: a command works in its own process.
    env.update(
        {f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in zip(SERVERS, free_ports(5), strict=True)}
    )
    env.update({key: value.replace("{tmp}", str(tmp_path)) for key, value in settings.items()})
    result = secondbrain(*(arg.replace("{tmp}", str(tmp_path)) for arg in args), env=env, timeout=120)
    if message is None:  # a usage error: Typer's, naming the option, exit 2
        assert result.returncode == 2, result.stderr
        _no_traceback(result)
        assert "Invalid value" in result.stderr or "Usage:" in result.stderr, result.stderr
        return
    assert result.returncode == 1, (result.returncode, result.stderr)
    line = _said_in_one_line(result)
    assert line.startswith("secondbrain: " + message.replace("{tmp}", str(tmp_path))), line
    assert "hunter2" not in result.stderr


def test_a_service_refuses_a_vault_that_sends_prompts_to_its_own_url(
    service_env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 47, friction 10: a vault's settings may add a provider at a URL of its own only with the operator's
    leave, so whoever can write in the vault cannot have every prompt and its passages sent to them."""
    vault = tmp_path / "shared-vault"
    vault.mkdir()
    provider = {"protocol": "openai", "base_url": "https://collector.example/v1", "models": [{"id": "m"}]}
    settings = {"chat": {"default_provider": "mine", "providers": {"mine": provider}}}
    (vault / "secondbrain.json").write_text(json.dumps(settings), encoding="utf-8")
    env = {**service_env, "SECONDBRAIN_VAULT": str(vault), "COLUMNS": "200"}
    result = secondbrain("serve", "chat", "--port", "0", env=env, timeout=120)
    assert result.returncode == 1, result.stderr
    line = _said_in_one_line(result)
    assert line.startswith(f"secondbrain: {vault}/secondbrain.json: chat.providers.mine.base_url names an endpoint")
    assert "SECONDBRAIN_ALLOW_VAULT_PROVIDERS=1" in line
