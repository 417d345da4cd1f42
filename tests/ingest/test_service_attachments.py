"""Attachments through the real ingest service (issue 48): a vault's PDFs, Office files, canvases and pictures are
indexed beside its notes, each hostile one fails alone with its reason while the sync goes on, and an unchanged
file is never read again."""

from __future__ import annotations

import os

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest import files_made
from tests.ingest.conftest import ARCHITECTURE_NOTE, Ingest, chunks_of, failed_reasons, files


async def pages_of(ingest: Ingest, path: str) -> list[tuple[list[str], int | None, int | None]]:
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch(
            """SELECT c.heading_path, c.page_start, c.page_end FROM vault_chunks c JOIN vault_files f
               ON f.id = c.file_id WHERE f.path = $1 ORDER BY c.chunk_index""",
            path,
        )
    return [(list(row["heading_path"]), row["page_start"], row["page_end"]) for row in rows]


async def test_attachments_are_indexed_and_hostile_ones_fail_one_by_one(ingest: Ingest) -> None:
    root = ingest.vault.root
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    ingest.vault.write("Boiler.md", "# Boiler\n\nThe manual: ![[Manuals/Boiler manual.pdf]]\n")
    files_made.write(
        root,
        "Manuals/Boiler manual.pdf",
        files_made.pdf([["Contents"], ["Bleed the radiators before the annual service."]]),
    )
    files_made.write(root, "Errata.docx", files_made.docx("Errata", ["The flue clearance is 300 mm, not 30 mm."]))
    files_made.write(root, "Plan.canvas", files_made.canvas(["Order the pump", "Fit the valve"], ["Boiler.md"]))
    hostile = {
        "Broken.pdf": (b"%PDF-1.7\n" + os.urandom(4096), "not a PDF that can be read"),
        "Bomb.docx": (files_made.zip_bomb_docx(300 * 1024 * 1024), "zip bomb"),
        "Huge.canvas": (files_made.canvas([f"card {n}" for n in range(50_000)]), "ingest.max_canvas_nodes"),
        "Giant.png": (files_made.png_claiming(100_000, 100_000), "claims more pixels"),
        "Lies.png": (b"<html><script>alert(1)</script></html>", "not a picture"),
    }
    for name, (data, _) in hostile.items():
        files_made.write(root, name, data)

    events = await ingest.sync()

    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    outcomes = {path: progress.outcome for path, progress in files(events).items()}
    for added in ("Architecture.md", "Boiler.md", "Manuals/Boiler manual.pdf", "Errata.docx", "Plan.canvas"):
        assert outcomes[added] == pb.FILE_OUTCOME_ADDED, added
    reasons = await failed_reasons(ingest)
    assert set(reasons) == set(hostile)
    for name, (_, says) in hostile.items():
        assert says in reasons[name], (name, reasons[name])
        assert await chunks_of(ingest, name) == []
    assert "Bleed the radiators" in " ".join(c["content"] for c in await chunks_of(ingest, "Manuals/Boiler manual.pdf"))
    assert ["Page 2"] in [heading for heading, _, _ in await pages_of(ingest, "Manuals/Boiler manual.pdf")]
    assert {(start, end) for _, start, end in await pages_of(ingest, "Manuals/Boiler manual.pdf")} <= {(1, 1), (2, 2)}
    assert all(start is None for _, start, _ in await pages_of(ingest, "Errata.docx"))
    # Its passages carry the note it is shown in, and what that note says beside it, as their context.
    async with ingest.db.pool.acquire() as connection:
        contexts = await connection.fetch(
            "SELECT DISTINCT c.context FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1",
            "Manuals/Boiler manual.pdf",
        )
    assert [row["context"] for row in contexts] == ["Shown in Boiler: The manual:"]

    # Nothing changed: nothing read, nothing embedded. Touched: its bytes are hashed, not parsed, and it stays.
    embedded = len(ingest.embedded_texts())
    again = files(await ingest.sync())
    assert all(again[p].outcome == pb.FILE_OUTCOME_UNCHANGED for p in outcomes if p not in hostile)
    os.utime(root / "Manuals/Boiler manual.pdf", (1_900_000_000, 1_900_000_000))
    touched = files(await ingest.sync())
    assert touched["Manuals/Boiler manual.pdf"].outcome == pb.FILE_OUTCOME_UNCHANGED
    assert len(ingest.embedded_texts()) == embedded

    # Changed: read again, and only its changed passages embedded.
    files_made.write(
        root,
        "Manuals/Boiler manual.pdf",
        files_made.pdf([["Contents"], ["Bleed the radiators before the annual service."], ["Pressure: 1.5 bar."]]),
    )
    changed = files(await ingest.sync())
    assert changed["Manuals/Boiler manual.pdf"].outcome == pb.FILE_OUTCOME_UPDATED
    assert any("1.5 bar" in text for text in ingest.embedded_texts()[embedded:])


