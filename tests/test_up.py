"""`secondbrain up` (what `make run` calls): every server supervised as one process tree, the vault indexed."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import re
import shutil
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import grpc
import httpx2
import psutil
import pytest

from secondbrain.cli.supervisor import RunLogs
from secondbrain.config import Settings
from secondbrain.ingest.v1 import ingest_service_pb2 as ingest_pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as ingest_grpc
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve_pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as retrieve_grpc
from secondbrain.service.health_client import check_health
from tests.command import run_secondbrain
from tests.gateway.conftest import parse_sse
from tests.reliability.cluster import free_ports

GRPC = ("ingest", "retrieve", "chat")
DEMO_VAULT = Path(__file__).resolve().parents[1] / "demo" / "vault"


async def _read_until(stream: asyncio.StreamReader, marker: str, seen: list[str]) -> None:
    while line := await asyncio.wait_for(stream.readline(), 90):
        seen.append(line.decode(errors="replace"))
        if marker in seen[-1]:
            return
    raise AssertionError("output ended before " + repr(marker) + ":\n" + "".join(seen))


@pytest.fixture
async def start_up(service_env: dict[str, str]):
    """Starts `secondbrain up *args` on free ports and waits until it says it is up; afterwards kills whatever of
    its tree is left (its children run in sessions of their own, so killing it alone would orphan them)."""
    started: list[asyncio.subprocess.Process] = []
    tree: list[psutil.Process] = []

    async def start(*args: str, base_env: dict[str, str] | None = None):
        ports = dict(zip(("ingest", "retrieve", "chat", "shim", "gateway"), free_ports(5), strict=True))
        env = {**(base_env or service_env)}
        env.update({f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()})
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "secondbrain", "up", *args, env=env, stderr=asyncio.subprocess.PIPE
        )
        started.append(process)
        seen: list[str] = []
        assert process.stderr is not None
        await _read_until(process.stderr, "secondbrain is up", seen)
        tree.extend(psutil.Process(process.pid).children(recursive=True))
        await _read_until(process.stderr, "Press Ctrl-C to stop", seen)
        return process, ports, seen

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()
    for child in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()


@pytest.fixture
async def up(start_up):
    return await start_up()


async def test_up_serves_everything_and_ctrl_c_stops_it(up) -> None:
    process, ports, seen = up
    output = "".join(seen)
    for name in GRPC:
        assert f"grpc://127.0.0.1:{ports[name]}" in output
        assert await check_health(f"127.0.0.1:{ports[name]}") == "SERVING", name
    gateway = f"http://127.0.0.1:{ports['gateway']}/"
    assert f"envoy     {gateway}" in output and f"Open {gateway} in a browser" in output
    assert "loopback only" in output
    async with httpx2.AsyncClient(base_url=gateway, timeout=10) as client:
        options = await client.get("/api/chat/options")
        assert options.status_code == 200 and options.json()["providers"], "REST through Envoy to chat"
        assert (await client.get(f"http://127.0.0.1:{ports['shim']}/healthz")).status_code == 200
    children = psutil.Process(process.pid).children()
    # Five children, Envoy among them as itself (exec'd), so nothing of it can outlive the run.
    assert len(children) == 5 and any(child.name() == "envoy" for child in children)
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    for name in GRPC:
        assert await check_health(f"127.0.0.1:{ports[name]}", rpc_timeout=1) == "UNREACHABLE"
    for name in ("shim", "gateway"):
        with pytest.raises(httpx2.ConnectError):
            async with httpx2.AsyncClient(timeout=2) as client:
                await client.get(f"http://127.0.0.1:{ports[name]}/healthz")


async def test_a_dying_child_stops_the_run_and_says_which(up) -> None:
    process, ports, seen = up
    retrieve = next(child for child in psutil.Process(process.pid).children() if "retrieve" in child.cmdline())
    retrieve.kill()
    assert process.stderr is not None
    await _read_until(process.stderr, "stopping everything", seen)
    assert "the retrieve server exited" in seen[-1]
    assert await asyncio.wait_for(process.wait(), 60) == 1
    assert await check_health(f"127.0.0.1:{ports['chat']}", rpc_timeout=1) == "UNREACHABLE"


async def test_a_second_up_beside_a_running_one_is_refused_before_it_claims_anything(
    up, service_env: dict[str, str]
) -> None:
    """Found by a user: a second `up` said "secondbrain is up" (the first one's ingest answered its health check, a
    gRPC server sharing the port) and died two seconds later with a traceback. Now it names the ports and who holds
    them, and starts nothing."""
    process, ports, _ = up
    env = {**service_env, **{f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()}}
    code, stdout, stderr = await run_secondbrain("up", env=env)
    said = stdout + stderr
    assert code == 1, said
    assert "secondbrain is up" not in said and "Traceback" not in said and "preparing the database" not in said, said
    lines = stderr.splitlines()
    assert lines[0].startswith("secondbrain: 8 ports cannot be used; nothing was started"), said
    ingest = next(child for child in psutil.Process(process.pid).children() if "ingest" in child.cmdline())
    assert f"  port {ports['ingest']} (SECONDBRAIN_INGEST_PORT, for ingest) is in use by pid {ingest.pid} " \
        "(secondbrain serve ingest)" in lines, said  # fmt: skip
    assert f"  port {ports['ingest'] + 1000} (SECONDBRAIN_INGEST_PORT + 1000, for ingest's metrics) is in use by pid " \
        f"{ingest.pid} (secondbrain serve ingest)" in lines, said  # fmt: skip
    assert any(line.startswith(f"  port {ports['gateway']} (SECONDBRAIN_GATEWAY_PORT, for envoy) is in use by pid")
               for line in lines), said  # fmt: skip
    # The running one is untouched.
    assert await check_health(f"127.0.0.1:{ports['ingest']}") == "SERVING"
    assert process.returncode is None


async def test_up_indexes_the_vault_and_answers_a_question_through_the_gateway_with_citations(start_up) -> None:
    vault = DEMO_VAULT
    process, ports, seen = await start_up("--vault", str(vault))
    output = "".join(seen)
    assert f"indexing {vault}" in output and re.search(r"Synced \d+ files", output), output
    assert ", 0 failed" in output
    # "Up" means ready for the first question: the vault indexed before it is said.
    assert output.index("Synced") < output.index("secondbrain is up"), output
    # Not a terminal: JSON lines, with no colour codes in them (uvicorn's), and the token warning every server
    # would give said once, by `up`.
    assert '"service": "shim"' in output and "\x1b" not in output and "\\u001b" not in output, output
    assert output.count("SECONDBRAIN_API_TOKEN") == 1, output
    children = psutil.Process(process.pid).children(recursive=True)

    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{ports['gateway']}", timeout=60) as client:
        conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]
        question = "When should I water the tomatoes?"
        reply = await client.post(f"/api/chat/conversations/{conversation['id']}/messages", json={"content": question})
    events = parse_sse(reply.text)
    assert events[0].event == "sources" and events[-1].event == "done", events[-1]
    passages = events[0].data["retrieval"]["passages"]
    assert passages[0]["notePath"] == "Areas/Garden/Vegetable Beds.md"
    answer = "".join(e.data["text"] for e in events if e.event == "delta")
    assert "every morning before nine" in answer.lower() and re.search(r"\[\d+\]", answer), answer

    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0
    await asyncio.sleep(0.5)
    left = [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running after Ctrl-C: {[child.cmdline() for child in left]}"

    # A second run reuses the data: nothing is added again.
    process, _, seen = await start_up("--vault", str(vault))
    again = "".join(seen)
    assert re.search(r"Synced (\d+) files .*: 0 added, 0 updated, \1 unchanged", again), again
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0


async def _said(stream: asyncio.StreamReader, line: str, seen: list[str]) -> None:
    """Read until `up` says `line` itself (not a server's log line mentioning it)."""
    while not seen or not seen[-1].startswith(line):
        await _read_until(stream, line, seen)


async def _search(retrieve: str, words: str) -> list[str]:
    """The paths of the notes a keyword search for `words` finds, through the running retrieve service."""
    request = retrieve_pb.SearchRequest(query=words, mode=retrieve_pb.SEARCH_MODE_KEYWORD, limit=10)
    async with grpc.aio.insecure_channel(retrieve) as channel:
        response = await retrieve_grpc.RetrieveServiceStub(channel).Search(request, timeout=30)
    return [hit.path for hit in response.hits]


async def _index_status(ingest: str) -> ingest_pb.GetIndexStatusResponse:
    async with grpc.aio.insecure_channel(ingest) as channel:
        stub = ingest_grpc.IngestServiceStub(channel)
        return await stub.GetIndexStatus(ingest_pb.GetIndexStatusRequest(), timeout=30)


async def test_up_watches_the_vault_an_edit_a_new_note_and_a_deletion_each_picked_up(start_up, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    process, ports, seen = await start_up("--vault", str(vault))
    output = "".join(seen)
    assert f"watching {vault} for changes" in output, output
    assert output.index("watching") < output.index("secondbrain is up"), "watching before it says it is up"
    ingest, retrieve = f"127.0.0.1:{ports['ingest']}", f"127.0.0.1:{ports['retrieve']}"
    status = await _index_status(ingest)
    assert status.watching and status.pending_changes == 0 and status.HasField("last_change")
    assert process.stderr is not None

    journal = vault / "Journal" / "2026-01-03.md"
    journal.write_text(journal.read_text(encoding="utf-8") + "\nThe quincunx hedge needs trimming.\n", encoding="utf-8")
    await _said(process.stderr, "updated Journal/2026-01-03.md", seen)
    assert await _search(retrieve, "quincunx") == ["Journal/2026-01-03.md"]

    (vault / "Ideas").mkdir()
    (vault / "Ideas" / "Greenhouse.md").write_text("# Greenhouse\n\nA zymurgy corner for cider.\n", encoding="utf-8")
    await _said(process.stderr, "added Ideas/Greenhouse.md", seen)
    assert await _search(retrieve, "zymurgy") == ["Ideas/Greenhouse.md"]

    lisbon = "Projects/Lisbon Trip.md"
    assert lisbon in await _search(retrieve, "Lisbon")
    (vault / lisbon).unlink()
    await _said(process.stderr, f"deleted {lisbon}", seen)
    assert lisbon not in await _search(retrieve, "Lisbon")

    (vault / "Broken.md").write_bytes(b"half a note\x00")
    await _said(process.stderr, "failed Broken.md", seen)
    assert "NUL byte" in seen[-1], "a failure comes with its reason"
    assert (await _index_status(ingest)).pending_changes == 0
    changes = [line.strip() for line in seen if re.match(r"(added|updated|deleted|failed) ", line)]
    assert changes[:3] == ["updated Journal/2026-01-03.md", "added Ideas/Greenhouse.md", f"deleted {lisbon}"], changes
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0


async def test_up_with_no_watch_indexes_once(start_up, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    process, ports, seen = await start_up("--vault", str(vault), "--no-watch")
    assert "watching" not in "".join(seen)
    status = await _index_status(f"127.0.0.1:{ports['ingest']}")
    assert not status.watching and status.notes > 0
    (vault / "Unwatched.md").write_text("# Unwatched\n\nA xylophone.\n", encoding="utf-8")
    await asyncio.sleep(2)
    assert await _search(f"127.0.0.1:{ports['retrieve']}", "xylophone") == []
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0


# -- at a terminal -------------------------------------------------------------------------------------------------


class Terminal:
    """A pseudo-terminal (120 columns), as a person's: what a process writes to it is read into `output`."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.output = bytearray()
        self.closed = False
        self._more = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.master, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every process holding the terminal has closed it
            chunk = b""
        if not chunk:
            self.closed = True
            asyncio.get_running_loop().remove_reader(self.master)
        self.output += chunk
        self._more.set()

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    async def wait_for(self, marker: str, within: float = 120) -> None:
        deadline = time.monotonic() + within
        while marker not in self.text:
            if self.closed or time.monotonic() > deadline:
                raise AssertionError(f"no {marker!r} on the terminal:\n{self.text}")
            self._more.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._more.wait(), 1)

    def close(self) -> None:
        if not self.closed:
            asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)


def _screen_lines(output: str) -> list[str]:
    """The lines a person sees: colours and cursor codes left out, each progress-bar redraw (a carriage return)
    a line of its own."""
    plain = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", output)
    return [line for line in re.split(r"[\r\n]+", plain) if line.strip()]


def test_at_a_terminal_the_servers_say_only_their_warnings_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in [key for key in os.environ if key.startswith("SECONDBRAIN_")]:
        monkeypatch.delenv(key)
    assert RunLogs.of(Settings(log_format="text")) == RunLogs(level="WARNING", format="text", said=("no-token",))
    assert RunLogs.of(Settings(log_format="text", log_level="INFO")).level == "INFO"
    assert RunLogs.of(Settings(log_format="json")).level == "INFO"
    assert RunLogs.of(Settings(log_format="json", api_token="a-token-0123456789")).said == ()


async def test_at_a_terminal_up_writes_text_and_says_it_is_up_once_the_vault_is_indexed(
    service_env: dict[str, str],
) -> None:
    """At a terminal: short text lines from every process (at INFO here, so each writes some), the progress of the
    index, then the banner; no JSON, and the token warning once."""
    env = {key: value for key, value in service_env.items() if key != "SECONDBRAIN_LOG_FORMAT"}
    env["SECONDBRAIN_LOG_LEVEL"] = "INFO"
    names = (*GRPC, "shim", "gateway")
    env.update({f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in zip(names, free_ports(5), strict=True)})
    terminal = Terminal()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "up", "--vault", str(DEMO_VAULT), env=env,
        stdin=terminal.slave, stdout=terminal.slave, stderr=terminal.slave,
    )  # fmt: skip
    os.close(terminal.slave)
    tree: list[psutil.Process] = []
    try:
        await terminal.wait_for("secondbrain is up")
        tree = psutil.Process(process.pid).children(recursive=True)
        await terminal.wait_for("Press Ctrl-C to stop")
        lines = _screen_lines(terminal.text)
        said = "\n".join(lines)
        # Not even after a progress bar's redraw, on its line.
        assert not re.search(r'\{"\w+": ?', said), said
        for server in ("up", "ingest", "retrieve", "chat", "shim", "envoy"):
            assert re.search(rf"^\d\d:\d\d:\d\d {server} +INFO +\S", said, re.MULTILINE), f"{server}:\n{said}"
        notes = sum(1 for path in DEMO_VAULT.rglob("*.md") if not path.relative_to(DEMO_VAULT).parts[0].startswith("."))
        synced = next(i for i, line in enumerate(lines) if line.startswith(f"Synced {notes} files"))
        up = lines.index("secondbrain is up:")
        assert synced < up and "Press Ctrl-C to stop." in lines[up:], said
        assert said.count("SECONDBRAIN_API_TOKEN") == 1, said
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 60) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for child in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        terminal.close()


# -- the embedded PostgreSQL ends with the run, however the run ends ----------------------------------------------


@pytest.fixture
def embedded_env(service_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`up` on the embedded PostgreSQL (no DATABASE_URL), with a data directory of the test's own."""
    env = {key: value for key, value in service_env.items() if key != "DATABASE_URL"}
    env["SECONDBRAIN_DATA_DIR"] = str(tmp_path / "embedded")
    return env


def _postmaster(env: dict[str, str]) -> psutil.Process | None:
    """The embedded server of `env`'s data directory, if one runs."""
    pid_file = Path(env["SECONDBRAIN_DATA_DIR"]) / "postgres" / "postmaster.pid"
    if not pid_file.exists():
        return None
    with contextlib.suppress(psutil.NoSuchProcess, ValueError, IndexError):
        process = psutil.Process(int(pid_file.read_text().split()[0]))
        if process.status() != psutil.STATUS_ZOMBIE:
            return process
    return None


async def _gone(process: psutil.Process, within: float = 30.0) -> bool:
    for _ in range(int(within * 10)):
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.fixture
async def embedded_cleanup(embedded_env: dict[str, str]):
    yield embedded_env
    if (left := _postmaster(embedded_env)) is not None:
        left.kill()


async def test_ctrl_c_stops_the_embedded_postgres(start_up, embedded_cleanup: dict[str, str]) -> None:
    process, _, _ = await start_up(base_env=embedded_cleanup)
    postmaster = _postmaster(embedded_cleanup)
    assert postmaster is not None, "up runs on the embedded PostgreSQL"
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0
    assert await _gone(postmaster), "the embedded PostgreSQL outlived a clean Ctrl-C"


async def test_a_child_killed_with_sigkill_does_not_keep_the_embedded_postgres_alive(
    start_up, embedded_cleanup: dict[str, str]
) -> None:
    process, _, seen = await start_up(base_env=embedded_cleanup)
    postmaster = _postmaster(embedded_cleanup)
    assert postmaster is not None
    chat = next(child for child in psutil.Process(process.pid).children() if "chat" in child.cmdline())
    chat.kill()  # its pid stays in the server's list of users: it never says it left
    assert process.stderr is not None
    await _read_until(process.stderr, "stopping everything", seen)
    assert await asyncio.wait_for(process.wait(), 60) == 1
    assert await _gone(postmaster), "the embedded PostgreSQL outlived the run after a child was killed with -9"


async def test_up_killed_with_sigkill_takes_its_children_along_and_the_next_run_reaps_its_postgres(
    start_up, embedded_cleanup: dict[str, str]
) -> None:
    process, _, _ = await start_up(base_env=embedded_cleanup)
    children = psutil.Process(process.pid).children()
    orphan = _postmaster(embedded_cleanup)
    assert orphan is not None
    process.kill()
    await process.wait()
    for child in children:
        assert await _gone(child, within=30), f"{child.cmdline()} outlived a killed up"

    # The next run joins what the killed one left, and stops it when it ends.
    process, _, _ = await start_up(base_env=embedded_cleanup)
    assert _postmaster(embedded_cleanup) is not None
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0
    assert await _gone(orphan), "the PostgreSQL a killed up left behind outlived the next run"
    assert _postmaster(embedded_cleanup) is None
