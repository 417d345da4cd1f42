"""The Search RPC's modes: the proto keeps its enum's words (KEYWORD, SEMANTIC), and the servicer reads them as the
lexical and vector arms."""

from __future__ import annotations

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from tests.retrieve.conftest import Stack
from tests.retrieve.notes import paths


async def test_the_search_rpc_words_name_the_lexical_and_vector_arms(stack: Stack) -> None:
    stack.write("a.md", "# Alpha\n\nalpha\n")
    stack.write("b.md", "# Beta\n\nbeta\n")
    await stack.ingest()

    keyword = await stack.stub.Search(pb.SearchRequest(query="alpha", mode=pb.SEARCH_MODE_KEYWORD), timeout=30)
    assert [hit.path for hit in keyword.hits] == await paths(stack.db.pool, "alpha", "lexical") == ["a.md"]
    assert not keyword.vector_arm_ran and not keyword.vector_arm_skipped_reason, "lexical never wants vectors"
    # Clients see the stage names, which keep the RPC's words.
    assert [timing.stage for timing in keyword.timings] == ["keyword"]

    semantic = await stack.stub.Search(pb.SearchRequest(query="alpha", mode=pb.SEARCH_MODE_SEMANTIC), timeout=30)
    assert semantic.vector_arm_ran
    assert [hit.path for hit in semantic.hits] == ["a.md", "b.md"], "the vector arm ranks every note by meaning"
    assert [timing.stage for timing in semantic.timings] == ["semantic"]
