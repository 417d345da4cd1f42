"""Small things a person notices in the chat, in Chromium against the whole stack: the persona saved in the settings
is the one the header shows (a new conversation's, the open one's, after a reload); with no model (the quoting
provider, no key) the persona control says that personas change nothing and how to add a key; a question over the
service's limit keeps its text, says the limit and leaves no empty conversation behind, and so does any question the
service turns away before storing it.
Screenshots of the quoting provider's persona note at 1280 and 390 px, light and dark, under build/screenshots/."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Browser, Page, expect

from secondbrain.chat.v1 import chat_service_pb2 as chat
from tests.gateway.conftest import Gateway
from tests.gateway.test_rate_limit import restart_with
from tests.ui.chat_steps import CONVERSATION_URL, NEW_CONVERSATION_URL, ask, conversation_id, open_chat
from tests.ui.conftest import SCREENSHOTS, settle
from tests.ui.test_chat_accessibility import assert_accessible
from tests.wire import Reply

GARDENER_WORDS = "Speak as a head gardener with forty years"


async def conversations(gateway: Gateway) -> list[chat.Conversation]:
    reply = await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)
    return list(reply.conversations)


async def save_persona(page: Page, persona: str) -> None:
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Chat settings")
    await settings.get_by_label("Persona").select_option(persona)
    await settings.get_by_role("button", name="Save").click()
    await expect(settings).to_be_hidden()


@pytest.mark.timeout(180)
async def test_the_persona_saved_in_the_settings_is_the_one_the_header_shows(gateway: Gateway, page: Page) -> None:
    await open_chat(page)
    header = page.locator(".chat-top").get_by_label("Persona", exact=True)
    await expect(header).to_have_value("assistant")
    # A new conversation's persona chosen in the header, then another saved in the settings: the saved one shows
    # (found by a user: the header kept the earlier choice).
    await header.select_option("gardener")
    await save_persona(page, "assistant")
    await expect(header).to_have_value("assistant")
    gateway.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    await ask(page, "How often do I water the tomatoes?")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning")
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert GARDENER_WORDS not in gateway.chat.answer_requests()[-1].json["messages"][0]["content"]

    # In a conversation, the persona saved in the settings is the header's, and the next answer's
    # (found by a user: the header went on showing the conversation's first persona, after a reload too).
    await save_persona(page, "gardener")
    await expect(header).to_have_value("gardener")
    gateway.chat.llm.script.push(Reply(deltas=["Mornings, lad [1]."]))
    await ask(page, "And the basil?")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Mornings, lad")
    assert GARDENER_WORDS in gateway.chat.answer_requests()[-1].json["messages"][0]["content"]
    opened = conversation_id(page.url)
    stored = await gateway.chat.stub.GetConversation(chat.GetConversationRequest(id=opened), timeout=10)
    assert stored.conversation.persona_id == "gardener"
    await page.reload()
    await expect(page.get_by_test_id("answer").last).to_contain_text("Mornings, lad")
    await expect(header).to_have_value("gardener")

    # A new conversation starts with it, and still does after a reload.
    await page.get_by_role("button", name="+ New conversation").click()
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(header).to_have_value("gardener")
    await page.reload()
    await expect(page.get_by_label("Your question")).to_be_visible()
    await expect(header).to_have_value("gardener")
    saved = (await gateway.chat.stub.GetSettings(chat.GetSettingsRequest(), timeout=10)).settings
    assert saved.persona_id == "gardener"


async def start_quoting(gateway: Gateway) -> None:
    """The chat service again with no key at all: the quoting provider answers (the vault names it the default)."""
    settings = json.loads((gateway.chat.vault / "secondbrain.json").read_text())
    settings["chat"] = {"default_provider": "extractive"}
    (gateway.chat.vault / "secondbrain.json").write_text(json.dumps(settings))
    await gateway.chat.start_chat(env={})
    await gateway.start()


@pytest.mark.timeout(240)
async def test_with_no_model_the_persona_control_says_personas_change_nothing(
    browser: Browser, gateway: Gateway
) -> None:
    await start_quoting(gateway)
    options = await gateway.chat.stub.GetOptions(chat.GetOptionsRequest(), timeout=10)
    assert [p.id for p in options.providers if p.available] == ["extractive"]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        context = await browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
        try:
            page = await context.new_page()
            await page.goto(f"{gateway.envoy_url}/chat")
            top = page.locator(".chat-top")
            await expect(top.locator("button.chip")).to_have_text("Quoting (no model)")
            header = top.get_by_label("Persona", exact=True)
            # Said beside the dropdown, and as its description for a screen reader.
            await expect(top.locator(".persona-note")).to_be_visible()
            await expect(top.locator(".persona-note")).to_contain_text("Personas take effect only with a model")
            await expect(header).to_have_accessible_description(
                "Personas take effect only with a model. Answers now quote your notes; the settings say how to add "
                "a key."
            )
            # Still a control to reach and change from the keyboard (the choice is kept for when a model is added).
            await header.focus()
            await page.keyboard.press("ArrowDown")
            await expect(header).to_have_value("gardener")
            await header.select_option("assistant")
            await settle(page)
            await page.screenshot(path=SCREENSHOTS / f"chat-persona-no-model-{scheme}.png")
            await assert_accessible(page, f"chat, no model ({scheme})")
            await page.set_viewport_size({"width": 390, "height": 844})
            await expect(top.locator(".persona-note")).to_be_in_viewport()
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390
            await settle(page)
            await page.screenshot(path=SCREENSHOTS / f"chat-persona-no-model-390-{scheme}.png")
            await page.set_viewport_size({"width": 1280, "height": 800})

            # The settings say it too, with how to add a key.
            await page.get_by_role("button", name="Settings").click()
            settings = page.get_by_role("dialog", name="Chat settings")
            persona = settings.get_by_label("Persona")
            description = settings.locator("#settings-persona-no-model")
            await expect(description).to_contain_text("Personas take effect only with a model.")
            await expect(description).to_contain_text(
                "To use a model, set ANTHROPIC_API_KEY, OPENAI_API_KEY, TOGETHER_API_KEY, OPENROUTER_API_KEY or "
                "OLLAMA_URL where secondbrain runs, restart it and choose that provider here."
            )
            assert "only with a model" in await persona.evaluate(
                "(el) => document.getElementById(el.getAttribute('aria-describedby')).textContent"
            )
            await expect(settings.get_by_role("button", name="Save")).to_be_in_viewport()
            await settle(page)
            await page.screenshot(path=SCREENSHOTS / f"settings-persona-no-model-{scheme}.png")
            await assert_accessible(page, f"settings, no model ({scheme})")
        finally:
            await context.close()


@pytest.mark.timeout(180)
async def test_with_a_model_no_note_is_shown(gateway: Gateway, page: Page) -> None:
    await open_chat(page)
    top = page.locator(".chat-top")
    await expect(top.locator("button.chip")).to_have_text("GPT-5.4 mini")
    await expect(top.locator(".persona-note")).to_have_count(0)
    await page.get_by_role("button", name="Settings").click()
    await expect(page.get_by_role("dialog", name="Chat settings").locator(".persona-note")).to_have_count(0)


@pytest.mark.timeout(180)
async def test_a_question_over_the_limit_keeps_its_text_and_makes_no_conversation(gateway: Gateway, page: Page) -> None:
    options = await gateway.chat.stub.GetOptions(chat.GetOptionsRequest(), timeout=10)
    assert options.max_question_chars == 8000
    await open_chat(page)
    # The options have come (the limit with them): the model chip names the model.
    await expect(page.locator(".chat-top button.chip")).to_have_text("GPT-5.4 mini")
    question = ("Why " * 5000).strip() + "?"
    assert len(question) == 20_000
    box = page.get_by_label("Your question")
    await box.fill(question)
    await page.get_by_role("button", name="Send").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_have_text(
        "Your question is 20,000 characters long; a question can be at most 8,000. "
        "Shorten it, or ask about one part at a time."
    )
    # The text is still there to shorten; no conversation was made, none is listed, nothing reached the model.
    await expect(box).to_have_value(question)
    await expect(box).to_be_focused()
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    await expect(page.locator("nav.conversations li")).to_have_count(0)
    assert await conversations(gateway) == []
    assert gateway.chat.answer_requests() == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "chat-question-too-long.png")
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(alert).to_be_in_viewport()
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / "chat-question-too-long-390.png")
    await page.set_viewport_size({"width": 1280, "height": 800})
    # Shortened, it is asked.
    gateway.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    await box.fill("How often do I water the tomatoes?")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning")
    await expect(alert).to_have_count(0)
    await expect(box).to_have_value("")
    assert len(await conversations(gateway)) == 1


@pytest.mark.timeout(180)
async def test_a_first_question_the_service_turns_away_leaves_no_empty_conversation(
    gateway: Gateway, page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's refusal is the truth: one the page could not foresee (here, the per-client limit on questions)
    gives the question back and takes away the conversation made for it."""
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1")
    await page.goto(gateway.envoy_url)  # Envoy listens on another port now
    gateway.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    await open_chat(page)
    await ask(page, "How often do I water the tomatoes?")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning")
    await expect(page).to_have_url(CONVERSATION_URL)
    # The turn is over (Send is back in the place of Stop) before the next conversation starts.
    await expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    await page.get_by_role("button", name="+ New conversation").click()
    await expect(page).to_have_url(NEW_CONVERSATION_URL)
    box = page.get_by_label("Your question")
    await box.fill("And the basil?")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_contain_text("too many questions")
    await expect(page.get_by_role("alert")).to_contain_text("at most 1 a minute")
    await expect(box).to_have_value("And the basil?")
    # (The empty conversation made for it is deleted first: a call to the service.)
    await expect(page).to_have_url(NEW_CONVERSATION_URL, timeout=15_000)
    await expect(page.locator("nav.conversations li")).to_have_count(1)
    assert [c.title for c in await conversations(gateway)] == ["How often do I water the tomatoes?"]
