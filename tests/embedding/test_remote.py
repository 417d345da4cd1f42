"""Remote embedders through the real openai SDK and httpx2 against local servers speaking each wire protocol.

Batches go out at batch_size with bounded concurrency and come back in input order; 429/5xx are retried and then
reported as unavailable; a 401 names the variable to fix and never the key; an over-long input is found by
bisection, cut, counted and embedded; each family's prefixes reach the wire; an unknown model's dimension is learned.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest

from secondbrain.embedding import Embedder, create_embedder
from secondbrain.errors import FailedPrecondition, InvalidInput, Unavailable
from secondbrain.providers import RetryPolicy
from secondbrain.vault_config import EmbeddingSection
from tests.wire import OllamaServer, OpenAIServer, Reply, embed
from tests.wire.base import WireServer

SECRET = "sk-test-9c8b7a6d5e4f3a2b1c0d"
FAST_RETRY = RetryPolicy(attempts=3, deadline_seconds=5, base_delay_seconds=0.01, max_delay_seconds=0.05)
E5 = "intfloat/multilingual-e5-large-instruct"
E5_QUERY = "Instruct: Given a question, retrieve passages from personal notes that answer it\nQuery: "
BGE_QUERY = "Represent this sentence for searching relevant passages: "
NOTES = [f"Note {i}: we chose option {i} for the storage layer of project {i}." for i in range(10)]


def environment(provider: str, server: WireServer) -> dict[str, str]:
    if provider == "ollama":
        return {"OLLAMA_URL": server.root_url}
    variable = provider.upper()
    return {f"{variable}_API_KEY": SECRET, f"{variable}_BASE_URL": server.base_url}


def make(provider: str, server: WireServer, **section: object) -> Embedder:
    return create_embedder(
        EmbeddingSection(provider=provider, **section),  # type: ignore[arg-type]
        environment(provider, server),
        retry=FAST_RETRY,
    )


def expected(texts: Sequence[str], dimensions: int, prefix: str = "") -> np.ndarray:
    """What the server's stand-in model gives for each text, as the embedder must return it."""
    return np.asarray([embed(prefix + text, dimensions) for text in texts], dtype=np.float32)


def embedding_inputs(server: WireServer, path: str = "/v1/embeddings") -> list[list[str]]:
    return [request.json["input"] for request in server.requests if request.path == path]


def the_cut_head(server: WireServer, long_text: str, path: str = "/v1/embeddings") -> str:
    """The one input sent that was a proper head of `long_text`: what was embedded in its place."""
    [head] = [
        batch[0]
        for batch in embedding_inputs(server, path)
        if len(batch) == 1 and batch[0] != long_text and long_text.startswith(batch[0])
    ]
    return head


@pytest.fixture
async def together_server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer(dimensions=1024) as server:
        yield server


async def test_texts_go_out_in_batches_of_batch_size(together_server: OpenAIServer) -> None:
    async with make("together", together_server, batch_size=4) as embedder:
        vectors = await embedder.embed_documents(NOTES)
    assert sorted(len(batch) for batch in embedding_inputs(together_server)) == [2, 4, 4]
    np.testing.assert_allclose(vectors, expected(NOTES, 1024), atol=1e-6)
    request = together_server.requests[0]
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.json["model"] == E5
    assert request.json["encoding_format"] == "float"


async def test_order_is_kept_when_answers_arrive_out_of_order(together_server: OpenAIServer) -> None:
    # The first batches answer last.
    together_server.script.push(*(Reply(delay=delay) for delay in (0.3, 0.2, 0.1, 0.0, 0.0)))
    async with make("together", together_server, batch_size=2, concurrency=5) as embedder:
        vectors = await embedder.embed_documents(NOTES)
    assert vectors.shape == (10, 1024)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(NOTES, 1024), atol=1e-6)


async def test_no_more_than_concurrency_requests_are_in_flight(together_server: OpenAIServer) -> None:
    together_server.script.default = Reply(delay=0.25)
    async with make("together", together_server, batch_size=1, concurrency=2) as embedder:
        in_flight = most = 0
        create = embedder.client.embeddings.create

        async def counted(*args: object, **kwargs: object) -> object:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            try:
                return await create(*args, **kwargs)
            finally:
                in_flight -= 1

        embedder.client.embeddings.create = counted  # type: ignore[method-assign]
        await embedder.embed_documents(NOTES[:4])
    # Four slow one-text requests: with the limit, two at a time (without it, four).
    assert most == 2
    assert len(together_server.requests) == 4


