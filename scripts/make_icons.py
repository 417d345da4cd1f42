"""Makes the web app's PNG icons from ui/public/favicon.svg, drawn by Debian's Chromium (the browser the tests use,
driven by Playwright): nothing to install beyond `make setup`.

    .venv/bin/python scripts/make_icons.py

writes into ui/public/icons/:
- icon-192.png, icon-512.png: the favicon as it is (its rounded square, transparent corners), `purpose: any`;
- maskable-512.png: the glyph on a full-bleed square of the favicon's blue, within the middle circle of 80% of the
  width that a launcher's circle or squircle mask always keeps, `purpose: maskable`;
- apple-touch-icon.png (180 px): the same full-bleed square, since iOS rounds the corners itself and shows
  transparency as black.

Run it again after changing favicon.svg, and commit the PNGs.
"""

from __future__ import annotations

import asyncio
import base64
import re
import shutil
import sys
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
FAVICON = ROOT / "ui" / "public" / "favicon.svg"
OUT = ROOT / "ui" / "public" / "icons"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# How wide the favicon is drawn on a full-bleed icon. Its glyph spans x 5-27 and y 7-26.5 of its 32 units, so at
# 0.8 the glyph's farthest corner is 0.37 of the width from the centre: inside the safe circle (radius 0.4).
MASKABLE_GLYPH = 0.8


def _page(svg: str, size: int, *, full_bleed: bool) -> str:
    data = base64.b64encode(svg.encode()).decode()
    if not full_bleed:
        body = f'<img src="data:image/svg+xml;base64,{data}" width="{size}" height="{size}">'
        background = "transparent"
    else:
        # The favicon's own rounded square is this colour, so on it only the glyph shows.
        background = re.search(r'<rect[^>]*fill="(#[0-9a-fA-F]{6})"', svg).group(1)  # type: ignore[union-attr]
        glyph = round(size * MASKABLE_GLYPH)
        body = f'<img src="data:image/svg+xml;base64,{data}" width="{glyph}" height="{glyph}">'
    return (
        "<!doctype html><style>html,body{margin:0;background:" + background + "}"
        f"body{{width:{size}px;height:{size}px;display:grid;place-items:center}}img{{display:block}}</style>{body}"
    )


async def main() -> None:
    svg = FAVICON.read_text(encoding="utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = [
        ("icon-192.png", 192, False),
        ("icon-512.png", 512, False),
        ("maskable-512.png", 512, True),
        ("apple-touch-icon.png", 180, True),
    ]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for name, size, full_bleed in wanted:
                page = await browser.new_page(viewport={"width": size, "height": size}, device_scale_factor=1)
                await page.set_content(_page(svg, size, full_bleed=full_bleed))
                await page.wait_for_function("[...document.images].every((image) => image.complete)")
                await page.screenshot(path=OUT / name, omit_background=not full_bleed)
                await page.close()
                print(f"{(OUT / name).relative_to(ROOT)}: {size} x {size}, {(OUT / name).stat().st_size} bytes")
        finally:
            await browser.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
