"""The reader's reads over REST, through the shim to the real services: a note (its path a query parameter, since it
holds '/'), its links and related notes, the notes list, the facets and suggested questions; a note the index does not
hold is a 404 saying so, and the OpenAPI document describes every one."""

from __future__ import annotations

import json

from tests.gateway.conftest import Gateway


async def test_a_note_its_links_related_notes_facets_and_questions_over_rest(gateway: Gateway) -> None:
    gateway.chat.write("Projects/Compost.md", "# Compost\n\nThe [[Garden]] beds get compost in spring.\n")
    await gateway.chat.ingest()
    client = gateway.client(gateway.shim_url)

    note = await client.get("/api/notes/read", params={"path": "Projects/Garden.md", "startLine": "3"})
    assert note.status_code == 200, note.text
    body = note.json()
    assert body["path"] == "Projects/Garden.md" and body["text"].startswith("## Watering")
    assert json.loads(body["propertiesJson"]) == {}
    links = (await client.get("/api/notes/links", params={"path": "Projects/Garden.md"})).json()
    assert [link["path"] for link in links["backlinks"]] == ["Projects/Compost.md"]
    related = (await client.get("/api/notes/related", params={"path": "Projects/Garden.md", "limit": "5"})).json()
    compost = next(item for item in related["notes"] if item["path"] == "Projects/Compost.md")
    assert compost["linksToNote"] and "links here" in compost["reason"]

    listed = (await client.get("/api/notes", params={"filters.folders": "Projects", "order": "LIST_ORDER_PATH"})).json()
    assert [item["path"] for item in listed["notes"]] == ["Projects/Compost.md", "Projects/Garden.md"]
    scoped = await client.get("/api/notes", params=[("filters.notes", "Travel.md"), ("filters.notes", "Nowhere.md")])
    assert [item["path"] for item in scoped.json()["notes"]] == ["Travel.md"]
    facets = (await client.get("/api/facets")).json()
    assert {"value": "Projects", "count": 2} in facets["folders"] and facets["notes"] == 4
    questions = (await client.get("/api/questions", params={"limit": "2"})).json()
    assert 1 <= len(questions["questions"]) <= 2 and all(q["text"].endswith("?") for q in questions["questions"])

    missing = await client.get("/api/notes/related", params={"path": "Nowhere.md"})
    assert missing.status_code == 404 and "holds no note at 'Nowhere.md'" in missing.json()["error"]["message"]
    bad = await client.get("/api/questions", params={"limit": "99"})
    assert bad.status_code == 400 and "1 to 12 questions" in bad.json()["error"]["message"]

    document = (await client.get("/api/openapi.json")).json()
    for path in ("/api/notes", "/api/notes/read", "/api/notes/links", "/api/notes/related", "/api/facets"):
        assert "get" in document["paths"][path], path
    parameters = {p["name"] for p in document["paths"]["/api/notes/related"]["get"]["parameters"]}
    assert {"path", "limit"} <= parameters
