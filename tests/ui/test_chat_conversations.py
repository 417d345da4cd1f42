"""The conversation list in Chromium through the whole stack: searched (ListConversations' query, asked once typing
pauses), exported as a markdown note with its citations as [[links]], renamed and deleted with the keyboard alone;
and the chat's dialogs and live status as a keyboard and a screen reader meet them."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from secondbrain.chat.v1 import chat_service_pb2 as chat
from tests.gateway.conftest import Gateway
from tests.ui.chat_steps import NEW_CONVERSATION_URL, ask, open_chat
from tests.wire import Reply

QUESTION = "How often do I water the tomatoes?"
SOURDOUGH = "How is the sourdough starter fed?"


async def two_conversations(gateway: Gateway) -> tuple[str, str]:
    """A conversation about the tomatoes and one about the starter (its answer alone says 'rye'), ids in that order."""
    stack = gateway.chat
    stack.llm.script.push(Reply(deltas=["Every morning before nine [1]."]))
    tomatoes, _ = await stack.ask(QUESTION)
    stack.llm.script.push(Reply(deltas=["Twice a day, with rye flour [1]."]))
    sourdough, _ = await stack.ask(SOURDOUGH)
    return tomatoes, sourdough


async def tab_to(page: Page, name: str, most: int = 40) -> None:
    """Press Tab until the focused element is named `name` (its aria-label or text), as a keyboard user would."""
    for _ in range(most):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            "(() => { const e = document.activeElement; return e?.getAttribute('aria-label') || e?.textContent; })()"
        )
        if focused == name:
            return
    raise AssertionError(f"{most} presses of Tab never reached {name!r}")


@pytest.mark.timeout(180)
async def test_searching_the_conversations_by_their_words(gateway: Gateway, page: Page) -> None:
    await two_conversations(gateway)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "ListConversations" in request.url else None)
    await open_chat(page)
    items = page.locator("nav.conversations li")
    await expect(items).to_have_count(2)
    asked.clear()

    # Typed a letter at a time, the search is asked once the typing pauses, not once a letter.
    search = page.get_by_label("Search conversations")
    await search.press_sequentially("rye", delay=60)
    # Only the answer says 'rye': the words are looked for in the messages, not only the titles.
    await expect(items).to_have_count(1)
    await expect(items.first).to_contain_text(SOURDOUGH)
    await expect(page.locator("nav.conversations").get_by_role("status")).to_have_text("1 conversation mentions “rye”.")
    assert len(asked) == 1, asked

    await search.fill("zucchini")
    await expect(page.locator("nav.conversations .no-match")).to_have_text("No conversation mentions “zucchini”.")
    await expect(items).to_have_count(0)
    await search.fill("")
    await expect(items).to_have_count(2)
    await expect(page.locator("nav.conversations .no-match")).to_have_count(0)


@pytest.mark.timeout(180)
async def test_a_conversation_exports_as_a_markdown_note_with_its_citations_as_links(
    gateway: Gateway, page: Page
) -> None:
    tomatoes, _ = await two_conversations(gateway)
    await page.goto(f"{gateway.envoy_url}/chat/{tomatoes}")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")
    expected = await gateway.chat.stub.ExportConversation(chat.ExportConversationRequest(id=tomatoes), timeout=10)

    # From the conversation's header.
    async with page.expect_download() as started:
        await page.get_by_role("button", name="Export this conversation").click()
    download = await started.value
    assert download.suggested_filename == expected.file_name
    assert download.suggested_filename.endswith(".md")
    text = (await download.path()).read_text(encoding="utf-8")
    assert text == expected.markdown
    assert QUESTION in text and "Every morning before nine" in text
    assert "[[Projects/Garden" in text or "[[Garden" in text, text

    # And from its entry in the list, by its name.
    async with page.expect_download() as started:
        await page.get_by_role("button", name=f"Export {QUESTION}").click()
    assert (await (await started.value).path()).read_text(encoding="utf-8") == expected.markdown
    await expect(page.get_by_role("alert")).to_have_count(0)


@pytest.mark.timeout(180)
async def test_rename_and_delete_with_the_keyboard_alone(gateway: Gateway, page: Page) -> None:
    tomatoes, _ = await two_conversations(gateway)
    await page.goto(f"{gateway.envoy_url}/chat/{tomatoes}")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")

    # Tab reaches the conversation's Rename button, named with its title; Enter opens the title for editing.
    await tab_to(page, f"Rename {QUESTION}")
    await page.keyboard.press("Enter")
    title = page.get_by_label(f"New title for {QUESTION}")
    await expect(title).to_be_focused()
    # Escape cancels, and focus is back where it was.
    await page.keyboard.press("Escape")
    await expect(title).to_have_count(0)
    await expect(page.get_by_role("button", name=f"Rename {QUESTION}")).to_be_focused()
    await page.keyboard.press("Enter")
    await page.keyboard.press("ControlOrMeta+a")
    await page.keyboard.type("Watering")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("link", name="Watering")).to_be_visible()
    await expect(page.get_by_role("button", name="Rename Watering")).to_be_focused()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Watering")
    stored = await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)
    assert sorted(c.title for c in stored.conversations) == sorted(["Watering", SOURDOUGH])

    # Two more presses of Tab: Export, then Delete; Enter asks first, and deleting the open one starts a new one.
    page.once("dialog", lambda dialog: dialog.accept())
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Export Watering")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Delete Watering")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("nav.conversations li")).to_have_count(1)
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(page.get_by_label("Your question")).to_be_focused()
    stored = await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)
    assert [c.title for c in stored.conversations] == [SOURDOUGH]

    # Another one than the open one: its buttons go with it, and focus stays in the list.
    page.once("dialog", lambda dialog: dialog.accept())
    await page.keyboard.press("Shift+Tab")  # back out of the question field, into the page before it
    await tab_to(page, f"Delete {SOURDOUGH}")
    await page.keyboard.press("Enter")
    await expect(page.locator("nav.conversations li")).to_have_count(0)
    await expect(page.get_by_label("Search conversations")).to_be_focused()
    assert not (await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)).conversations


@pytest.mark.timeout(180)
async def test_dialogs_take_focus_and_give_it_back_and_the_answer_s_status_is_said_once_a_change(
    gateway: Gateway, page: Page
) -> None:
    await open_chat(page)
    # The turn's status, for a screen reader: each phase once, not each word.
    await page.evaluate(
        """() => {
          window.statusChanges = [];
          const status = document.querySelector('[data-testid="turn-status"]');
          new MutationObserver(() => window.statusChanges.push(status.textContent)).observe(
            status, { childList: true, characterData: true, subtree: true });
        }"""
    )
    gateway.chat.llm.script.push(Reply(deltas=[f"word{i} " for i in range(20)] + ["[1]."], delay=0.05))
    await ask(page, QUESTION)
    await expect(page.get_by_test_id("turn-status")).to_have_text("Answer written.", timeout=15_000)
    changes = await page.evaluate("window.statusChanges")
    assert [c for c in changes if c] == ["Searching your notes…", "Writing the answer…", "Answer written."], changes

    # The settings: Enter on the gear opens the dialog with focus in it; Tab stays inside; Escape gives focus back.
    settings_button = page.get_by_role("button", name="Settings")
    await settings_button.focus()
    await page.keyboard.press("Enter")
    settings = page.get_by_role("dialog", name="Chat settings")
    await expect(settings).to_be_focused()
    for _ in range(25):
        await page.keyboard.press("Tab")
        assert await settings.evaluate("(dialog) => dialog.contains(document.activeElement)"), "Tab left the dialog"
    await page.keyboard.press("Escape")
    await expect(settings).to_be_hidden()
    await expect(settings_button).to_be_focused()

    # The passage: the citation's Enter opens it, focused; Escape closes it and the citation has focus again.
    cite = page.get_by_test_id("answer").last.locator(".text button.cite")
    await cite.focus()
    await page.keyboard.press("Enter")
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage).to_be_focused()
    await page.keyboard.press("Escape")
    await expect(passage).to_be_hidden()
    await expect(cite).to_be_focused()
