"""The chat as a page to live in, in Chromium through the whole stack: its address is the conversation (a reload
returns to it, back and forward move between conversations, /chat is the one you were last in), a citation opens the
reader at the cited lines, questions drawn from the vault start a conversation, and a conversation can be about one
note and the notes it links to."""

from __future__ import annotations

from urllib.parse import quote

import grpc
import pytest
from playwright.async_api import Page, expect

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as retrieve_grpc
from tests.chat.conftest import eventually
from tests.gateway.conftest import Gateway
from tests.ui.chat_steps import CONVERSATION_URL, NEW_CONVERSATION_URL, ask, conversation_id, open_chat
from tests.ui.conftest import SCREENSHOTS
from tests.wire import Reply

QUESTION = "How often do I water the tomatoes?"


@pytest.mark.timeout(180)
async def test_the_address_is_the_conversation_across_reloads_back_and_forward(gateway: Gateway, page: Page) -> None:
    llm = gateway.chat.llm
    composer = page.get_by_label("Your question")
    await open_chat(page)
    # Nothing to return to yet: a new conversation, the question field ready.
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(composer).to_be_focused()

    # The conversation has its address as soon as its first question makes it, while the answer still streams,
    # and the answer goes on streaming under the new address.
    llm.script.push(Reply(deltas=["Every morning ", "before nine, ", "the tomatoes [1]."], delay=0.6))
    await ask(page, QUESTION)
    await expect(page).to_have_url(CONVERSATION_URL)
    await expect(page.get_by_role("button", name="Stop")).to_be_visible()
    first = page.url
    # It is in the list already, by its question, while the answer is still being written.
    await expect(page.locator("nav.conversations li.active")).to_contain_text(QUESTION)
    await expect(page.get_by_role("button", name="Stop")).to_be_visible()
    answer = page.get_by_test_id("answer").last
    await expect(answer).to_contain_text("the tomatoes", timeout=15_000)
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    await expect(page.get_by_role("heading", level=1)).to_have_text(QUESTION)

    # A second conversation: a new one at /chat, the question field focused, then its own address.
    await page.get_by_role("button", name="+ New conversation").click()
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(composer).to_be_focused()
    await expect(page.get_by_test_id("answer")).to_have_count(0)
    llm.script.push(Reply(deltas=["Twice a day, with rye flour [1]."]))
    await ask(page, "How often is the sourdough starter fed?")
    await expect(page.get_by_test_id("answer").last).to_contain_text("rye flour", timeout=15_000)
    await expect(page).to_have_url(CONVERSATION_URL)
    second = page.url
    assert second != first

    # A reload returns to it.
    await page.reload()
    assert page.url == second
    await expect(page.get_by_test_id("answer").last).to_contain_text("Twice a day, with rye flour")
    await expect(page.get_by_role("heading", level=1)).to_have_text("How often is the sourdough starter fed?")

    # The list's conversations are links to their addresses; back and forward move between them.
    await page.get_by_role("link", name=QUESTION).click()
    await expect(page).to_have_url(first)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")
    await expect(page.locator("nav.conversations li.active")).to_contain_text(QUESTION)
    await page.go_back()
    await expect(page).to_have_url(second)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Twice a day, with rye flour")
    await expect(page.get_by_test_id("answer")).to_have_count(1)
    await page.go_forward()
    await expect(page).to_have_url(first)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")

    # Away and back through the header's link: /chat is the conversation you were last in.
    await page.get_by_role("link", name="Search").click()
    await open_chat(page)
    await expect(page).to_have_url(first)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")

    # Deleted elsewhere: the address says so, and /chat then opens a new conversation.
    await gateway.chat.stub.DeleteConversation(chat.DeleteConversationRequest(id=conversation_id(first)), timeout=10)
    await page.reload()
    await expect(page.locator(".messages").get_by_role("alert")).to_contain_text("not there any more")
    await page.goto(f"{gateway.envoy_url}/chat")
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(composer).to_be_visible()
    await expect(page.get_by_test_id("answer")).to_have_count(0)


@pytest.mark.timeout(180)
async def test_a_citation_opens_the_reader_at_the_cited_lines(gateway: Gateway, page: Page) -> None:
    gateway.chat.llm.script.push(Reply(deltas=["Every morning before nine [1]."]))
    await open_chat(page)
    await ask(page, QUESTION)
    answer = page.get_by_test_id("answer").last
    await expect(answer.locator(".text button.cite")).to_have_count(1, timeout=15_000)
    await expect(page).to_have_url(CONVERSATION_URL)
    chat_address = page.url

    async def answered() -> chat.Conversation | None:
        # The citation shows as the answer streams; the stored answer has its sources once the turn is done.
        stored = await gateway.chat.get(conversation_id(chat_address))
        return stored if stored.messages and stored.messages[-1].sources.passages else None

    stored = await eventually(answered, within=15.0)
    cited = stored.messages[-1].sources.passages[0]
    assert cited.note_path == "Projects/Garden.md"
    reader = f"/note/Projects/Garden.md?lines={cited.start_line}-{cited.end_line}"

    # The cited source under the answer is a link to the reader at its lines.
    source = answer.get_by_role("list", name="Cited sources").get_by_role("link")
    await expect(source).to_have_attribute("href", reader)
    # So is the passage panel's note, with "Open in Obsidian" beside it.
    await answer.locator(".text button.cite").click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage.get_by_role("link", name="Open in Obsidian")).to_be_visible()
    await passage.get_by_role("link", name="Projects/Garden.md").click()
    await expect(page).to_have_url(f"{gateway.envoy_url}{reader}")
    # Back is the conversation, as it was.
    await page.go_back()
    await expect(page).to_have_url(chat_address)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")
    await page.get_by_test_id("answer").last.get_by_role("list", name="Cited sources").get_by_role("link").click()
    await expect(page).to_have_url(f"{gateway.envoy_url}{reader}")


