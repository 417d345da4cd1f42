"""The built web UI under the shim's Content-Security-Policy, in Debian's Chromium through Envoy: a policy that
blocked the UI's own script, stylesheet or grpc-web calls would leave a blank page and a line in the console."""

from __future__ import annotations

import pytest
from playwright.async_api import ConsoleMessage, async_playwright, expect

from secondbrain.gateway.server import default_ui_dir
from tests.gateway.conftest import Gateway
from tests.ui.conftest import CHROMIUM, CHROMIUM_FLAGS


@pytest.mark.timeout(120)
async def test_the_built_ui_works_under_its_content_security_policy(gateway: Gateway) -> None:
    assert (default_ui_dir() / "index.html").is_file(), "the web UI is not built: run `make ui`"
    console: list[str] = []
    thrown: list[str] = []

    def heard(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            console.append(message.text)

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = await browser.new_page()
            page.on("console", heard)
            page.on("pageerror", lambda error: thrown.append(str(error)))
            response = await page.goto(gateway.envoy_url)
            assert response is not None and response.ok
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]

            # The page ran its script, took its stylesheet, and fetched from the gateway over grpc-web.
            await page.get_by_role("link", name="Index").click()
            await expect(page.get_by_test_id("notes")).to_have_text("3")
            font = await page.evaluate("getComputedStyle(document.body).fontFamily")
            assert "Times New Roman" not in font, "styles.css applied"
            icon = await page.request.get(f"{gateway.envoy_url}/favicon.ico")
            assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml"), "the classic path has one"
        finally:
            await browser.close()
    assert not [line for line in console if "Content Security Policy" in line], console
    assert not thrown, thrown
