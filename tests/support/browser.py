"""Headless Chromium for the dashboard's browser tests and benchmark: Debian's /usr/bin/chromium
driven by Playwright, never a browser downloaded by `playwright install`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT = "Debian's chromium is not installed: apt-get update && apt-get install -y chromium"


def launch(playwright: Any) -> Any:
    """A headless Chromium browser from ``sync_playwright()``; FileNotFoundError with the fix if absent."""
    if not CHROMIUM.exists():
        raise FileNotFoundError(INSTALL_HINT)
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
