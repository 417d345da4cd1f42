"""The chat page under axe-core (axe-playwright-python) in each of its states (empty with the vault's questions,
answered, a passage open, the settings open, the drawer at 390 px), in the light and the dark palette: no serious
or critical violation. Each state is also saved as a screenshot at 1280 and 390 px under build/screenshots/."""

from __future__ import annotations

import pytest
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Browser, Page, expect

from tests.gateway.conftest import Gateway
from tests.ui.chat_steps import ask
from tests.ui.conftest import SCREENSHOTS, settle
from tests.wire import Reply

AXE = Axe()
ANSWER = [
    "Water the tomatoes **every morning** before nine [1], and the basil less often [1].\n\n",
    "- compost and loam in the raised beds [2]\n",
]


async def assert_accessible(page: Page, state: str) -> None:
    """No serious or critical axe-core violation on the page as it is now; each one found is named with where."""
    results = await AXE.run(page)
    bad = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    found = [f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes'][:5]]}" for v in bad]
    assert not found, f"axe-core, {state}:\n" + "\n".join(found)


async def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / f"{name}.png")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_chat_page_in_each_state_has_no_serious_accessibility_violation(
    browser: Browser, gateway: Gateway, scheme: str
) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    errors: list[str] = []
    try:
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(f"{gateway.envoy_url}/chat")

        # Empty, with the questions the vault suggests.
        await expect(
            page.get_by_role("region", name="Questions from your notes").get_by_role("button")
        ).not_to_have_count(0)
        await assert_accessible(page, "empty")
        await shoot(page, f"chat-empty-1280-{scheme}")

        # Answered, its sources listed and the retrieval shown.
        gateway.chat.llm.script.push(Reply(deltas=ANSWER))
        await ask(page, "How often do I water the tomatoes?")
        answer = page.get_by_test_id("answer").last
        await expect(answer.get_by_role("list", name="Cited sources")).to_be_visible(timeout=15_000)
        await expect(page.get_by_role("button", name="Send")).to_be_visible()
        await expect(page.locator("nav.conversations li")).to_have_count(1)
        await answer.get_by_role("button", name="How were these found?").click()
        await assert_accessible(page, "answered")
        await shoot(page, f"chat-answered-1280-{scheme}")

        # A passage open.
        await answer.locator(".text button.cite").first.click()
        await expect(page.get_by_role("dialog", name="Passage 1")).to_be_visible()
        await assert_accessible(page, "passage open")
        await shoot(page, f"chat-passage-1280-{scheme}")
        await page.keyboard.press("Escape")

        # The settings open.
        await page.get_by_role("button", name="Settings").click()
        await expect(page.get_by_role("dialog", name="Chat settings")).to_be_visible()
        await assert_accessible(page, "settings open")
        await shoot(page, f"chat-settings-1280-{scheme}")
        await page.keyboard.press("Escape")

        # A phone's width: the conversation, the passage, the drawer.
        await page.set_viewport_size({"width": 390, "height": 844})
        await expect(page.get_by_label("Your question")).to_be_in_viewport()
        await assert_accessible(page, "answered at 390 px")
        await shoot(page, f"chat-answered-390-{scheme}")
        await page.get_by_test_id("answer").last.locator(".text button.cite").first.click()
        await expect(page.get_by_role("dialog", name="Passage 1")).to_be_visible()
        await shoot(page, f"chat-passage-390-{scheme}")
        await page.keyboard.press("Escape")
        await page.get_by_role("button", name="Conversations").click()
        drawer = page.get_by_role("navigation", name="Conversations")
        await expect(drawer).to_be_visible()
        await expect(drawer.get_by_role("button", name="+ New conversation")).to_be_focused()
        await assert_accessible(page, "drawer open at 390 px")
        await shoot(page, f"chat-drawer-390-{scheme}")
        await page.keyboard.press("Escape")
        await expect(drawer).to_be_hidden()
        await expect(page.get_by_role("button", name="Conversations")).to_be_focused()

        # Empty at 390 px.
        await page.get_by_role("button", name="Conversations").click()
        await drawer.get_by_role("button", name="+ New conversation").click()
        await expect(page.get_by_role("region", name="Questions from your notes")).to_be_visible()
        await assert_accessible(page, "empty at 390 px")
        await shoot(page, f"chat-empty-390-{scheme}")
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        await context.close()
    assert not errors, f"the page threw: {errors}"