async def test_rate_limits_and_overload_are_retried(together_server: OpenAIServer) -> None:
    together_server.script.push(Reply(status=429, headers={"retry-after": "0"}), Reply(status=503))
    async with make("together", together_server) as embedder:
        vectors = await embedder.embed_documents(NOTES[:3])
    assert len(together_server.requests) == 3
    np.testing.assert_allclose(vectors, expected(NOTES[:3], 1024), atol=1e-6)


async def test_a_provider_that_keeps_failing_is_reported_unavailable(together_server: OpenAIServer) -> None:
    together_server.script.default = Reply(status=503, error_message="upstream overloaded")
    async with make("together", together_server) as embedder:
        with pytest.raises(Unavailable, match=r"Together AI is failing or overloaded .*gave up after 3 attempts"):
            await embedder.embed_documents(NOTES[:3])
    assert len(together_server.requests) == 3


async def test_an_unreachable_provider_is_reported_unavailable() -> None:
    server = OpenAIServer(dimensions=1024)
    async with server:
        env = environment("together", server)
    embedder = create_embedder(EmbeddingSection(provider="together"), env, retry=FAST_RETRY)
    async with embedder:
        with pytest.raises(Unavailable, match="cannot reach Together AI"):
            await embedder.embed_query("anyone there?")


