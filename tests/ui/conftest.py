"""The browser tests run against the gateway stack of tests/gateway (itself built on tests/chat's), in Debian's
Chromium driven by Playwright. Every browser test file takes `page` (1280 x 800, at the UI's front page) or `browser`
(for its own contexts: a phone's width, a dark system) from here, and saves its screenshots under build/screenshots/.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from secondbrain.gateway.server import default_ui_dir
from tests.chat.conftest import stack  # noqa: F401
from tests.gateway.conftest import (
    WATCH_FINDINGS,
    Gateway,
    gateway,  # noqa: F401
    listener_watch,
)
from tests.ui.chromium import CHROMIUM, CHROMIUM_FLAGS

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def _check_prerequisites() -> None:
    assert (default_ui_dir() / "index.html").is_file(), "the web UI is not built: run `make ui`"
    assert Path(CHROMIUM).exists(), "Chromium is not installed: run `make setup` (it installs Debian's chromium)"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    _check_prerequisites()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser, gateway: Gateway) -> AsyncIterator[Page]:  # noqa: F811
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    opened = await context.new_page()
    messages: list[str] = []
    opened.on("pageerror", lambda error: messages.append(str(error)))
    try:
        await opened.goto(gateway.envoy_url)
    except PlaywrightTimeoutError as error:
        raise AssertionError(f"the front page did not load: {await _which_hop_hangs(gateway)}") from error
    yield opened
    await context.close()
    assert not messages, f"the page threw: {messages}"


async def _which_hop_hangs(gateway: Gateway) -> str:  # noqa: F811
    """Whether the shim answers the front page itself, and through Envoy, within 5 s each; and how the loop watches
    the shim's listening socket. Said when the front page does not load (once in a full CI run), to tell which hop
    held it."""
    said = []
    for hop, url in (("the shim", gateway.shim_url), ("Envoy", gateway.envoy_url)):
        try:
            async with httpx2.AsyncClient(timeout=5.0) as client:
                said.append(f"{hop} answered {(await client.get(url + '/')).status_code}")
        except httpx2.HTTPError as error:
            said.append(f"{hop} did not answer ({type(error).__name__})")
    assert gateway.shim is not None
    said.append(f"the shim's listening socket: {listener_watch(gateway.shim)}")
    WATCH_FINDINGS.append(f"the front page did not load through Envoy: {'; '.join(said)}")
    return "; ".join(said)


async def settle(page: Page) -> None:
    """Wait for the page's transitions (the drawer sliding in) to finish, for a screenshot."""
    finite = "document.getAnimations().filter((a) => a.effect?.getTiming().iterations !== Infinity)"
    await page.evaluate(f"Promise.all({finite}.map((a) => a.finished))")
