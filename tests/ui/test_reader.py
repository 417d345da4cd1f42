"""The note reader and browsing in a real browser (Debian's Chromium) through the whole stack: Envoy serving the built
UI and grpc-web, the services on port 0, a vault on disk indexed by the real ingest.

Each path a person takes: a search hit opens its note; a wikilink opens the note it names and back returns; a
backlink opens the linking note at its line; cited lines are highlighted; an embedded note and an image from the vault
show; folders, tags and dates are browsed without typing; every URL survives a reload. Screenshots at 1280 and 390
px, light and dark, go to build/screenshots/.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import AsyncIterator
from urllib.parse import quote

import grpc
import pytest
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Browser, Page, expect

from secondbrain.ingest.v1 import ingest_service_pb2 as ingest
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as ingest_grpc
from tests.gateway.conftest import Gateway
from tests.ui.conftest import SCREENSHOTS, settle

KITCHEN = """---
status: in progress
budget: 14380
tags: [home, project/kitchen]
aliases: [Kitchen]
---
# Kitchen Renovation

We chose the pale grey **worktop** in quartz from [[Suppliers#Stone|Costa]].
The fitter is [[People/Marta]]; the plumber is [[Nobody Yet]].

> [!warning] Before the fitter comes
> Empty the cupboards under the sink.

## Costs

| item | cost |
| --- | --- |
| worktop | 2,400 |
| cabinets | 6,100 |

## Tasks

- [x] Order the worktop #home
- [ ] Book the electrician (quote `v2`#draft, [[Suppliers]]#later, (#aside))

```python
def total(costs):
    return sum(costs)
```

See [[#Costs]] for the sums, and the stone samples:

![[Suppliers]]

![[kitchen-plan.png]]
"""

SUPPLIERS = """# Suppliers

## Stone

Costa Stone cut the quartz worktop to size in three weeks.
"""

MARTA = """# Marta

Marta fits kitchens. She is fitting the [[Kitchen Renovation]] in January.
"""

JOURNAL = """# 20 January 2026

Marta measured the walls for the cabinets.
"""


def png(width: int, height: int) -> bytes:
    """A real PNG of one colour, made here: the reader must show it from the vault's bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x3b\x5b\xdb" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@pytest.fixture
async def vault(gateway: Gateway) -> AsyncIterator[Gateway]:
    gateway.chat.write("Projects/Kitchen Renovation.md", KITCHEN)
    gateway.chat.write("Suppliers.md", SUPPLIERS)
    gateway.chat.write("People/Marta.md", MARTA)
    gateway.chat.write("Journal/2026-01-20.md", JOURNAL)
    (gateway.chat.vault / "Projects" / "kitchen-plan.png").write_bytes(png(40, 24))
    await gateway.chat.ingest()
    yield gateway


def note_url(gateway: Gateway, path: str, query: str = "") -> str:
    return f"{gateway.envoy_url}/note/{quote(path)}{query}"


async def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


async def test_a_search_hit_opens_its_note_as_obsidian_shows_it(vault: Gateway, page: Page) -> None:
    await page.get_by_label("Search", exact=True).fill("worktop quartz")
    await page.get_by_role("button", name="Search").click()
    await page.get_by_role("link", name="Kitchen Renovation").first.click()
    await expect(page).to_have_url(re.compile(r"/note/Projects/Kitchen%20Renovation\.md"))
    note = page.locator("article.note")
    # (The embedded note's own heading is inside its embed.)
    title = note.locator("h1:not(.note-embed h1)")
    await expect(title).to_have_text("Kitchen Renovation")
    # Front matter as properties; the body's own title is not shown twice.
    properties = note.locator(".properties")
    await expect(properties).to_contain_text("status")
    await expect(properties).to_contain_text("in progress")
    await expect(properties).to_contain_text("14380")
    await expect(title).to_have_count(1)
    # A callout, a table, task lists, highlighted code.
    callout = note.locator(".callout[data-callout=warning]")
    await expect(callout.locator(".callout-title")).to_have_text("Before the fitter comes")
    await expect(callout).to_contain_text("Empty the cupboards")
    await expect(note.locator("table")).to_contain_text("cabinets")
    await expect(note.get_by_role("checkbox", name="Done", exact=True)).to_have_count(1)
    await expect(note.get_by_role("checkbox", name="Not done", exact=True)).to_have_count(1)
    await expect(note.locator("pre code.language-python .hljs-keyword").first).to_have_text("def")
    # Links: resolved ones navigate in the reader, an unresolved one says so, none shows its brackets.
    await expect(note.locator("a.wikilink", has_text="Costa")).to_have_attribute("href", "/note/Suppliers.md#Stone")
    await expect(note.locator(".wikilink.unresolved")).to_have_text("Nobody Yet")
    assert "[[" not in await note.inner_text()
    # #tags open their notes; the embedded note shows its text.
    await expect(note.locator(".note-body a.tag-link", has_text="#home")).to_have_attribute("href", "/browse?tag=home")
    # ...and only those the index counts: no '#' right after code, a link or a bracket.
    await expect(note.locator(".note-body a.tag-link")).to_have_count(1)
    embed = note.get_by_role("group", name="Embedded: Suppliers")
    await expect(embed).to_contain_text("Costa Stone cut the quartz worktop")
    # The image is the vault's own bytes, shown.
    image = note.locator("img.vault-image")
    await expect(image).to_have_attribute("alt", "kitchen-plan.png")
    assert await image.evaluate("(img) => img.complete && img.naturalWidth") == 40
    # Beside it: links and backlinks.
    side = page.get_by_role("complementary", name="Links and related notes")
    await expect(side.locator("#outgoing-title")).to_contain_text("Links")
    await expect(side).to_contain_text("Marta")
    await expect(side).to_contain_text("not in the index")
    # Related notes, each with why: Marta links here and is linked from here.
    marta = side.get_by_test_id("related").filter(has_text="Marta")
    await expect(marta.locator(".why")).to_contain_text("linked both ways", timeout=15_000)
    await shoot(page, "reader-desktop-light")


async def test_a_wikilink_opens_its_note_and_back_returns(vault: Gateway, page: Page) -> None:
    await page.goto(note_url(vault, "Projects/Kitchen Renovation.md"))
    await page.locator("article.note a.wikilink", has_text="Costa").click()
    await expect(page).to_have_url(re.compile(r"/note/Suppliers\.md#Stone$"))
    await expect(page.locator("article.note")).to_contain_text("Costa Stone cut the quartz")
    # The heading it names is the one scrolled to.
    await expect(page.locator("#stone")).to_be_in_viewport()
    await page.go_back()
    await expect(page).to_have_url(re.compile(r"/note/Projects/Kitchen%20Renovation\.md$"))
    await expect(page.locator("article.note")).to_contain_text("pale grey")
    await page.go_forward()
    await expect(page.locator("article.note")).to_contain_text("Costa Stone cut the quartz")
    # [[#Costs]] is a heading of the same note.
    await page.go_back()
    await page.locator("article.note a.wikilink", has_text="Costs").click()
    await expect(page).to_have_url(re.compile(r"#costs$"))
    await expect(page.locator("#costs")).to_be_in_viewport()


async def test_a_backlink_opens_the_linking_note_at_its_line_and_a_citation_highlights_its_lines(
    vault: Gateway, page: Page
) -> None:
    await page.goto(note_url(vault, "Projects/Kitchen Renovation.md"))
    backlinks = page.get_by_role("complementary").locator("section", has=page.locator("#backlinks-title"))
    await expect(backlinks).to_contain_text("Marta")
    await backlinks.get_by_role("link", name="Marta").click()
    await expect(page).to_have_url(re.compile(r"/note/People/Marta\.md\?lines=3-3$"))
    cited = page.locator("article.note .cited")
    await expect(cited).to_have_count(1)
    await expect(cited).to_contain_text("She is fitting the Kitchen Renovation")

    # A citation's lines (file lines, front matter counted): the costs table's rows, highlighted and in view.
    await page.goto(note_url(vault, "Projects/Kitchen Renovation.md", "?lines=18-20"))
    cited = page.locator("article.note .cited")
    await expect(cited.first).to_be_in_viewport()
    text = " ".join(await cited.all_inner_texts())
    assert "worktop" in text and "2,400" in text and "cabinets" in text, text
    assert "Empty the cupboards" not in text
    await expect(page.get_by_role("status").filter(has_text="Showing lines 18\u201320")).to_be_visible()
    await shoot(page, "reader-cited-lines")
    # A reload of the address is the same page (the gateway answers the UI's routes with the app).
    await page.reload()
    await expect(page.locator("article.note .cited").first).to_be_visible()


async def test_a_note_that_is_not_indexed_is_said_plainly(vault: Gateway, page: Page) -> None:
    await page.goto(note_url(vault, "Nowhere/Missing.md"))
    await expect(page.get_by_role("alert")).to_contain_text("the index holds no note at 'Nowhere/Missing.md'")
    await expect(page.get_by_role("link", name="Browse your notes")).to_be_visible()
    # The reader reads the index, never a file: a path out of the vault, or to a file beside the notes that the
    # index does not hold (the vault's settings), is no note. (A picture the index read is: its text, if any.)
    for hostile in ("..%2F..%2Fsecondbrain.json", "%2Fetc%2Fpasswd", "secondbrain.json", "Projects/kitchen-plan.svg"):
        await page.goto(f"{vault.envoy_url}/note/{hostile}")
        await expect(page.get_by_role("alert")).to_contain_text("the index holds no note at")
        assert "embedding" not in await page.locator("main").inner_text()


async def test_folders_tags_and_dates_are_browsed_without_typing(vault: Gateway, page: Page) -> None:
    await page.get_by_role("link", name="Browse", exact=True).click()
    await expect(page).to_have_url(re.compile(r"/browse$"))
    side = page.get_by_role("navigation", name="Browse by")
    folders = side.get_by_role("list", name="Folders")
    await expect(folders).to_contain_text("Projects")
    await folders.get_by_role("link", name="Projects").click()
    await expect(page).to_have_url(re.compile(r"/browse\?folder=Projects$"))
    await expect(page.get_by_role("heading", level=1)).to_have_text("Notes in Projects")
    listed = page.get_by_test_id("listed-note")
    await expect(listed).to_have_count(3)  # Garden, Kitchen Renovation and the picture kitchen-plan.png
    await expect(listed.filter(has_text="Kitchen Renovation")).to_have_count(1)

    # A nested tag under its parent, folded until opened.
    tags = side.get_by_role("list", name="Tags")
    await tags.get_by_role("button", name="Unfold #project").click()
    await tags.get_by_role("link", name="#kitchen").click()
    await expect(page).to_have_url(re.compile(r"tag=project%2Fkitchen"))
    await expect(listed).to_have_count(1)
    await expect(listed.first).to_contain_text("Kitchen Renovation")

    # A day of the calendar: the journal note of 20 January 2026.
    await page.goto(f"{vault.envoy_url}/browse?from=2026-01-01&to=2026-01-31")
    await expect(page.get_by_role("heading", level=1)).to_contain_text("Notes from")
    day = side.get_by_role("link", name=re.compile(r"^(20 January|January 20): 1 note"))
    await day.click()
    await expect(page).to_have_url(re.compile(r"from=2026-01-20&to=2026-01-20"))
    await expect(listed).to_have_count(1)
    await listed.first.get_by_role("link").first.click()
    await expect(page.locator("article.note")).to_contain_text("Marta measured the walls")
    await page.go_back()
    await expect(listed).to_have_count(1)
    await shoot(page, "browse-desktop-light")


async def test_search_filters_are_picked_from_the_vault_and_the_search_is_the_url(vault: Gateway, page: Page) -> None:
    await expect(page.get_by_label("Folders").locator("option", has_text="Projects")).to_have_count(1)
    await page.get_by_label("Search", exact=True).fill("worktop")
    await page.get_by_label("Folders").select_option("Projects")
    await expect(page.get_by_role("button", name="Remove the folder filter Projects")).to_be_visible()
    await page.get_by_role("button", name="Search").click()
    await expect(page).to_have_url(re.compile(r"\?q=worktop&folder=Projects$"))
    hits = page.get_by_test_id("hit")
    await expect(hits).to_have_count(1)
    await hits.first.get_by_role("link").click()
    await expect(page.locator("article.note")).to_be_visible()
    await page.go_back()
    # Back from the note: the same search, its results and its filter.
    await expect(hits).to_have_count(1)
    await expect(page.get_by_label("Search", exact=True)).to_have_value("worktop")
    await expect(page.get_by_role("button", name="Remove the folder filter Projects")).to_be_visible()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390, 360])
async def test_the_reader_and_browsing_at_desktop_and_phone_widths(
    vault: Gateway, browser: Browser, scheme: str, width: int
) -> None:
    context = await browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        await page.goto(note_url(vault, "Projects/Kitchen Renovation.md"))
        await expect(page.locator("img.vault-image")).to_be_visible()
        # Nothing is wider than the screen: the page never scrolls sideways.
        overflow = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the reader is {overflow} px wider than a {width} px screen"
        await shoot(page, f"reader-{width}-{scheme}")
        await page.goto(f"{vault.envoy_url}/browse?folder=Projects")
        await expect(page.get_by_test_id("listed-note")).to_have_count(3)  # two notes and a picture
        overflow = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"browsing is {overflow} px wider than a {width} px screen"
        await shoot(page, f"browse-{width}-{scheme}")
        # Search: on a phone the filters fold behind a button, open when the search has one.
        await page.goto(f"{vault.envoy_url}/?q=worktop&folder=Projects")
        await expect(page.get_by_test_id("hit")).to_have_count(1)
        await expect(page.get_by_role("button", name="Remove the folder filter Projects")).to_be_visible()
        toggle = page.get_by_role("button", name="Filters (1)")
        if width < 700:
            await expect(toggle).to_have_attribute("aria-expanded", "true")
            await toggle.click()
            await expect(page.get_by_label("Folders")).to_be_hidden()
        else:
            await expect(toggle).to_be_hidden()
        overflow = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"search is {overflow} px wider than a {width} px screen"
        await shoot(page, f"search-{width}-{scheme}")
    finally:
        await context.close()
    assert not errors, errors


async def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    results = await Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['html'][:120] for node in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
async def test_axe_finds_nothing_serious_on_the_reader_browsing_and_search(
    vault: Gateway, browser: Browser, scheme: str, width: int
) -> None:
    context = await browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = await context.new_page()
    found: dict[str, list[str]] = {}
    try:
        await page.goto(note_url(vault, "Projects/Kitchen Renovation.md", "?lines=18-20"))
        # (Related notes are a vector search; on a loaded machine they take a moment.)
        await expect(page.locator("img.vault-image")).to_be_visible(timeout=15_000)
        await expect(page.get_by_test_id("related").first).to_be_visible(timeout=15_000)
        found["reader, cited lines"] = await serious_violations(page)
        await page.goto(f"{vault.envoy_url}/browse?tag=project%2Fkitchen")
        await expect(page.get_by_test_id("listed-note")).to_have_count(1)
        found["browse by tag"] = await serious_violations(page)
        await page.goto(f"{vault.envoy_url}/browse?from=2026-01-20&to=2026-01-20")
        await expect(page.get_by_test_id("listed-note")).to_have_count(1)
        found["browse by day"] = await serious_violations(page)
        await page.goto(f"{vault.envoy_url}/?q=worktop&folder=Projects")
        await expect(page.get_by_test_id("hit")).to_have_count(1)
        found["search with a filter"] = await serious_violations(page)
        await page.goto(note_url(vault, "Nowhere.md"))
        await expect(page.get_by_role("alert")).to_be_visible()
        found["a note not in the index"] = await serious_violations(page)
        await page.goto(f"{vault.envoy_url}/status")
        await expect(page.get_by_test_id("notes")).to_be_visible()
        found["the index"] = await serious_violations(page)
        await page.goto(f"{vault.envoy_url}/browse/no/such/page")
        await expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
        found["not a page"] = await serious_violations(page)
    finally:
        await context.close()
    assert not any(found.values()), found


@pytest.mark.timeout(180)
async def test_the_reader_follows_the_vault_while_ingest_watches_and_the_header_says_how_fresh(
    vault: Gateway, page: Page
) -> None:
    # Not watching: the header says when the index last took a change in, and that it is not watching.
    freshness = page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile("^Index"))
    await expect(freshness).to_have_accessible_name(re.compile(r"^Index\s*,\s*Synced .*not watching the vault$"))
    async with grpc.aio.insecure_channel(vault.ingest_address) as channel:
        stub = ingest_grpc.IngestServiceStub(channel)
        stream = stub.SyncVault(ingest.SyncVaultRequest(watch=True))
        # The sync is done (its totals come once) before the vault changes; the stream then goes on watching.
        async for event in stream:
            if event.WhichOneof("event") == "done":
                break
        vault.chat.write("People/Marta.md", MARTA.replace("in January", "in February, not January"))
        async for event in stream:
            if event.WhichOneof("event") == "file" and event.file.path == "People/Marta.md":
                break
        await page.goto(note_url(vault, "People/Marta.md"))
        await expect(page.locator("article.note")).to_contain_text("in February, not January")
        await expect(freshness).to_have_accessible_name(re.compile(r"^Index\s*,\s*Up to date"))
        await freshness.click()
        await expect(page.get_by_test_id("watching")).to_contain_text("yes")
        await expect(page.get_by_test_id("pending")).to_have_text("0")
        stream.cancel()


async def test_the_reader_by_keyboard_alone(vault: Gateway, page: Page) -> None:
    # The first Tab is the skip link, shown while focused; it takes focus past the header.
    skip = page.get_by_role("link", name="Skip to content")
    await expect(page.get_by_label("Search", exact=True)).to_be_visible()  # the app is drawn
    await page.keyboard.press("Tab")
    await expect(skip).to_be_focused()
    await expect(skip).to_be_in_viewport()
    await page.keyboard.press("Enter")
    await expect(page.locator("main")).to_be_focused()
    # A note opened puts focus on its title, and its links are reached and followed with the keyboard.
    await page.goto(note_url(vault, "Projects/Kitchen Renovation.md"))
    await expect(page.locator("#note-title")).to_be_focused()
    costa = page.locator("article.note a.wikilink", has_text="Costa")
    for _ in range(40):
        await page.keyboard.press("Tab")
        if await costa.evaluate("(link) => link === document.activeElement"):
            break
    await expect(costa).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page).to_have_url(re.compile(r"/note/Suppliers\.md#Stone$"))
    await expect(page.locator("#note-title")).to_be_focused()
    await expect(page.locator("#note-title")).to_have_text("Suppliers")
