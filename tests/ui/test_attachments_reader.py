"""Attachments in a real browser (Debian's Chromium) through the whole stack (issue 48): a PDF's passage, cited,
opens the reader at its page with the cited lines highlighted, and the PDF itself opens at that page
(`Boiler manual.pdf#page=2`, Obsidian's own link, which the browser's PDF viewer opens at)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from playwright.async_api import Page, expect

from tests.gateway.conftest import Gateway
from tests.ingest import files_made
from tests.ui.conftest import SCREENSHOTS, settle

PDF_PATH = "Manuals/Boiler manual.pdf"


@pytest.fixture
async def vault(gateway: Gateway) -> AsyncIterator[Gateway]:
    gateway.chat.write("Boiler.md", "# Boiler\n\nThe manual: ![[Manuals/Boiler manual.pdf]]\n")
    manual = files_made.pdf(
        [["Contents", "1 Safety", "2 Servicing"], ["Bleed the radiators before the annual service."], ["Index"]]
    )
    files_made.write(gateway.chat.vault, PDF_PATH, manual)
    await gateway.chat.ingest()
    yield gateway


async def lines_of_page(gateway: Gateway, page: int) -> tuple[int, int]:
    async with gateway.chat.db.pool.acquire() as connection:
        row = await connection.fetchrow(
            """SELECT min(c.start_line) AS first, max(c.end_line) AS last FROM vault_chunks c
               JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1 AND c.page_start = $2""",
            PDF_PATH,
            page,
        )
    return row["first"], row["last"]


async def test_a_cited_page_of_a_pdf_opens_at_that_page(vault: Gateway, page: Page) -> None:
    first, last = await lines_of_page(vault, 2)
    await page.goto(f"{vault.envoy_url}/note/{quote(PDF_PATH)}?lines={first}-{last}")
    await expect(page.get_by_role("heading", name="Boiler manual.pdf", level=1)).to_be_visible()
    await expect(page.locator("article.note .cited").first).to_contain_text("Bleed the radiators")
    await expect(page.get_by_role("heading", name="Page 2")).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Showing page 2, highlighted")).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / "attachment-cited-page.png", full_page=True)

    opener = page.get_by_role("button", name="Open the PDF at page 2")
    await expect(opener).to_have_attribute("data-page-link", f"{PDF_PATH}#page=2")
    async with page.context.expect_page() as opened:
        await opener.click()
    pdf = await opened.value
    assert pdf.url.startswith("blob:") and pdf.url.endswith("#page=2"), pdf.url
    content_type = await pdf.evaluate("document.contentType")
    assert content_type == "application/pdf"


async def test_the_note_that_embeds_a_pdf_links_to_it_and_the_pdf_has_it_as_a_backlink(
    vault: Gateway, page: Page
) -> None:
    vault.chat.write("Service.md", f"# Service\n\nFirst [[{PDF_PATH}#page=2|bleed the radiators]].\n")
    await vault.chat.ingest()
    await page.goto(f"{vault.envoy_url}/note/{quote(PDF_PATH)}")
    backlinks = page.get_by_role("region", name=re.compile("Backlinks"))
    await expect(backlinks.get_by_role("link", name="Boiler")).to_be_visible()
    # A note that links to a page of it says which.
    await expect(backlinks.get_by_role("listitem").filter(has_text="Service")).to_contain_text("citing page 2")
    await expect(backlinks.get_by_role("listitem").filter(has_text="Boiler")).not_to_contain_text("citing")
    # A PDF links nowhere, and is not called a note for it.
    links = page.get_by_role("region", name=re.compile("^Links"))
    await expect(links).to_contain_text("This file links to no note.")
    await expect(page.get_by_role("link", name="Ask about this file")).to_be_visible()
    await expect(page.get_by_role("button", name="Open the PDF", exact=True)).to_be_visible()


async def test_search_is_kept_to_a_type_of_file_picked_from_the_vault(vault: Gateway, page: Page) -> None:
    await page.goto(f"{vault.envoy_url}/?q=boiler")
    await expect(page.get_by_test_id("hit")).to_have_count(2)  # the manual, and the note that embeds it
    types = page.get_by_label("Types")
    await expect(types.locator("option", has_text="pdf (1)")).to_have_count(1)
    await types.select_option("pdf")
    await expect(page).to_have_url(re.compile(r"[?&]type=pdf"))
    await expect(page.get_by_test_id("hit")).to_have_count(1)
    await expect(page.get_by_test_id("hit")).to_contain_text("Boiler manual.pdf")
    await expect(page.get_by_role("button", name="Remove the type filter pdf")).to_be_visible()