@pytest.mark.parametrize("provider", ["together", "openai"])
async def test_unauthorised_names_the_variable_and_never_the_key(
    provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with OpenAIServer(dimensions=1536) as server:
        server.script.default = Reply(status=401, error_message=f"Incorrect API key provided: {SECRET[:12]}****")
        async with make(provider, server) as embedder:
            with pytest.raises(FailedPrecondition) as failure:
                await embedder.embed_documents(NOTES[:2])
        assert len(server.requests) == 1, "a 401 is not retried"
    message = str(failure.value)
    assert f"{provider.upper()}_API_KEY" in message
    assert SECRET[:12] not in message
    assert SECRET[:12] not in caplog.text


def test_a_missing_key_is_refused_when_the_embedder_is_made() -> None:
    with pytest.raises(FailedPrecondition, match="OPENAI_API_KEY is not set"):
        create_embedder(EmbeddingSection(provider="openai"), {})


@pytest.mark.parametrize(
    ("server_limit", "long_words"),
    [
        (512, 700),  # longer than the model's window: cut to the window
        (50, 120),  # within our window but not the server's: cut by the share the error message gives
    ],
)
async def test_an_over_long_text_is_found_by_bisection_cut_and_embedded(
    server_limit: int, long_words: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    long_note = " ".join(["the storage decision was revisited"] * (long_words // 5))
    texts = [*NOTES[:5], long_note, *NOTES[5:7]]
    server = OpenAIServer(dimensions=1024, max_input_tokens=server_limit)
    async with server, make("together", server, batch_size=8) as embedder:
        vectors = await embedder.embed_documents(texts)
        beyond_our_window = embedder.count_tokens(long_note) > embedder.max_document_tokens
    assert vectors.shape == (8, 1024)
    others = [index for index in range(8) if index != 5]
    np.testing.assert_allclose(vectors[others], expected([texts[i] for i in others], 1024), atol=1e-6)
    # The long text was sent alone once more, cut to a head within the server's limit, and row 5 is its vector.
    head = the_cut_head(server, long_note)
    assert 0 < len(head.split()) <= server_limit
    np.testing.assert_allclose(vectors[5], expected([head], 1024)[0], atol=1e-6)
    assert embedder.truncated == 1
    [cut] = [record for record in caplog.records if "embedded its head only" in record.getMessage()]
    assert cut.input == 5  # type: ignore[attr-defined]
    # Past the model's window, our own count foresaw the cut (and ingest reports such chunks): INFO. Within it, only
    # the server knew: a warning.
    assert beyond_our_window == (long_words > 512)
    assert cut.levelname == ("INFO" if beyond_our_window else "WARNING")
    # Bisection: the batch of 8, halves of 4, quarters of 2, the single text, then its head; never one by one.
    assert sorted(len(batch) for batch in embedding_inputs(server)) == [1, 1, 1, 2, 2, 4, 4, 8]


async def test_a_text_still_too_long_after_cutting_is_refused(together_server: OpenAIServer) -> None:
    too_long = "This model's maximum context length is 512 tokens, however you requested 600 tokens."
    together_server.script.default = Reply(status=400, error_message=too_long)
    async with make("together", together_server, batch_size=4) as embedder:
        with pytest.raises(InvalidInput, match=r"input \d is too long .* even after cutting"):
            await embedder.embed_documents(NOTES[:2])


@pytest.mark.parametrize(
    ("provider", "model", "dimensions", "query_prefix", "document_prefix"),
    [
        ("together", None, 1024, E5_QUERY, ""),
        ("together", "BAAI/bge-large-en-v1.5", 1024, BGE_QUERY, ""),
        ("openai", None, 1536, "", ""),
        ("ollama", None, 768, "search_query: ", "search_document: "),
        ("ollama", "mxbai-embed-large", 1024, BGE_QUERY, ""),
    ],
)
async def test_each_family_prefixes_reach_the_wire(
    provider: str, model: str | None, dimensions: int, query_prefix: str, document_prefix: str
) -> None:
    question = "What did I decide about storage?"
    server = OllamaServer(dimensions=dimensions) if provider == "ollama" else OpenAIServer(dimensions=dimensions)
    async with server, make(provider, server, model=model) as embedder:
        assert embedder.dimension == dimensions
        query = await embedder.embed_query(question)
        documents = await embedder.embed_documents(NOTES[:2])
    sent = [request.json["input"] for request in server.requests]
    assert sent == [[query_prefix + question], [document_prefix + NOTES[0], document_prefix + NOTES[1]]]
    np.testing.assert_allclose(query, expected([question], dimensions, query_prefix)[0], atol=1e-6)
    np.testing.assert_allclose(documents, expected(NOTES[:2], dimensions, document_prefix), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-6)


async def test_openai_vectors_travel_as_base64() -> None:
    async with OpenAIServer(dimensions=1536) as server, make("openai", server) as embedder:
        vectors = await embedder.embed_documents(NOTES[:3])
    assert server.requests[0].json["encoding_format"] == "base64"
    assert server.requests[0].json["model"] == "text-embedding-3-small"
    np.testing.assert_allclose(vectors, expected(NOTES[:3], 1536), atol=1e-6)


async def test_ollama_uses_its_native_embed_route_without_silent_truncation() -> None:
    async with OllamaServer(dimensions=768) as server, make("ollama", server, model="nomic-embed-text:latest") as e:
        assert e.identity == "ollama:nomic-embed-text"
        await e.embed_documents(NOTES[:2])
    [request] = server.requests
    assert request.path == "/api/embed"
    assert request.json["model"] == "nomic-embed-text"
    assert request.json["truncate"] is False


async def test_ollama_length_refusal_is_bisected_and_the_text_cut() -> None:
    long_note = " ".join(["storage"] * 600)
    server = OllamaServer(dimensions=1024, max_input_tokens=512)
    async with server, make("ollama", server, model="mxbai-embed-large") as embedder:
        vectors = await embedder.embed_documents([NOTES[0], long_note])
    assert vectors.shape == (2, 1024)
    assert embedder.truncated == 1
    head = the_cut_head(server, long_note, "/api/embed")
    assert len(head.split()) == embedder.max_document_tokens  # one WordPiece token per word here


async def test_a_model_ollama_has_not_pulled_is_a_request_error() -> None:
    async with OllamaServer(dimensions=768) as server:
        server.script.push(Reply(status=404, error_message='model "nomic-embed-text" not found, try pulling it first'))
        async with make("ollama", server) as embedder:
            with pytest.raises(InvalidInput, match="404 for model 'nomic-embed-text'"):
                await embedder.embed_query("hello")


async def test_vectors_of_the_wrong_dimension_are_refused() -> None:
    async with OpenAIServer(dimensions=384) as server, make("together", server) as embedder:
        with pytest.raises(FailedPrecondition, match="384-dimensional vectors, but 1024 were expected"):
            await embedder.embed_documents(NOTES[:2])


async def test_an_unknown_models_dimension_is_learned_with_one_probe(together_server: OpenAIServer) -> None:
    together_server.dimensions = 640
    async with make("together", together_server, model="acme/notes-embed-v9") as embedder:
        with pytest.raises(FailedPrecondition, match="not known yet"):
            _ = embedder.dimension
        await embedder.ensure_ready()
        await embedder.ensure_ready()
        assert embedder.dimension == 640
        assert len(together_server.requests) == 1
        assert (await embedder.embed_documents([])).shape == (0, 640)
        assert (await embedder.embed_query("storage?")).shape == (640,)
    assert embedder.identity == "together:acme/notes-embed-v9"
