"""The search page with filters, in Chromium against the whole stack: filters without words list the notes they
select, newest first by their own dates; what is listed always answers the URL as it is now (a slower answer to an
earlier search is dropped, clearing everything clears the list); a hit's heading is a section of the days asked.
Screenshots of the list at 1280 and 390 px, light and dark, under build/screenshots/."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.gateway.conftest import Gateway
from tests.ui.conftest import SCREENSHOTS, settle
from tests.ui.test_chat_accessibility import assert_accessible
from tests.wire import Reply

# The UI joins heading paths with this.
NEXT = "\u203a"
LOG = (
    "# Kitchen log\n\nWhat happened in the kitchen.\n\n## 2026-01-21\n\nThe worktop template is booked.\n\n"
    "## 2026-04-10\n\nThe worktop was fitted: the worktop looks fine, a worktop at last.\n"
)


async def dated_vault(gateway: Gateway) -> None:
    gateway.chat.write("Journal/2026-01-20.md", "# 20 January 2026\n\nChose the quartz worktop.\n")
    gateway.chat.write("Journal/2026-01-09.md", "# 9 January 2026\n\nA walk by the river.\n")
    gateway.chat.write("Journal/2026-03-02.md", "# 2 March 2026\n\nThe worktop was fitted.\n")
    gateway.chat.write("Kitchen/Quotes.md", "---\ndate: 2026-01-25\ntags: [kitchen]\n---\n# Quotes\n\nQuartz 1,900.\n")
    gateway.chat.write("Kitchen/Log.md", LOG)
    # Dated in March by its front matter, with an entry of January under a dated heading.
    gateway.chat.write(
        "Kitchen/Plan.md",
        "---\ndate: 2026-03-01\n---\n# Plan\n\nThe plan.\n\n## 19 January 2026\n\nMeasured the worktop.\n",
    )
    await gateway.chat.ingest()


async def january(page: Page) -> None:
    await page.get_by_label("Dated from").fill("2026-01-01")
    await page.get_by_label("Dated to").fill("2026-01-31")


@pytest.mark.timeout(180)
async def test_a_date_range_alone_lists_its_notes_newest_first_and_clearing_it_clears_them(
    gateway: Gateway, page: Page
) -> None:
    await dated_vault(gateway)
    await page.reload()  # the pickers read the vault's folders and tags as the page opens
    hits = page.get_by_test_id("hit")
    # A search first, so there are results for the range to replace.
    await page.get_by_label("Search", exact=True).fill("water")
    await page.get_by_role("button", name="Search").click()
    await expect(hits).to_have_count(1)
    await expect(hits.first).to_contain_text("Projects/Garden.md")

    # No words, a range: the notes dated within it, newest first by their own dates (the log by its January entry),
    # as soon as the days are picked.
    await page.get_by_label("Search", exact=True).fill("")
    await january(page)
    summary = page.get_by_test_id("summary")
    await expect(summary).to_have_text(
        re.compile(r"^5 notes are dated (Jan 1, 2026|1 Jan 2026) to (Jan 31, 2026|31 Jan 2026), newest first\.$")
    )
    await expect(hits.locator(".note-path")).to_have_text(
        ["Kitchen/Quotes.md", "Kitchen/Log.md", "Journal/2026-01-20.md", "Kitchen/Plan.md", "Journal/2026-01-09.md"]
    )
    assert "Garden" not in await page.locator(".search-page").inner_text(), "nothing of the earlier search is left"
    assert re.search(r"[?&]from=2026-01-01&to=2026-01-31$", page.url) and "q=" not in page.url
    # Each note opens in the reader.
    await expect(hits.first.get_by_role("link", name="Quotes")).to_have_attribute("href", re.compile("/note/"))
    await expect(hits.filter(has_text="Kitchen/Quotes.md").locator(".date-chip")).to_contain_text("2026")
    # The plan's own date (1 March) is not January's: no chip says a day the range did not ask for.
    await expect(hits.filter(has_text="Kitchen/Plan.md").locator(".date-chip")).to_have_count(0)

    # A folder narrows it further; a reload shows the same list (the URL is the search).
    await page.get_by_label("Folders").select_option("Kitchen")
    await expect(hits.locator(".note-path")).to_have_text(["Kitchen/Quotes.md", "Kitchen/Log.md", "Kitchen/Plan.md"])
    await expect(summary).to_contain_text("in Kitchen")
    await page.reload()
    await expect(hits.locator(".note-path")).to_have_text(["Kitchen/Quotes.md", "Kitchen/Log.md", "Kitchen/Plan.md"])
    await expect(page.get_by_label("Dated from")).to_have_value("2026-01-01")
    # Back: the list before the folder.
    await page.go_back()
    await expect(hits).to_have_count(5)
    await page.go_forward()
    await expect(hits).to_have_count(3)

    # A tag alone (the days and the folder removed): its notes, newest first.
    await page.get_by_role("button", name="Remove the folder filter Kitchen").click()
    await page.get_by_label("Dated from").fill("")
    await page.get_by_label("Dated to").fill("")
    await page.get_by_label("Tags").select_option("kitchen")
    await expect(hits.locator(".note-path")).to_have_text(["Kitchen/Quotes.md"])
    await expect(summary).to_have_text("1 note is tagged #kitchen, newest first.")

    # Clearing everything clears the list.
    await page.get_by_role("button", name="Remove the tag filter #kitchen").click()
    await expect(hits).to_have_count(0)
    await expect(summary).to_have_count(0)
    # So does a search of nothing.
    await january(page)
    await expect(hits).to_have_count(5)
    await page.get_by_label("Dated from").fill("")
    await page.get_by_label("Dated to").fill("")
    await page.get_by_role("button", name="Search").click()
    await expect(hits).to_have_count(0)


@pytest.mark.timeout(180)
async def test_a_hits_heading_is_from_the_days_asked(gateway: Gateway, page: Page) -> None:
    await dated_vault(gateway)
    hits = page.get_by_test_id("hit")
    await page.get_by_label("Search", exact=True).fill("worktop")
    await page.get_by_role("button", name="Search").click()
    log = hits.filter(has_text="Kitchen/Log.md")
    # Asked of every day, the log's hit is its April entry, which holds the words most.
    await expect(log.locator(".heading-path")).to_have_text("2026-04-10")
    await january(page)
    # Asked of January, it is the January entry: its heading, its words, never April's.
    await expect(log.locator(".heading-path")).to_have_text("2026-01-21")
    await expect(log.locator(".snippet")).to_have_text("The worktop template is booked.")
    await expect(hits.locator(".note-path")).to_have_text(
        ["Journal/2026-01-20.md", "Kitchen/Log.md", "Kitchen/Plan.md"], timeout=10_000
    )
    # The plan, dated 1 March by its front matter, is found for its January entry: its heading says the day, and no
    # chip says March.
    plan = hits.filter(has_text="Kitchen/Plan.md")
    await expect(plan.locator(".heading-path")).to_have_text("19 January 2026")
    await expect(plan.locator(".date-chip")).to_have_count(0)
    # The link opens the note at that entry.
    await expect(log.get_by_role("link", name="Kitchen log")).to_have_attribute("href", re.compile("2026-01-21"))
    await expect(page.get_by_label("Search", exact=True)).to_have_value("worktop")


@pytest.mark.timeout(180)
async def test_a_slower_answer_to_an_earlier_search_is_dropped(gateway: Gateway, page: Page) -> None:
    await dated_vault(gateway)
    hits = page.get_by_test_id("hit")
    # The search's query embedding is held back two seconds; the list the range asks for next needs none.
    gateway.chat.embedder.script.push(Reply(delay=2.0))
    async with page.expect_response(lambda r: r.url.endswith("RetrieveService/Search")) as slow:
        await page.get_by_label("Search", exact=True).fill("walk")
        await page.get_by_role("button", name="Search").click()
        await expect(page.get_by_role("status")).to_have_text("Searching…")
        await page.get_by_label("Search", exact=True).fill("")
        await january(page)
        await expect(hits).to_have_count(5)
    response = await slow.value
    await response.finished()
    # The search's answer has reached the page (two frames for React to have drawn whatever it would draw).
    await page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    await expect(hits).to_have_count(5)
    await expect(page.get_by_test_id("summary")).to_contain_text("5 notes are dated")
    assert "contain" not in await page.get_by_test_id("summary").inner_text()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_list_of_a_range_at_desktop_and_phone_widths(browser: Browser, gateway: Gateway, scheme: str) -> None:
    await dated_vault(gateway)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    try:
        page = await context.new_page()
        await page.goto(f"{gateway.envoy_url}/?from=2026-01-01&to=2026-01-31")
        hits = page.get_by_test_id("hit")
        await expect(hits).to_have_count(5)
        await settle(page)
        await assert_accessible(page, f"search, a range alone ({scheme})")
        await page.screenshot(path=SCREENSHOTS / f"search-range-list-{scheme}.png")
        await page.set_viewport_size({"width": 390, "height": 844})
        await expect(hits).to_have_count(5)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        # The filters are folded, saying how many there are; open, the days are in view.
        await expect(page.get_by_role("button", name="Filters (2)")).to_have_attribute("aria-expanded", "true")
        await settle(page)
        await page.screenshot(path=SCREENSHOTS / f"search-range-list-390-{scheme}.png")
        await assert_accessible(page, f"search, a range alone at 390 px ({scheme})")
    finally:
        await context.close()
