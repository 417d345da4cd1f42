"""Cohere's rerank wire protocol (also the shape Jina and Voyage-compatible rerankers and TEI gateways accept).

Scores are the share of the query's words a document contains, so a test can predict the order: a document holding
every query word scores 1.0, one holding none 0.0, and ties keep the documents' original order.
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from .base import WireServer, json_body, scripted_error
from .script import Reply
from .vectors import overlap


def cohere_error(reply: Reply) -> dict[str, Any]:
    return {"message": reply.error_message}


def _document_texts(documents: Any) -> list[str] | None:
    """The texts of `documents` (strings or `{"text": ...}` objects), or None when any is neither."""
    if not isinstance(documents, list):
        return None
    texts: list[str] = []
    for document in documents:
        text = document.get("text") if isinstance(document, dict) else document
        if not isinstance(text, str):
            return None
        texts.append(text)
    return texts


class RerankServer(WireServer):
    """`POST /v1/rerank` (and Cohere's current `/v2/rerank`, the same shape); `base_url` is the root."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/rerank", self._rerank), web.post("/v2/rerank", self._rerank)]

    async def _rerank(self, request: web.Request) -> web.StreamResponse:
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, cohere_error)) is not None:
            return error
        query = body.get("query")
        texts = _document_texts(body.get("documents"))
        if not isinstance(query, str) or texts is None:
            message = "invalid request: query must be a string and documents a list of strings or {text} objects"
            return web.json_response({"message": message}, status=400)
        scores = [overlap(query, text) for text in texts]
        ranked = sorted(range(len(texts)), key=lambda index: scores[index], reverse=True)  # stable: ties keep order
        top_n = body.get("top_n")
        if isinstance(top_n, int):
            ranked = ranked[:top_n]
        results: list[dict[str, Any]] = []
        for index in ranked:
            result: dict[str, Any] = {"index": index, "relevance_score": scores[index]}
            if body.get("return_documents"):
                result["document"] = {"text": texts[index]}
            results.append(result)
        meta = {"api_version": {"version": request.path.split("/")[1].lstrip("v")}, "billed_units": {"search_units": 1}}
        return await self.answer_json(request, reply, {"id": str(uuid.uuid4()), "results": results, "meta": meta})
