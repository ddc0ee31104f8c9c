"""Headless Chromium for the review page's browser tests: Debian's `chromium` driven by Playwright.

Playwright's own browser downloads cannot run here; its Python package brings the driver, and the
system's Chromium does the rendering. Tests that need it are marked `requires_chromium`.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")


def find_chromium() -> str | None:
    """The Chromium executable: Debian's package, or any `chromium` on PATH; None when absent."""
    if DEBIAN_CHROMIUM.is_file():
        return str(DEBIAN_CHROMIUM)
    return shutil.which("chromium")


CHROMIUM = find_chromium()

requires_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: install Debian's `chromium` package (apt-get install chromium) to run the browser tests",
)

CHROMIUM_ARGS = (
    "--no-sandbox",  # the test container runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium for one test, closed afterwards."""
    if CHROMIUM is None:
        raise RuntimeError("no Chromium; mark the test with requires_chromium")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            await browser.close()
