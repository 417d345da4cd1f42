"""The README's picture, made the way a newcomer meets secondbrain: `secondbrain up` on the demo vault with no API key
(a data directory of its own, free ports), the chat asked one question in Chromium at 1280 x 800 in the light theme,
and the page saved once the quoted, cited answer is complete.

    .venv/bin/python scripts/readme_picture.py [--out docs/images/chat.png]

Needs the built web UI (`make ui`) and Chromium (`make setup`). Takes about a minute: the embedded PostgreSQL is
created and the demo vault indexed from nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from playwright.async_api import async_playwright, expect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ui.chromium import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

QUESTION = "What did we decide about the kitchen worktop?"
# The sentence of the demo vault's kitchen note that answers it: the picture is taken once it is on the page.
ANSWERED = "pale grey"
PORTS = ("INGEST", "RETRIEVE", "CHAT", "SHIM", "GATEWAY")


def free_port() -> int:
    """A port free now whose metrics port (+1000, which `up` also claims) is free too."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + 1000 < 65536:
            with socket.socket() as metrics, contextlib.suppress(OSError):
                metrics.bind(("127.0.0.1", port + 1000))
                return port


def environment(data_dir: Path) -> dict[str, str]:
    """This process's environment without any secondbrain setting or provider key (a newcomer's, with no key), a
    data directory of its own and free ports."""
    keep = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SECONDBRAIN_", "OTEL_"))
        and not name.endswith(("_API_KEY", "_BASE_URL"))
        and name not in {"DATABASE_URL", "OLLAMA_URL"}
    }
    keep["SECONDBRAIN_DATA_DIR"] = str(data_dir)
    for name in PORTS:
        keep[f"SECONDBRAIN_{name}_PORT"] = str(free_port())
    return keep


@contextlib.asynccontextmanager
async def running_up(data_dir: Path) -> AsyncIterator[str]:
    """`secondbrain up` on the demo vault, until it says where to open it; that address."""
    process = await asyncio.create_subprocess_exec(
        str(ROOT / ".venv" / "bin" / "secondbrain"),
        "up",
        "--vault",
        str(ROOT / "demo" / "vault"),
        cwd=ROOT,
        env=environment(data_dir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    said: list[str] = []
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 300)).decode()
            if not line:
                raise SystemExit("secondbrain up ended before it was up:\n" + "".join(said))
            said.append(line)
            opened = re.match(r"Open (\S+) in a browser", line)
            if opened:
                break
        # Its later lines are read and dropped, so a full pipe never stops it.
        drain = asyncio.ensure_future(process.stdout.read())
        yield opened.group(1)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            await asyncio.wait_for(process.wait(), 60)
        with contextlib.suppress(NameError):
            drain.cancel()


async def take(out: Path) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        async with running_up(Path(data_dir)) as url, async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            context = await browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
            page = await context.new_page()
            await page.goto(f"{url}chat")
            await page.get_by_label("Your question").fill(QUESTION)
            await page.get_by_role("button", name="Send").click()
            answer = page.get_by_test_id("answer").last
            await expect(answer.get_by_role("list", name="Cited sources")).to_be_visible(timeout=60_000)
            await expect(answer).to_contain_text(ANSWERED)
            await expect(page.get_by_role("button", name="Send")).to_be_visible()
            # The composer's focus ring and the mouse's hover are not part of the picture.
            await page.mouse.move(0, 799)
            await page.evaluate("document.activeElement?.blur()")
            out.parent.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(out))
            await browser.close()
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "chat.png")
    asyncio.run(take(parser.parse_args().out.resolve()))


if __name__ == "__main__":
    main()
