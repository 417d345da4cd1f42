"""The web UI as an app a phone installs, in Debian's Chromium over the real stack: Envoy serving HTTPS with a
certificate made in the test (Chromium trusts that one certificate by its key's hash), at a name that is not this
machine's, as a phone on the home network sees the server.

Over HTTPS the service worker registers and controls the page, the manifest is fetched and parsed, and Chrome finds
nothing that stops an install; cut the network and the app says the server cannot be reached, loads its shell from
the worker, and clears the notice when the network is back; no cache holds a note's text or anything the API
answered. Over plain HTTP at that name no worker runs, and the UI says why it cannot be installed. This machine's
own address (a secure context without TLS) gets the worker too. The header's links and buttons are 44 px touch
targets at 360 and 390 px wide. Screenshots at 390 and 1280 px, light and dark, go to build/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import BrowserContext, Page, Playwright, async_playwright, expect

from secondbrain.gateway.envoy import Envoy
from secondbrain.gateway.server import default_ui_dir
from tests.gateway.conftest import Gateway
from tests.gateway.tls import PHONE_NAME, make_certificates, start_envoy
from tests.ui.conftest import CHROMIUM, CHROMIUM_FLAGS, SCREENSHOTS, settle

TOKEN = "a-phone-token-of-more-than-16-chars"
# A sentence of a note (tests/chat/conftest.py's vault) the test reads in the UI: no cache may hold it.
NOTE_TEXT = "We stay in Alfama near the castle"
OFFLINE = "Can\u2019t reach the secondbrain server"
NEEDS_HTTPS = "Installing secondbrain as an app needs HTTPS; see docs/deploy.md."
PHONE = {"width": 390, "height": 844}
SMALL_PHONE = {"width": 360, "height": 740}
DESKTOP = {"width": 1280, "height": 800}

# Every cache's entries, and whether any body holds `needle`.
CACHE_CONTENTS = """async (needle) => {
  const found = [];
  for (const name of await caches.keys()) {
    const cache = await caches.open(name);
    for (const request of await cache.keys()) {
      const body = await (await cache.match(request)).text();
      found.push({ cache: name, path: new URL(request.url).pathname, holds: body.includes(needle) });
    }
  }
  return found;
}"""


@dataclass
class Phone:
    """The stack as a phone reaches it: Envoy over HTTPS and over plain HTTP at PHONE_NAME (with the token a
    server open to other machines needs), and Chromium resolving that name to loopback and trusting the test's
    certificate, each context a profile of its own (not incognito, where Chrome installs nothing)."""

    gateway: Gateway
    https: Envoy
    http: Envoy
    playwright: Playwright
    flags: list[str]
    profiles: Path
    opened: list[BrowserContext] = field(default_factory=list)

    @property
    def https_url(self) -> str:
        return f"https://{PHONE_NAME}:{self.https.port}"

    @property
    def http_url(self) -> str:
        return f"http://{PHONE_NAME}:{self.http.port}"

    async def context(self, viewport: dict[str, int], scheme: str = "light") -> BrowserContext:
        context = await self.playwright.chromium.launch_persistent_context(
            self.profiles / str(len(self.opened)),
            executable_path=CHROMIUM,
            args=self.flags,
            viewport=viewport,  # type: ignore[arg-type]
            color_scheme=scheme,  # type: ignore[arg-type]
            has_touch=viewport["width"] < 700,
        )
        self.opened.append(context)
        # The token entered once, as the UI's prompt keeps it.
        await context.add_init_script(f"localStorage.setItem('secondbrain.apiToken', {TOKEN!r})")
        return context


@pytest.fixture
async def phone(gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Phone]:
    assert (default_ui_dir() / "sw.js").is_file(), "the web UI is not built: run `make ui`"
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    await gateway.chat.configure()
    await gateway.start()
    certificates = make_certificates(tmp_path / "certs")
    https = await start_envoy(gateway, tmp_path / "envoy-https", tls=certificates.tls, loopback_names_only=False)
    http = await start_envoy(gateway, tmp_path / "envoy-http", tls=None, loopback_names_only=False)
    flags = [
        *CHROMIUM_FLAGS,
        f"--host-resolver-rules=MAP {PHONE_NAME} 127.0.0.1",
        # Trusted as a CA-issued certificate is (a certificate error would forbid the service worker), by its key.
        f"--ignore-certificate-errors-spki-list={certificates.spki_sha256}",
        # Let Chrome offer the install prompt on a page it has just met (it waits for engagement otherwise).
        "--bypass-app-banner-engagement-checks",
    ]
    try:
        async with async_playwright() as playwright:
            handle = Phone(gateway, https, http, playwright, flags, tmp_path / "profiles")
            try:
                yield handle
            finally:
                for context in handle.opened:
                    await context.close()
    finally:
        await https.stop()
        await http.stop()


def _built_shell() -> set[str]:
    ui = default_ui_dir()
    return {"/" + path.relative_to(ui).as_posix() for path in ui.rglob("*") if path.is_file()} - {"/sw.js"}


async def _serious_violations(page: Page) -> list[str]:
    results = await Axe().run(page)
    return [
        f"{violation['id']}: {violation['help']}"
        for violation in results.response["violations"]
        if violation["impact"] in ("serious", "critical")
    ]


async def _controlled(page: Page) -> None:
    await page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=20_000)


@pytest.mark.timeout(240)
async def test_over_https_the_app_installs_runs_offline_from_its_shell_and_caches_no_note(phone: Phone) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = await phone.context(PHONE)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(phone.https_url)
    assert await page.evaluate("() => window.isSecureContext")
    # A shell an earlier build left (the worker registers a few seconds after the page has loaded).
    await page.evaluate(
        "async () => { await (await caches.open('secondbrain-shell-0000')).put('/old.js', new Response('old')); }"
    )

    # The service worker registers (the shell precached) and controls the page it was registered from; the
    # earlier build's shell is gone.
    await _controlled(page)
    assert await page.evaluate("() => navigator.serviceWorker.controller.scriptURL") == f"{phone.https_url}/sw.js"
    names = await page.evaluate("() => caches.keys()")
    assert len(names) == 1 and names[0].startswith("secondbrain-shell-") and names[0] != "secondbrain-shell-0000"

    # The manifest, as Chrome reads it: parsed, with nothing that stops an install.
    cdp = await context.new_cdp_session(page)
    manifest = await cdp.send("Page.getAppManifest")
    assert manifest["errors"] == [], manifest["errors"]
    assert manifest["url"] == f"{phone.https_url}/manifest.webmanifest"
    installability = await cdp.send("Page.getInstallabilityErrors")
    assert installability["installabilityErrors"] == []
    parsed = await page.evaluate("async () => (await fetch('/manifest.webmanifest')).json()")
    assert (parsed["name"], parsed["start_url"], parsed["scope"], parsed["display"]) == (
        "secondbrain", "/", "/", "standalone",
    )  # fmt: skip
    icons = {(icon["sizes"], icon["purpose"]): icon["src"] for icon in parsed["icons"]}
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= icons.keys()
    for (sizes, _), src in icons.items():
        if sizes == "any":
            continue
        drawn = await page.evaluate(
            "async (src) => { const image = await createImageBitmap(await (await fetch(src)).blob());"
            " return `${image.width}x${image.height}`; }",
            src,
        )
        assert drawn == sizes, src
    # Chrome offers to install (the engagement it waits for is bypassed), and the app shows the offer.
    offer = page.get_by_role("complementary", name="Installing the app")
    await expect(offer.get_by_role("button", name="Install")).to_be_visible()
    await expect(offer).not_to_contain_text("HTTPS")

    # Read a note, through grpc-web: its text is on the page, and must not be in any cache.
    await page.get_by_label("Search", exact=True).fill("Lisbon")
    await page.get_by_label("Search", exact=True).press("Enter")
    await page.get_by_role("link", name=re.compile("Travel")).first.click()
    await expect(page.get_by_text(NOTE_TEXT)).to_be_visible()
    await page.screenshot(path=SCREENSHOTS / "pwa-390-light-online.png")

    # Offline: the notice says so, over a shell that still works, and axe finds nothing serious in it.
    await context.set_offline(True)
    notice = page.get_by_role("alert").filter(has_text=OFFLINE)
    await expect(notice).to_be_visible()
    await expect(notice).to_contain_text("This device is offline")
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / "pwa-390-light-offline.png")
    assert await _serious_violations(page) == []

    # A reload while offline opens the app from the worker's shell, the notice shown at once.
    reloaded = await page.reload()
    assert reloaded is not None and reloaded.from_service_worker
    await expect(page.get_by_role("link", name="secondbrain")).to_be_visible()
    await expect(notice).to_be_visible()
    await page.get_by_role("link", name="Browse", exact=True).click()
    await expect(page).to_have_url(f"{phone.https_url}/browse")
    browsed = await page.goto(f"{phone.https_url}/status")
    assert browsed is not None and browsed.from_service_worker
    await expect(notice).to_be_visible()

    # Back online: the notice clears by itself.
    await context.set_offline(False)
    await expect(notice).to_be_hidden(timeout=20_000)

    # What the caches hold: the build's shell files, nothing else, and no note text.
    cached = await page.evaluate(CACHE_CONTENTS, NOTE_TEXT)
    assert cached, "the worker cached the shell"
    assert {entry["path"] for entry in cached} <= _built_shell()
    assert {entry["path"] for entry in cached} >= {"/index.html", "/manifest.webmanifest", "/icons/icon-192.png"}
    assert not [entry for entry in cached if entry["holds"]], "a note's text is in a cache"
    assert not [entry for entry in cached if re.match(r"/(secondbrain\.|api/|mcp|v1/)", entry["path"])]
    await context.close()
    assert not errors, errors


@pytest.mark.timeout(240)
async def test_screenshots_of_the_offline_notice_at_phone_and_desktop_width_light_and_dark(phone: Phone) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, viewport in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            context = await phone.context(viewport, scheme)
            page = await context.new_page()
            await page.goto(phone.https_url)
            await _controlled(page)
            await expect(page.get_by_label("Search", exact=True)).to_be_visible()
            await context.set_offline(True)
            await page.reload()
            notice = page.get_by_role("alert").filter(has_text=OFFLINE)
            await expect(notice).to_be_visible()
            await settle(page)
            # The notice stays within the screen, its button a touch target.
            box = await notice.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
            assert box["y"] + box["height"] <= viewport["height"]
            retry = await notice.get_by_role("button", name="Try again").bounding_box()
            assert retry is not None and retry["height"] >= 44
            await page.screenshot(path=SCREENSHOTS / f"pwa-{width}-{scheme}-offline.png")
            assert await _serious_violations(page) == []
            await context.close()


async def test_when_the_server_does_not_answer_the_app_opens_from_its_shell_and_says_so(phone: Phone) -> None:
    context = await phone.context(PHONE)
    page = await context.new_page()
    await page.goto(phone.https_url)
    await _controlled(page)
    notice = page.get_by_role("alert").filter(has_text=OFFLINE)
    away = f"The server at {PHONE_NAME}:{phone.https.port} does not answer"
    # The network stays; first what is behind Envoy goes away (Envoy answers 503), then Envoy itself.
    shim, phone.gateway.shim = phone.gateway.shim, None
    assert shim is not None
    await shim.stop()
    opened = await page.reload()
    assert opened is not None and opened.from_service_worker
    await expect(notice).to_contain_text(away)
    await phone.https.stop()
    opened = await page.reload()
    assert opened is not None and opened.from_service_worker
    await expect(notice).to_contain_text(away)
    await expect(notice.get_by_role("button", name="Try again")).to_be_enabled()
    await context.close()


@pytest.mark.timeout(180)
async def test_over_plain_http_from_another_machine_the_ui_says_installing_needs_https(phone: Phone) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        context = await phone.context(PHONE, scheme)
        page = await context.new_page()
        await page.goto(phone.http_url)
        assert not await page.evaluate("() => window.isSecureContext")
        # No service worker can run here (the browser has none to offer), and the app still works.
        assert await page.evaluate("() => !('serviceWorker' in navigator)")
        await expect(page.get_by_label("Search", exact=True)).to_be_visible()
        notice = page.get_by_role("complementary", name="Installing the app")
        await expect(notice).to_have_text(re.compile(re.escape(NEEDS_HTTPS)))
        await settle(page)
        await page.screenshot(path=SCREENSHOTS / f"pwa-390-{scheme}-needs-https.png")
        assert await _serious_violations(page) == []
        # Dismissed, it stays dismissed.
        await notice.get_by_role("button", name="Dismiss").click()
        await expect(notice).to_be_hidden()
        await page.reload()
        await expect(page.get_by_label("Search", exact=True)).to_be_visible()
        await expect(notice).to_be_hidden()
        await context.close()


async def test_this_machines_own_address_is_a_secure_context_and_gets_the_worker(phone: Phone) -> None:
    context = await phone.context(DESKTOP)
    page = await context.new_page()
    await page.goto(phone.gateway.envoy_url)
    assert await page.evaluate("() => window.isSecureContext")
    await _controlled(page)
    await expect(page.get_by_label("Search", exact=True)).to_be_visible()
    await expect(page.get_by_text(NEEDS_HTTPS)).to_have_count(0)
    await context.close()


@pytest.mark.parametrize("viewport", [SMALL_PHONE, PHONE], ids=["360", "390"])
async def test_the_headers_links_and_buttons_are_44_px_touch_targets(phone: Phone, viewport: dict[str, int]) -> None:
    context = await phone.context(viewport)
    page = await context.new_page()
    await page.goto(phone.https_url)
    header = page.locator(".app-header")
    await expect(header.get_by_role("link", name="Open chat")).to_be_visible()
    targets: list[dict[str, Any]] = await header.locator("a, button").evaluate_all(
        "(elements) => elements.map((element) => { const box = element.getBoundingClientRect();"
        " return { name: element.textContent.trim() || element.getAttribute('aria-label'),"
        " width: box.width, height: box.height, right: box.right }; })"
    )
    assert len(targets) >= 5, targets
    for target in targets:
        assert target["width"] >= 44 and target["height"] >= 44, target
        assert target["right"] <= viewport["width"], f"{target['name']} is cut off at {viewport['width']} px"
    assert await page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
    await context.close()
