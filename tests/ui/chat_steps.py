"""What a person does on the chat page, shared by the chat's browser tests: open it from the header, ask."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

# A conversation's own address, /chat/<id>.
CONVERSATION_URL = re.compile(r"/chat/([0-9a-f-]{36})$")
# A new conversation's, /chat.
NEW_CONVERSATION_URL = re.compile(r"/chat$")


async def open_chat(page: Page) -> None:
    """The header's speech bubble, a link to the chat page, and the page ready for a question."""
    await page.get_by_role("link", name="Open chat").click()
    await expect(page.get_by_label("Your question")).to_be_visible()


async def ask(page: Page, question: str) -> None:
    await page.get_by_label("Your question").fill(question)
    await page.get_by_role("button", name="Send").click()


def conversation_id(url: str) -> str:
    match = CONVERSATION_URL.search(url)
    assert match, f"{url} is not a conversation's address"
    return match.group(1)