async def suggested(gateway: Gateway) -> list[retrieve.SuggestedQuestion]:
    """The questions the retrieve service draws from the vault, asked of it directly."""
    async with grpc.aio.insecure_channel(gateway.chat.retrieve_address) as channel:
        reply = await retrieve_grpc.RetrieveServiceStub(channel).SuggestQuestions(
            retrieve.SuggestQuestionsRequest(limit=4), timeout=10
        )
    return list(reply.questions)


@pytest.mark.timeout(180)
async def test_questions_drawn_from_the_vault_start_a_conversation(gateway: Gateway, page: Page) -> None:
    expected = await suggested(gateway)
    assert len(expected) >= 2, expected
    await open_chat(page)
    offered = page.get_by_role("region", name="Questions from your notes").get_by_role("button")
    # The vault's own questions, each with the note it comes from.
    await expect(offered.locator(".question")).to_have_text([q.text for q in expected])
    names = [q.note_path.rsplit("/", 1)[-1].removesuffix(".md") for q in expected]
    await expect(offered.locator(".from")).to_have_text([f"from {name}" for name in names])

    # A click asks it: the question is the conversation's first, and the answer streams in.
    gateway.chat.llm.script.push(Reply(deltas=["Here is what your notes say [1]."]))
    await offered.nth(1).click()
    await expect(page.locator(".message.user")).to_have_text(expected[1].text)
    await expect(page.get_by_test_id("answer").last).to_contain_text("what your notes say", timeout=15_000)
    await expect(page).to_have_url(CONVERSATION_URL)
    # The conversation has begun: nothing offered any more.
    await expect(page.get_by_role("region", name="Questions from your notes")).to_have_count(0)
    assert gateway.chat.answer_requests()[-1].json["messages"][-1]["content"].endswith(expected[1].text)


KITCHEN = "Home/Kitchen Renovation.md"
BUDGET = "Home/Budget.md"
# Both mention watering, and only the kitchen note links to the budget; the garden note answers the question best.
SCOPED_NOTES = {
    KITCHEN: "# Kitchen Renovation\n\nWe water the herb planter on the new sill weekly. Costs are in [[Budget]].\n",
    BUDGET: "# Budget\n\nThe water filter tap for the kitchen costs 120 pounds.\n",
}


async def cited_paths(page: Page) -> set[str]:
    """The notes of every passage listed under the last answer, cited or also retrieved."""
    answer = page.get_by_test_id("answer").last
    await expect(answer.locator(".sources li").first).to_be_attached(timeout=15_000)
    texts = await answer.locator(".sources li .reader-link").all_text_contents()
    return {text.split(" \u203a ")[0] for text in texts}


@pytest.mark.timeout(240)
async def test_ask_about_this_note_reads_only_that_note_and_the_notes_it_links_to(gateway: Gateway, page: Page) -> None:
    for path, text in SCOPED_NOTES.items():
        gateway.chat.write(path, text)
    await gateway.chat.ingest()
    llm = gateway.chat.llm
    await page.goto(f"{gateway.envoy_url}/chat?about={quote(KITCHEN, safe='')}")
    chip = page.get_by_test_id("scope")
    await expect(chip.get_by_role("link")).to_have_text("About: Kitchen Renovation")
    await expect(chip.get_by_role("link")).to_have_attribute(
        "title", "Answers read only Kitchen Renovation and the 1 note it links to"
    )
    await expect(page.get_by_label("Your question")).to_be_focused()

    # Its questions read the note and the note it links to, nothing else (the garden note would answer best).
    llm.script.push(Reply(deltas=["Weekly, the herb planter [1]."]))
    await ask(page, QUESTION)
    assert await cited_paths(page) <= {KITCHEN, BUDGET}
    assert KITCHEN in await cited_paths(page)
    await expect(page).to_have_url(CONVERSATION_URL)
    await expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "chat-about-a-note.png")

    # The scope is the conversation's: after a reload it is still there, and still applies.
    await page.reload()
    await expect(chip).to_contain_text("About: Kitchen Renovation")
    llm.script.push(Reply(deltas=["Still weekly [1]."]))
    await ask(page, "And the basil?")
    await expect(page.get_by_test_id("answer")).to_have_count(2)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Still weekly", timeout=15_000)
    assert await cited_paths(page) <= {KITCHEN, BUDGET}

    # Removed, the next question reads the whole vault again, and a reload does not bring the scope back.
    await chip.get_by_role("button", name="Remove “About: Kitchen Renovation”, ask about every note").click()
    await expect(chip).to_have_count(0)
    await expect(page.get_by_label("Your question")).to_be_focused()
    llm.script.push(Reply(deltas=["Every morning before nine [1]."]))
    await ask(page, QUESTION)
    await expect(page.get_by_test_id("answer")).to_have_count(3)
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning", timeout=15_000)
    assert "Projects/Garden.md" in await cited_paths(page)
    await page.reload()
    await expect(page.get_by_test_id("answer")).to_have_count(3)
    await expect(chip).to_have_count(0)
