"""The /v1/rerank client against a local server speaking Cohere's rerank protocol.

What a user notices: candidates come back best first with the provider's scores; a refused key names the variable
to set; rate limits and blips are retried; a provider that keeps failing, stalls or answers nonsense is reported as
unavailable (so the pipeline keeps the fused order and says why); keys never appear in a message.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from secondbrain.errors import ConfigError, FailedPrecondition, InvalidInput, Unavailable
from secondbrain.providers import RetryPolicy
from secondbrain.retrieve.rerank import MAX_DOCUMENT_CHARS, Reranker, RerankResult, create_reranker
from secondbrain.vault_config import RerankSection
from tests.wire import Reply, RerankServer

SECRET = "tgp-test-rerank-9a8b7c6d5e4f"
FAST_RETRY = RetryPolicy(attempts=3, deadline_seconds=5, base_delay_seconds=0.01, max_delay_seconds=0.05)

QUERY = "pgvector hnsw index"
DOCUMENTS = ["gardening tips for spring", "pgvector hnsw index settings", "hnsw parameters", "the index of a book"]


class FixedRerankServer(RerankServer):
    """Answers every rerank request with `body` as it is, however wrong: what a broken provider might send."""

    def __init__(self, body: Any) -> None:
        super().__init__()
        self.body = body

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/rerank", self._fixed)]

    async def _fixed(self, request: web.Request) -> web.StreamResponse:
        if isinstance(self.body, str):
            return web.Response(text=self.body, content_type="text/html")
        return web.json_response(self.body)


# The stand-in server is a URL of the vault's own (retrieve.reranker.base_url), which is sent only a key the operator
# set for it (providers.env_names), never TOGETHER_API_KEY.
KEY = "SECONDBRAIN_RERANK_API_KEY"


def section(server: RerankServer, **overrides: Any) -> RerankSection:
    return RerankSection(**{"provider": "together", "base_url": server.root_url, "api_key_env": KEY, **overrides})


@pytest.fixture
async def server() -> AsyncIterator[RerankServer]:
    async with RerankServer() as server:
        yield server


@pytest.fixture
async def reranker(server: RerankServer) -> AsyncIterator[Reranker]:
    reranker = create_reranker(section(server), {KEY: SECRET}, retry=FAST_RETRY)
    yield reranker
    await reranker.aclose()


async def test_documents_come_back_best_first_with_their_scores(server: RerankServer, reranker: Reranker) -> None:
    ranked = await reranker.rerank(QUERY, DOCUMENTS, top_n=4)
    assert ranked == [
        RerankResult(1, 1.0),
        RerankResult(2, pytest.approx(1 / 3)),
        RerankResult(3, pytest.approx(1 / 3)),
        RerankResult(0, 0.0),
    ]


async def test_top_n_keeps_the_best(server: RerankServer, reranker: Reranker) -> None:
    assert await reranker.rerank(QUERY, DOCUMENTS, top_n=2) == [
        RerankResult(1, 1.0),
        RerankResult(2, pytest.approx(1 / 3)),
    ]
    assert server.requests[-1].json["top_n"] == 2
    # More than there are documents asks for all of them, rather than sending a top_n the provider may refuse.
    assert len(await reranker.rerank(QUERY, DOCUMENTS, top_n=50)) == len(DOCUMENTS)
    assert server.requests[-1].json["top_n"] == len(DOCUMENTS)


async def test_the_request_carries_the_model_the_documents_and_the_bearer_key(
    server: RerankServer, reranker: Reranker
) -> None:
    await reranker.rerank(QUERY, DOCUMENTS, top_n=3)
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/rerank")
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.json == {"model": "Salesforce/Llama-Rank-V1", "query": QUERY, "documents": DOCUMENTS, "top_n": 3}


async def test_no_documents_need_no_request(server: RerankServer, reranker: Reranker) -> None:
    assert await reranker.rerank(QUERY, [], top_n=5) == []
    assert server.requests == []


async def test_an_overlong_document_is_cut_before_it_is_sent(server: RerankServer, reranker: Reranker) -> None:
    long = "pgvector " * 2000
    ranked = await reranker.rerank(QUERY, [long, "hnsw index"], top_n=2)
    assert [r.index for r in ranked] == [1, 0]
    assert len(server.requests[0].json["documents"][0]) == MAX_DOCUMENT_CHARS


# --- failures ---------------------------------------------------------------------------------------------------


async def test_a_refused_key_names_the_variable(server: RerankServer, reranker: Reranker) -> None:
    server.script.push(Reply(status=401, error_message=f"invalid api key {SECRET}"))
    with pytest.raises(FailedPrecondition, match=f"set {KEY}") as caught:
        await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
    assert SECRET not in str(caught.value)
    assert len(server.requests) == 1  # not retried: it will not pass by itself


async def test_a_refused_request_is_invalid_input_without_the_key(server: RerankServer, reranker: Reranker) -> None:
    server.script.push(Reply(status=422, error_message=f"top_n too large for key {SECRET[:12]}..."))
    with pytest.raises(InvalidInput, match="top_n too large") as caught:
        await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
    assert SECRET[:12] not in str(caught.value)


async def test_a_rate_limit_is_retried(server: RerankServer, reranker: Reranker) -> None:
    server.script.push(Reply(status=429, headers={"retry-after": "0"}), Reply(status=503))
    assert (await reranker.rerank(QUERY, DOCUMENTS, top_n=1)) == [RerankResult(1, 1.0)]
    assert len(server.requests) == 3


async def test_a_provider_that_keeps_failing_is_unavailable(server: RerankServer, reranker: Reranker) -> None:
    server.script.default = Reply(status=500, error_message="overloaded")
    with pytest.raises(Unavailable, match=r"Together AI reranker is failing or overloaded \(500: overloaded\)"):
        await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
    assert len(server.requests) == FAST_RETRY.attempts


async def test_a_slow_provider_is_unavailable_within_the_timeout(server: RerankServer) -> None:
    reranker = create_reranker(section(server, timeout_seconds=0.3), {KEY: SECRET}, retry=FAST_RETRY)
    server.script.push(Reply(delay=60.0))
    started = time.monotonic()
    with pytest.raises(Unavailable, match=r"0\.3 s"):
        await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
    # Not a speed claim: only that it did not wait for the server's minute.
    assert time.monotonic() - started < 30
    await reranker.aclose()


async def test_an_unreachable_provider_is_unavailable() -> None:
    async with RerankServer() as gone:
        url = gone.root_url
    reranker = create_reranker(
        RerankSection(provider="together", base_url=url, api_key_env=KEY), {KEY: SECRET}, retry=FAST_RETRY
    )
    with pytest.raises(Unavailable, match="cannot reach Together AI reranker") as caught:
        await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
    assert SECRET not in str(caught.value)
    await reranker.aclose()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"results": [{"index": 1, "relevance_score": 0.9}, {"index": 7, "relevance_score": 0.5}]}, "index 7"),
        ({"results": [{"index": -1, "relevance_score": 0.9}]}, "index -1"),
        ({"results": [{"index": 1, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.8}]}, "index 1"),
        ({"results": [{"index": True, "relevance_score": 0.9}]}, "index True"),
        ({"results": [{"index": 0, "relevance_score": "high"}]}, "relevance_score 'high'"),
        ({"data": []}, 'no "results"'),
        ("<html>502 Bad Gateway</html>", "not JSON"),
    ],
)
async def test_a_malformed_answer_is_unavailable(body: Any, problem: str) -> None:
    async with FixedRerankServer(body) as server:
        reranker = create_reranker(section(server), {KEY: SECRET}, retry=FAST_RETRY)
        with pytest.raises(Unavailable, match="malformed body") as caught:
            await reranker.rerank(QUERY, DOCUMENTS, top_n=2)
        await reranker.aclose()
    assert problem in str(caught.value)


# --- choosing the provider --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "variable", "url", "model"),
    [
        ("together", "TOGETHER_API_KEY", "https://api.together.xyz/v1/rerank", "Salesforce/Llama-Rank-V1"),
        ("cohere", "COHERE_API_KEY", "https://api.cohere.com/v1/rerank", "rerank-v3.5"),
        ("jina", "JINA_API_KEY", "https://api.jina.ai/v1/rerank", "jina-reranker-v2-base-multilingual"),
    ],
)
async def test_provider_defaults(provider: Any, variable: str, url: str, model: str) -> None:
    reranker = create_reranker(RerankSection(provider=provider), {variable: SECRET})
    assert (reranker.url, reranker.model, reranker.context.api_key_env) == (url, model, variable)
    await reranker.aclose()
    with pytest.raises(FailedPrecondition, match=f"set {variable}"):
        create_reranker(RerankSection(provider=provider), {})


async def test_overrides_of_url_key_variable_and_model(server: RerankServer) -> None:
    custom = section(server, provider="cohere", base_url=server.root_url + "/v1/", api_key_env=KEY)
    reranker = create_reranker(custom.model_copy(update={"model": "rerank-english-v3.0"}), {KEY: SECRET})
    assert reranker.model == "rerank-english-v3.0"
    await reranker.rerank(QUERY, DOCUMENTS, top_n=1)
    assert server.requests[-1].path == "/v1/rerank"  # a base URL ending in /v1 is not doubled
    assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    await reranker.aclose()

    # A request's model wins over the section's.
    chosen = create_reranker(custom, {KEY: SECRET}, model="rerank-v3.5-lite")
    await chosen.rerank(QUERY, DOCUMENTS, top_n=1)
    assert server.requests[-1].json["model"] == "rerank-v3.5-lite"
    await chosen.aclose()

    with pytest.raises(FailedPrecondition, match="set SECONDBRAIN_RERANK_API_KEY"):
        create_reranker(custom, {"COHERE_API_KEY": SECRET})


async def test_a_url_of_the_vaults_own_is_never_sent_the_providers_key(server: RerankServer) -> None:
    # Found by a review: a base_url of the vault's alone sent TOGETHER_API_KEY (any key of this machine) there.
    moved = RerankSection(provider="together", base_url=server.root_url)
    reranker = create_reranker(moved, {"TOGETHER_API_KEY": SECRET})
    await reranker.rerank(QUERY, DOCUMENTS, top_n=1)
    assert "authorization" not in server.requests[-1].headers
    await reranker.aclose()
    with pytest.raises(ValueError, match="sent only a key the operator set for it"):
        RerankSection(provider="together", base_url=server.root_url, api_key_env="TOGETHER_API_KEY")


async def test_custom_needs_a_base_url_and_a_model_but_not_a_key(server: RerankServer) -> None:
    with pytest.raises(ConfigError, match=r"retrieve\.reranker\.base_url"):
        create_reranker(RerankSection(provider="custom", model="bge-reranker-v2-m3"), {})
    with pytest.raises(ConfigError, match=r"retrieve\.reranker\.model"):
        create_reranker(RerankSection(provider="custom", base_url=server.root_url), {})

    local = create_reranker(section(server, provider="custom", model="bge-reranker-v2-m3", api_key_env=None), {})
    assert await local.rerank(QUERY, DOCUMENTS, top_n=1) == [RerankResult(1, 1.0)]
    assert "authorization" not in server.requests[-1].headers
    await local.aclose()
