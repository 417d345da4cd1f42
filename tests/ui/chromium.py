"""Debian's Chromium as the browser tests and the Lighthouse bench start it (never a browser a tool downloads)."""

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Root in a container needs --no-sandbox; the rest keeps Chromium off a network this machine does not have.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
