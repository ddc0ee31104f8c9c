"""The explorer in a real headless Chromium, over the story of tests/api/story.py: from the sessions
list through a session and a segment to an auditor and the auditors list, checking what is visible,
and a screenshot of each page (not blank, the viewport's size, no horizontal overflow at 1280 px)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.async_api import Page, ViewportSize, expect

from tests.api.story import HOSTILE_URI, Story
from tests.auditors.browser import chromium, requires_chromium

pytestmark = [pytest.mark.chain, pytest.mark.slow, requires_chromium, pytest.mark.asyncio(loop_scope="module")]

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
MIN_PIXEL_STD = 12.0
"""The least standard deviation of a screenshot's grey levels (0-255) for a page with content: a
blank or single-colour page is near 0, a rendered table page is several times this."""


async def check_screenshot(page: Page, path: Path) -> None:
    """Saves a viewport screenshot to `path` and checks it shows something, at the viewport's size,
    with nothing wider than the viewport."""
    png = await page.screenshot(path=str(path))
    image = Image.open(io.BytesIO(png))
    assert image.size == (VIEWPORT["width"], VIEWPORT["height"]), path.name
    grey = np.asarray(image.convert("L"), dtype=np.float64)
    assert grey.std() > MIN_PIXEL_STD, f"{path.name} looks blank (grey level std {grey.std():.1f})"
    widths = await page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]")
    assert max(widths[:2]) <= widths[2] == VIEWPORT["width"], f"{path.name} overflows horizontally: {widths}"


async def test_browse_from_the_sessions_to_an_auditor(site: str, story: Story, tmp_path: Path) -> None:
    escalated = story.committees[(2, 1)]
    auditor = escalated.members[0]
    async with chromium() as browser:
        page = await browser.new_page(viewport=VIEWPORT)
        await page.goto(f"{site}/explorer/")
        await expect(page.locator("h1")).to_have_text("Audit sessions")
        row = page.locator(f"#session-{story.session_id}")
        await expect(row).to_contain_text("distributed")
        await expect(row).to_contain_text("invalid")
        await expect(row).to_contain_text("2 / 1 / 1 / 0")
        await check_screenshot(page, tmp_path / "sessions.png")

        await row.get_by_role("link", name=f"#{story.session_id}").click()
        await page.wait_for_url(f"**/explorer/sessions/{story.session_id}")
        await expect(page.locator("h1")).to_contain_text(f"Session #{story.session_id}")
        await expect(page.locator("#verdict")).to_contain_text("invalid")
        await expect(page.locator("#verdict")).to_contain_text("2 of Σw = 4")
        states = await page.locator("#segments tbody tr td:nth-child(5)").all_inner_texts()
        assert [s.strip() for s in states] == ["passed", "failed", "passed", "undetermined"]
        await expect(page.locator("#fee-split")).to_contain_text("70%")
        await check_screenshot(page, tmp_path / "session.png")

        await page.locator("#segment-2").get_by_role("link", name="segment 2").click()
        await page.wait_for_url(f"**/explorer/sessions/{story.session_id}/segments/2")
        await expect(page.locator("#round-0 h2")).to_contain_text("escalated")
        await expect(page.locator("#round-1 h2")).to_contain_text("tier 2 · 7 seats")
        await expect(page.locator("#round-1 h2")).to_contain_text("passed")
        await expect(page.locator("#seats-1 tbody tr")).to_have_count(7)
        outcomes = await page.locator("#seats-1 tbody tr td:nth-child(6)").all_inner_texts()
        assert sorted(o.strip() for o in outcomes) == ["aligned"] * 6 + ["silent"]
        await expect(page.locator("#timeline-1")).to_contain_text("committee drawn")
        await expect(page.locator("#timeline-1")).to_contain_text("reveal: pass")
        await check_screenshot(page, tmp_path / "segment.png")

        await page.locator("#seat-1-0").get_by_role("link").first.click()
        await page.wait_for_url(f"**/explorer/auditors/{auditor}")
        await expect(page.locator("h1")).to_have_text(f"Auditor {auditor}")
        await expect(page.locator(f"#seat-{story.session_id}-2-1")).to_contain_text("aligned")
        await expect(page.locator("#reputation")).not_to_be_empty()
        await check_screenshot(page, tmp_path / "auditor.png")

        await page.get_by_role("navigation").get_by_role("link", name="Auditors").click()
        await page.wait_for_url("**/explorer/auditors")
        await expect(page.locator("#auditors tbody tr")).to_have_count(len(story.world.wallets))
        await page.get_by_role("link", name="Reputation").click()
        await page.wait_for_url("**/explorer/auditors?sort=reputation*")
        reputations = [float(r) for r in await page.locator("#auditors tbody tr td:nth-child(5)").all_inner_texts()]
        assert reputations == sorted(reputations, reverse=True)
        await check_screenshot(page, tmp_path / "auditors.png")

        # The hostile metadata URI is shown as text: nothing of it runs or renders.
        await page.goto(f"{site}/explorer/auditors/{story.world.hostile}")
        await expect(page.locator("#metadata")).to_have_text(HOSTILE_URI)
        assert await page.title() != "pwned"
        assert await page.locator("main img").count() == 0
        await check_screenshot(page, tmp_path / "hostile.png")
        for name in ("sessions", "session", "segment", "auditor", "auditors", "hostile"):
            assert (tmp_path / f"{name}.png").stat().st_size > 0
