"""The README's first screen, as a newcomer sees it: README.md rendered to HTML (markdown-it, with GitHub's markdown
styles in small) in Chromium at 1280 x 800. What to type to start, where to open it, how to point it at a vault and
how to add a key are all on that first screen, with the picture loaded; the screenshot is
build/screenshots/readme-1280.png."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from playwright.async_api import Browser, Locator

from tests.ui.conftest import SCREENSHOTS

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1280, "height": 800}

# GitHub's file view of a README: a 980 px column (45 px padding) in its system font, its headings, code and tables.
STYLE = """
body { margin: 0; background: #fff; color: #1f2328; }
.markdown-body { box-sizing: border-box; max-width: 980px; margin: 0 auto; padding: 32px 45px;
  font: 16px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
h1, h2 { font-weight: 600; line-height: 1.25; margin: 24px 0 16px; padding-bottom: .3em;
  border-bottom: 1px solid #d1d9e0b3; }
h1 { font-size: 2em; margin-top: 0; }
h2 { font-size: 1.5em; }
p, ul, pre { margin: 0 0 16px; }
ul { padding-left: 2em; }
a { color: #0969da; text-decoration: none; }
code { font: 85% ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
  background: #818b981f; padding: .2em .4em; border-radius: 6px; }
pre { background: #f6f8fa; padding: 16px; border-radius: 6px; overflow: auto; line-height: 1.45; }
pre code { background: none; padding: 0; font-size: 85%; }
img { max-width: 100%; box-sizing: content-box; }
img[align=right] { padding-left: 20px; }
"""


def rendered_readme(into: Path) -> Path:
    """README.md as an HTML page whose relative links (the picture) resolve against the repository."""
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render((ROOT / "README.md").read_text("utf-8"))
    page = into / "README.html"
    page.write_text(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><base href="{ROOT.as_uri()}/">'
        f"<title>README</title><style>{STYLE}</style></head>"
        f'<body><article class="markdown-body">{body}</article></body></html>',
        encoding="utf-8",
    )
    return page


async def assert_on_first_screen(element: Locator, what: str) -> None:
    await element.wait_for()
    box = await element.bounding_box()
    assert box is not None, f"{what} is not shown"
    assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], f"{what} ends at {box}, below the fold"
    assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], f"{what} is off the side: {box}"


async def test_the_first_screen_says_how_to_start_where_to_open_the_vault_and_the_key(
    browser: Browser, tmp_path: Path
) -> None:
    context = await browser.new_context(viewport=VIEWPORT, color_scheme="light")
    try:
        page = await context.new_page()
        await page.goto(rendered_readme(tmp_path).as_uri())
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / "readme-1280.png"))

        picture = page.locator("img").first
        await assert_on_first_screen(picture, "the picture")
        assert await picture.evaluate("image => image.complete && image.naturalWidth > 0"), "the picture did not load"

        commands = page.locator("pre", has_text="make run").first
        await assert_on_first_screen(commands.get_by_text("make run", exact=False), "make run")
        await assert_on_first_screen(page.locator("pre", has_text="make test"), "make test")
        await assert_on_first_screen(page.get_by_text("Python 3.11+"), "the prerequisites")
        await assert_on_first_screen(page.get_by_text("http://127.0.0.1:8080/"), "where to open it")
        await assert_on_first_screen(page.locator("pre", has_text="VAULT=~/notes").first, "pointing it at a vault")
        await assert_on_first_screen(page.locator("pre", has_text="ANTHROPIC_API_KEY"), "adding a key")
        # No line of a code block is cut off at the column's edge (GitHub scrolls it sideways; nobody does).
        for block in await page.locator("pre").all():
            assert await block.evaluate("pre => pre.scrollWidth <= pre.clientWidth"), await block.inner_text()
    finally:
        await context.close()
