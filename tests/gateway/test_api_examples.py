"""The examples of docs/api.md's "Calling the API over gRPC", run as written against the real stack: `buf curl`
through Envoy (gRPC and grpc-web, by reflection) and directly, and the Node example with the official grpc-js client."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
from pathlib import Path

from tests.gateway.conftest import Gateway

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    return page.split("\n## Calling the API over gRPC\n", 1)[1].split("\n## ", 1)[0]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(), re.DOTALL)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)


def _json_documents(text: str) -> list[dict]:
    """buf curl prints each message of a stream as one JSON document, pretty-printed, one after another."""
    decoder, documents, position = json.JSONDecoder(), [], 0
    text = text.strip()
    while position < len(text):
        document, position = decoder.raw_decode(text, position)
        documents.append(document)
        while position < len(text) and text[position].isspace():
            position += 1
    return documents


async def test_the_readmes_buf_curl_lines_work_through_envoy_and_directly(gateway: Gateway) -> None:
    # The examples ask about the demo vault's worktop; the test vault gets a note that has one.
    gateway.chat.write("Projects/Kitchen.md", "# Kitchen\n\nWe chose a pale grey quartz worktop.\n")
    await gateway.chat.ingest()
    lines = [line for line in _blocks("sh")[0].splitlines() if line.startswith("npx buf curl")]
    assert len(lines) == 6
    outputs: list[list[dict]] = []
    conversation_id = ""
    for line in lines:
        line = line.replace("http://127.0.0.1:8080", gateway.envoy_url)
        line = line.replace("http://127.0.0.1:50052", f"http://{gateway.chat.retrieve_address}")
        line = line.replace("CONVERSATION_ID", conversation_id)
        # As written, from the clone (a bare `buf` is not on a newcomer's PATH: npm put it in node_modules/.bin).
        command = shlex.split(line)
        done = await asyncio.to_thread(_run, command)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        if "--list-services" in line:
            outputs.append([{"services": done.stdout.split()}])
        else:
            outputs.append(_json_documents(done.stdout))
        if line.endswith("/CreateConversation"):
            conversation_id = outputs[-1][0]["conversation"]["id"]

    through_envoy, retrieved, created, sent, over_grpc_web, direct = outputs
    api = {"secondbrain.ingest.v1.IngestService", "secondbrain.retrieve.v1.RetrieveService",
           "secondbrain.chat.v1.ChatService"}  # fmt: skip
    assert api <= set(through_envoy[0]["services"]), "the whole API, through Envoy"
    assert "plan" in retrieved[0] and any("passage" in event for event in retrieved) and "done" in retrieved[-1]
    assert created[0]["conversation"]["id"] == conversation_id
    assert [next(iter(event)) for event in (sent[0], sent[-1])] == ["sources", "done"]
    assert over_grpc_web[0]["hits"], "grpc-web, its schema by reflection"
    assert "secondbrain.retrieve.v1.RetrieveService" in direct[0]["services"]
    assert "secondbrain.chat.v1.ChatService" not in direct[0]["services"], "directly, a service lists only itself"


async def test_the_readmes_node_example_streams_passages_with_grpc_js(gateway: Gateway) -> None:
    (example,) = _blocks("js")
    script = example.replace("127.0.0.1:8080", gateway.envoy_url.removeprefix("http://"))
    done = await asyncio.to_thread(_run, ["node", "-e", script])
    assert done.returncode == 0, done.stderr
    kinds = [line.split(" ", 1)[0] for line in done.stdout.splitlines()]
    assert kinds[0] == "plan" and "passage" in kinds and kinds[-1] == "done", done.stdout
    # Enums print by name (found by a user: numbers), as the example's loader options ask.
    plan = json.loads(done.stdout.splitlines()[0].split(" ", 1)[1])
    assert plan["queries"][0]["kind"].startswith("QUERY_KIND_"), plan
