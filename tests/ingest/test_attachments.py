"""GetAttachment through a real ingest server: a file a note embeds is served by its real type, resolved as Obsidian
resolves an embed, and every trick to read anything else is refused with a status that says why (issue 45)."""

from __future__ import annotations

import os
import struct
import unicodedata
import zlib
from pathlib import Path

import grpc
import pytest

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from tests.ingest import files_made
from tests.ingest.conftest import Ingest


def png(width: int = 1, height: int = 1, padding: int = 0) -> bytes:
    """A real PNG of `width` x `height` grey pixels; `padding` bytes of a text chunk make it larger."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\x80" * width for _ in range(height)))
    text = chunk(b"tEXt", b"Comment\x00" + b"x" * padding) if padding else b""
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + text + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
# A baseline JPEG's markers: start of image, a JFIF header, end of image.
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
# A 1x1 24-bit BMP: file header, 40-byte info header, one pixel padded to four bytes.
BMP = (
    b"BM" + struct.pack("<IHHI", 58, 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, 1, 1, 1, 24, 0, 4, 0, 0, 0, 0)
) + b"\x00\x00\xff\x00"
WEBP = b"RIFF" + struct.pack("<I", 26) + b"WEBPVP8L" + struct.pack("<I", 14) + b"\x2f" + b"\x00" * 13
AVIF = struct.pack(">I", 28) + b"ftypavif" + b"\x00\x00\x00\x00" + b"avifmif1miaf" + b"\x00" * 8
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


async def attachment(ingest: Ingest, target: str, from_path: str = "") -> pb.GetAttachmentResponse:
    return await ingest.stub.GetAttachment(pb.GetAttachmentRequest(target=target, from_path=from_path), timeout=30)


async def refusal(ingest: Ingest, target: str, from_path: str = "") -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await attachment(ingest, target, from_path)
    return caught.value


def put(ingest: Ingest, path: str, data: bytes) -> Path:
    target = ingest.vault.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


async def test_an_embedded_image_is_served_by_its_real_type(ingest: Ingest) -> None:
    image = png(2, 2)
    put(ingest, "Assets/diagram.png", image)
    ingest.vault.write("Notes/Design.md", "# Design\n\n![[diagram.png]]\n")
    await ingest.sync()
    found = await attachment(ingest, "diagram.png", "Notes/Design.md")
    assert (found.path, found.media_type, found.content) == ("Assets/diagram.png", "image/png", image)
    # The same file by its vault path, by a partial path, in another case, with a size or a page after it.
    for written in ("Assets/diagram.png", "assets/DIAGRAM.png", "diagram.png|300", "Diagram.PNG#section"):
        assert (await attachment(ingest, written)).path == "Assets/diagram.png", written


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("scan.jpg", JPEG, "image/jpeg"),
        ("scan.jpeg", JPEG, "image/jpeg"),
        ("loop.gif", GIF, "image/gif"),
        ("photo.webp", WEBP, "image/webp"),
        ("photo.avif", AVIF, "image/avif"),
        ("old.bmp", BMP, "image/bmp"),
        ("paper.pdf", PDF, "application/pdf"),
    ],
)
async def test_each_served_type_is_read_from_its_bytes(ingest: Ingest, name: str, data: bytes, media_type: str) -> None:
    put(ingest, f"Files/{name}", data)
    ingest.vault.write("Index.md", f"See [[{name}#page=2]] and ![[Files/{name}]].\n")
    await ingest.sync()
    found = await attachment(ingest, f"{name}#page=2", "Index.md")
    assert (found.path, found.media_type, found.content) == (f"Files/{name}", media_type, data)


async def test_a_bare_name_resolves_beside_the_note_then_to_the_shortest_path(ingest: Ingest) -> None:
    put(ingest, "Trips/pic.png", png(1, 1))
    put(ingest, "Work/pic.png", png(2, 1))
    put(ingest, "Work/Old/pic.png", png(3, 1))
    ingest.vault.write("Trips/Rome.md", "![[pic.png]]\n")
    ingest.vault.write("Home.md", "![[pic.png]]\n")
    ingest.vault.write("Work/Old/Archive.md", "![[pic.png]]\n")
    await ingest.sync()
    assert (await attachment(ingest, "pic.png", "Trips/Rome.md")).path == "Trips/pic.png"
    assert (await attachment(ingest, "pic.png", "Work/Old/Archive.md")).path == "Work/Old/pic.png"
    # From the top (or a folder without one), the shortest path.
    assert (await attachment(ingest, "pic.png", "Home.md")).path == "Work/pic.png"
    assert (await attachment(ingest, "Old/pic.png")).path == "Work/Old/pic.png"


async def test_a_file_no_indexed_note_links_to_is_not_served(ingest: Ingest) -> None:
    # With attachments indexed, a picture is a file of the index itself (the next test); here they are not.
    ingest.vault.configure(embedding={"provider": "openai", "batch_size": 16}, ingest={"attachments": False})
    put(ingest, "Assets/private.png", png())
    put(ingest, "Trips/pic.png", png())
    put(ingest, "Work/pic.png", png())
    ingest.vault.write("Trips/Rome.md", "![[pic.png]]\n")
    await ingest.sync()
    error = await refusal(ingest, "Assets/private.png")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "not indexed, nor linked or embedded by any indexed note" in error.details()
    # "pic.png" is a link's target, but written in Work/ it names Work/pic.png, which no note's link names.
    error = await refusal(ingest, "pic.png", "Work/Plan.md")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "Work/pic.png is not indexed, nor linked" in error.details()
    assert (await attachment(ingest, "pic.png", "Trips/Rome.md")).path == "Trips/pic.png"
    # A note that is deleted takes its links with it.
    (ingest.vault.root / "Trips/Rome.md").unlink()
    await ingest.sync()
    assert (await refusal(ingest, "Trips/pic.png")).code() == grpc.StatusCode.NOT_FOUND


async def test_an_attachment_the_index_read_is_served_though_no_note_links_to_it(ingest: Ingest) -> None:
    # A citation of a PDF's page opens the PDF itself: what the index holds is what may be read.
    put(ingest, "Papers/memo.pdf", files_made.pdf([["Discount rates for 2024."]]))
    ingest.vault.write("Home.md", "# Home\n")
    await ingest.sync()
    served = await attachment(ingest, "Papers/memo.pdf")
    assert served.media_type == "application/pdf" and served.content.startswith(b"%PDF")


async def test_a_missing_file_is_not_found(ingest: Ingest) -> None:
    ingest.vault.write("Home.md", "![[gone.png]]\n")
    await ingest.sync()
    error = await refusal(ingest, "gone.png", "Home.md")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "the vault has no file 'gone.png'" in error.details()


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("../secret.png", "'..'"),
        ("Assets/../../secret.png", "'..'"),
        ("/etc/passwd.png", "absolute"),
        ("C:/Users/secret.png", "absolute"),
        ("%2e%2e/%2e%2e/secret.png", "percent-encoded"),
        ("%252e%252e/secret.png", "percent-encoded"),
        ("%2Fetc%2Fsecret.png", "percent-encoded"),
        ("..\\secret.png", "backslash"),
        ("Assets\\diagram.png", "backslash"),
        ("diagram.png\x00.md", "NUL"),
        ("Assets//diagram.png", "empty"),
        ("./diagram.png", "'.'"),
        (".obsidian/icon.png", "hidden folder"),
        ("", "no file named"),
    ],
)
async def test_a_target_that_could_leave_the_vault_is_invalid(ingest: Ingest, target: str, says: str) -> None:
    put(ingest, "Assets/diagram.png", png())
    ingest.vault.write("Home.md", "![[diagram.png]]\n")
    await ingest.sync()
    error = await refusal(ingest, target, "Home.md")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in error.details()


async def test_a_from_path_that_leaves_the_vault_is_invalid(ingest: Ingest) -> None:
    error = await refusal(ingest, "diagram.png", "../../elsewhere/note.md")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "from_path" in error.details()


@pytest.mark.parametrize("name", ["Home.md", "page.html", "drawing.svg", "secondbrain.json", "script.js", "README"])
async def test_a_type_not_served_is_invalid(ingest: Ingest, name: str) -> None:
    if name != "secondbrain.json":  # which the vault has already
        ingest.vault.write(name, "<svg onload='alert(1)'/>\n")
    ingest.vault.write("Links.md", f"[[{name}]]\n")
    await ingest.sync()
    error = await refusal(ingest, name, "Links.md")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "only PNG, JPEG, GIF, WebP, AVIF, BMP and PDF files are served" in error.details()


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("page.png", b"<!doctype html><script>alert(document.cookie)</script>", "not any type served"),
        ("photo.png", JPEG, "a JPEG image"),
        ("paper.pdf", png(), "a PNG image"),
        ("empty.gif", b"", "not any type served"),
    ],
)
async def test_a_file_that_is_not_what_its_name_says_is_refused(
    ingest: Ingest, name: str, data: bytes, says: str
) -> None:
    put(ingest, name, data)
    ingest.vault.write("Home.md", f"![[{name}]]\n")
    await ingest.sync()
    error = await refusal(ingest, name, "Home.md")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"but its bytes are {says}" in error.details()


async def test_an_oversized_file_is_resource_exhausted_naming_the_setting(ingest: Ingest) -> None:
    put(ingest, "big.png", png(padding=5000))
    put(ingest, "small.png", png())
    ingest.vault.write("Home.md", "![[big.png]] ![[small.png]]\n")
    await ingest.sync()
    assert (await attachment(ingest, "big.png")).media_type == "image/png", "within the default 10 MiB"
    # The vault's settings are read at each request, as a sync reads them.
    ingest.vault.configure(embedding={"provider": "openai", "batch_size": 16}, ingest={"max_attachment_bytes": 4096})
    error = await refusal(ingest, "big.png")
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over the 4 KiB limit" in error.details()
    assert "ingest.max_attachment_bytes" in error.details()
    assert (await attachment(ingest, "small.png")).path == "small.png"


async def test_a_file_of_megabytes_is_served_whole(ingest: Ingest) -> None:
    """Within the default limit but over gRPC's default 4 MiB a client receives: a client reading attachments needs
    grpc.max_receive_message_length (the browser's grpc-web has no such limit)."""
    image = png(padding=6 * 1024 * 1024)
    put(ingest, "Scans/page.png", image)
    ingest.vault.write("Home.md", "![[page.png]]\n")
    await ingest.sync()
    options = [("grpc.max_receive_message_length", 16 * 1024 * 1024)]
    async with grpc.aio.insecure_channel(await ingest.address(), options=options) as channel:
        stub = pb_grpc.IngestServiceStub(channel)
        found = await stub.GetAttachment(pb.GetAttachmentRequest(target="page.png", from_path="Home.md"), timeout=30)
    assert found.content == image and len(found.content) > 6 * 1024 * 1024


async def test_a_symlink_out_of_the_vault_is_not_followed(ingest: Ingest, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(png())
    (ingest.vault.root / "Assets").mkdir()
    (ingest.vault.root / "Assets/secret.png").symlink_to(outside / "secret.png")
    ingest.vault.write("Home.md", "![[secret.png]]\n")
    await ingest.sync()
    error = await refusal(ingest, "secret.png", "Home.md")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "symlink to outside the vault" in error.details()


async def test_a_symlinked_folder_is_not_entered(ingest: Ingest, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(png())
    (ingest.vault.root / "Linked").symlink_to(outside)
    ingest.vault.write("Home.md", "![[Linked/secret.png]] ![[secret.png]]\n")
    await ingest.sync()
    for target in ("Linked/secret.png", "secret.png"):
        error = await refusal(ingest, target, "Home.md")
        assert error.code() == grpc.StatusCode.NOT_FOUND, target
        assert "the vault has no file" in error.details()


async def test_a_symlink_inside_into_what_the_walk_leaves_out_is_not_followed(ingest: Ingest) -> None:
    put(ingest, ".obsidian/plugins/cache.png", png())
    put(ingest, "Private/face.png", png())
    (ingest.vault.root / "hidden.png").symlink_to(ingest.vault.root / ".obsidian/plugins/cache.png")
    (ingest.vault.root / "face.png").symlink_to(ingest.vault.root / "Private/face.png")
    put(ingest, "Assets/real.png", png())
    (ingest.vault.root / "alias.png").symlink_to(ingest.vault.root / "Assets/real.png")
    ingest.vault.configure(embedding={"provider": "openai", "batch_size": 16}, ingest={"ignore": ["Private"]})
    ingest.vault.write("Home.md", "![[hidden.png]] ![[face.png]] ![[alias.png]] ![[cache.png]]\n")
    await ingest.sync()
    hidden = await refusal(ingest, "hidden.png", "Home.md")
    assert hidden.code() == grpc.StatusCode.NOT_FOUND
    assert "hidden folder" in hidden.details()
    ignored = await refusal(ingest, "face.png", "Home.md")
    assert ignored.code() == grpc.StatusCode.NOT_FOUND
    assert "ingest.ignore leaves out" in ignored.details()
    # Neither is the file in the dot-folder found by its bare name.
    assert "the vault has no file" in (await refusal(ingest, "cache.png", "Home.md")).details()
    # A link to somewhere inside the vault that is served is followed.
    assert (await attachment(ingest, "alias.png", "Home.md")).content == png()


async def test_a_hard_link_is_refused(ingest: Ingest, tmp_path: Path) -> None:
    """A hard link is the file itself under a second name: nothing shows whether the other name is outside the
    vault (here it is), so a file with more than one name is not served."""
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(png())
    os.link(outside, ingest.vault.root / "hard.png")
    ingest.vault.write("Home.md", "![[hard.png]]\n")
    await ingest.sync()
    error = await refusal(ingest, "hard.png", "Home.md")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "hard link (the file has 2 names)" in error.details()
    # With its other name gone it is an ordinary file of the vault again.
    outside.unlink()
    assert (await attachment(ingest, "hard.png", "Home.md")).path == "hard.png"


async def test_names_match_in_either_unicode_form(ingest: Ingest) -> None:
    composed, decomposed = "Café.png", unicodedata.normalize("NFD", "Café.png")
    put(ingest, f"Menus/{decomposed}", png())  # as macOS writes names
    ingest.vault.write("Home.md", f"![[{composed}]]\n")
    await ingest.sync()
    for written in (composed, decomposed, f"Menus/{decomposed}"):
        found = await attachment(ingest, written, "Home.md")
        assert found.path == f"Menus/{composed}", "the path is the note-style NFC one"
        assert found.content == png()