async def contexts_of(ingest: Ingest, path: str) -> set[str]:
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT DISTINCT c.context FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1",
            path,
        )
    return {row["context"] for row in rows}


async def test_a_note_edited_or_deleted_changes_the_context_of_the_attachment_it_shows(ingest: Ingest) -> None:
    """The attachment is unchanged on disk, but the notes it is shown in are not: its passages follow them."""
    root = ingest.vault.root
    ingest.vault.write("Boiler.md", "# Boiler\n\nThe manual: ![[Boiler manual.pdf]]\n")
    ingest.vault.write("Other.md", "# Other\n\nNothing about boilers.\n")
    files_made.write(root, "Boiler manual.pdf", files_made.pdf([["Bleed the radiators before the service."]]))
    # A second attachment, shown in more notes than a context names (three, in path order), checked in the same
    # statement as the first: neither's notes may count for the other.
    files_made.write(root, "Notes/Errata.docx", files_made.docx("Errata", ["The flue clearance is 300 mm."]))
    for name in ("D", "C", "B", "A"):
        ingest.vault.write(f"Errata {name}.md", f"# Errata {name}\n\nSee ![[Errata.docx]]\n")
    await ingest.sync()
    assert await contexts_of(ingest, "Boiler manual.pdf") == {"Shown in Boiler: The manual:"}
    errata = "Shown in Errata A: See; Errata B: See; Errata C: See"
    assert await contexts_of(ingest, "Notes/Errata.docx") == {errata}

    # A note that does not show it changes: the attachment stays unchanged, and nothing of it is embedded.
    embedded = len(ingest.embedded_texts())
    ingest.vault.write("Other.md", "# Other\n\nStill nothing about boilers.\n")
    quiet = files(await ingest.sync())
    assert quiet["Boiler manual.pdf"].outcome == pb.FILE_OUTCOME_UNCHANGED
    assert not any("radiators" in text for text in ingest.embedded_texts()[embedded:])

    ingest.vault.write("Boiler.md", "# Boiler\n\nThe service manual, 2019 edition: ![[Boiler manual.pdf]]\n")
    edited = await ingest.sync()
    assert files(edited)["Boiler manual.pdf"].outcome == pb.FILE_OUTCOME_UPDATED
    assert await contexts_of(ingest, "Boiler manual.pdf") == {"Shown in Boiler: The service manual, 2019 edition:"}
    totals = edited[-1].done.totals
    assert (totals.files_done, totals.updated) == (8, 2), "reported once, as updated"
    assert files(edited)["Notes/Errata.docx"].outcome == pb.FILE_OUTCOME_UNCHANGED
    assert await contexts_of(ingest, "Notes/Errata.docx") == {errata}

    (root / "Boiler.md").unlink()
    files(await ingest.sync())
    assert await contexts_of(ingest, "Boiler manual.pdf") == {""}


async def test_with_attachments_off_only_notes_are_indexed_and_stored_attachments_go(ingest: Ingest) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    files_made.write(ingest.vault.root, "Paper.pdf", files_made.pdf([["A paper about pumps."]]))
    assert files(await ingest.sync())["Paper.pdf"].outcome == pb.FILE_OUTCOME_ADDED

    await ingest.restart(embedding={"provider": "openai", "batch_size": 16}, ingest={"attachments": False})
    events = files(await ingest.sync())
    assert events["Paper.pdf"].outcome == pb.FILE_OUTCOME_DELETED
    assert await chunks_of(ingest, "Paper.pdf") == []
    assert len(await chunks_of(ingest, "Architecture.md")) > 0
