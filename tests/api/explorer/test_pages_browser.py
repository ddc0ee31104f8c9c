"""The explorer in a real headless Chromium, over the story of tests/api/story.py: from the sessions
list through a session and a segment to an auditor and the auditors list, checking what is visible,
and a screenshot of each page (not blank, the viewport's size, no horizontal overflow at 1280 px)."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from PIL import Image
from playwright.async_api import Page, ViewportSize, expect

from tests.api.story import CRITIQUE, EXPECTED, HOSTILE_URI, Story
from tests.auditors.browser import chromium, requires_chromium
from trust.api.explorer.formatting import amount_text

pytestmark = [pytest.mark.chain, pytest.mark.slow, requires_chromium, pytest.mark.asyncio(loop_scope="module")]

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
MIN_PIXEL_STD = 12.0
"""The least standard deviation of a screenshot's grey levels (0-255) for a page with content: a
blank or single-colour page is near 0, a rendered table page is several times this."""


async def check_screenshot(page: Page, path: Path) -> Path:
    """Saves a viewport screenshot to `path` and checks it shows something, at the viewport's size,
    with nothing wider than the viewport; returns `path`."""
    png = await page.screenshot(path=str(path))
    image = Image.open(io.BytesIO(png))
    assert image.size == (VIEWPORT["width"], VIEWPORT["height"]), path.name
    grey = np.asarray(image.convert("L"), dtype=np.float64)
    assert grey.std() > MIN_PIXEL_STD, f"{path.name} looks blank (grey level std {grey.std():.1f})"
    widths = await page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]")
    assert max(widths[:2]) <= widths[2] == VIEWPORT["width"], f"{path.name} overflows horizontally: {widths}"
    return path


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
        await expect(page.locator("#round-1 h2")).to_contain_text("tier 2 · 7 votes in 7 seats")
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


# ---------------------------------------------------------------------------------------- drawings

SCREENSHOTS_ENV = "TRUST_TEST_SCREENSHOTS"
"""A folder to copy the drawings' screenshots into, besides the test's tmp_path (to look at them)."""


def keep(path: Path) -> Path:
    """The screenshot at `path`, also copied to $TRUST_TEST_SCREENSHOTS when set; prints where."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)
    print(f"screenshot: {path}" + (f" (copied to {folder})" if folder else ""))
    return path


def local_only(page: Page) -> list[str]:
    """Every URL the page requests, to check afterwards that none leaves the explorer's host."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    return requests


def assert_local(requests: list[str], site: str) -> None:
    assert requests, "the browser made no request at all"
    host = urlsplit(site).netloc
    outside = [url for url in requests if urlsplit(url).netloc != host and not url.startswith(("data:", "about:"))]
    assert outside == [], f"requests left the explorer: {outside}"


async def test_the_session_graph_links_each_node_to_its_segment(
    provider_site: str, story: Story, tmp_path: Path
) -> None:
    """On the provider's own explorer (provider view): a click on a node of the graph opens its
    segment, with its place in the graph, its committee and the seats' critiques."""
    site = provider_site
    async with chromium() as browser:
        page = await browser.new_page(viewport=VIEWPORT)
        requests = local_only(page)
        await page.goto(f"{site}/explorer/sessions/{story.session_id}")
        graph = page.locator("#graph-scroll svg#graph")
        await expect(graph).to_be_visible()
        nodes = graph.locator("a[id^='node-']")
        await expect(nodes).to_have_count(4)
        fills = {
            key: await graph.locator(f"#node-s{key} rect[data-fill]").get_attribute("data-fill") for key in range(4)
        }
        assert fills == {0: "passed", 1: "failed", 2: "passed", 3: "undetermined"}
        marks = {key: await graph.locator(f"#node-s{key} rect[data-mark]").count() for key in range(4)}
        assert marks == {0: 0, 1: 1, 2: 1, 3: 0}  # the undetermined s3 was never judged: no mark
        assert await graph.locator("#node-s1 rect[data-mark]").get_attribute("data-mark") == "root cause"
        assert await graph.locator("#node-s2 rect[data-mark]").get_attribute("data-mark") == "cascade"
        styles = sorted(
            [await p.get_attribute("data-style") or "" for p in await graph.locator("path[data-style]").all()]
        )
        assert styles == ["decomposes_to"] * 3 + ["depends_on"] * 2
        # Levels top to bottom: the goal above the steps, each step below the one it depends on.
        tops = {key: (await graph.locator(f"#node-s{key} rect[data-fill]").bounding_box()) for key in range(4)}
        assert all(box is not None for box in tops.values())
        y = {key: box["y"] for key, box in tops.items() if box is not None}
        assert y[0] < y[1] < y[2] < y[3]
        await expect(page.locator("#root-causes")).to_contain_text("s1")
        await expect(page.locator("#graph-note")).to_contain_text("provider's record")
        await page.locator("#graph-scroll").scroll_into_view_if_needed()
        keep(await check_screenshot(page, tmp_path / "session-graph.png"))
        await page.locator("#graph-card").screenshot(path=str(tmp_path / "session-graph-card.png"))
        keep(tmp_path / "session-graph-card.png")

        await nodes.and_(page.locator("#node-s1")).click()
        await page.wait_for_url(f"**/explorer/sessions/{story.session_id}/segments/1")
        await expect(page.locator("#place")).to_contain_text("s1")
        await expect(page.locator("#place")).to_contain_text("root cause")
        await expect(page.locator("#parents")).to_contain_text("g0")
        await expect(page.locator("#children")).to_contain_text("s2")
        assert story.report is not None
        segment_id, round_id, seat, auditor, cid = story.report
        committee = story.committees[(segment_id, round_id)].members
        await expect(page.locator(f"#seats-{round_id} tbody tr")).to_have_count(len(committee))
        await expect(page.locator(f"#seat-{round_id}-{seat}")).to_contain_text(cid[:8])
        await expect(page.locator(f"#seat-{round_id}-{seat}")).to_contain_text("fail")
        keep(await check_screenshot(page, tmp_path / "segment-with-place.png"))

        # The seat's critique, from the table's link: the auditor's words as text, and its findings.
        await page.locator(f"#seat-{round_id}-{seat}").get_by_role("link", name="critique").click()
        await page.wait_for_url(f"**/segments/{segment_id}#critique-{round_id}-{seat}")
        critique = page.locator(f"#critique-{round_id}-{seat}")
        await expect(critique).to_be_in_viewport()
        await expect(critique.locator(".critique-text")).to_have_text(CRITIQUE)
        await expect(critique).to_contain_text(f"Seat {seat}")
        await expect(critique).to_contain_text("factual")
        await expect(critique).to_contain_text(EXPECTED)
        await expect(critique).to_contain_text("8.25 s at tier 1")
        await expect(critique.get_by_role("link", name=re.compile(auditor[2:8]))).to_have_attribute(
            "href", f"/explorer/auditors/{auditor}"
        )
        await expect(page.locator(f"#reports-notice-{round_id}")).to_contain_text("Provider view")
        keep(await check_screenshot(page, tmp_path / "segment-critique.png"))
        await page.locator(f"#round-{round_id}").screenshot(path=str(tmp_path / "segment-committee-critiques.png"))
        keep(tmp_path / "segment-committee-critiques.png")

        # From the segment back to the graph through its parents.
        await page.locator("#parents").get_by_role("link").first.click()
        await page.wait_for_url(f"**/explorer/sessions/{story.session_id}/segments/0")
        # Reports the provider cannot read are said so, in words.
        await expect(page.locator("#critique-0-0")).to_contain_text("The report could not be fetched")
        await expect(page.locator("#critique-0-1")).to_contain_text("The report could not be opened")
        await page.locator("#critiques-0").screenshot(path=str(tmp_path / "segment-unreadable-reports.png"))
        keep(tmp_path / "segment-unreadable-reports.png")
        assert_local(requests, site)


async def test_the_auditor_page_charts_its_history(site: str, story: Story, tmp_path: Path) -> None:
    slashed = story.governance_slashed
    async with chromium() as browser:
        page = await browser.new_page(viewport=VIEWPORT)
        requests = local_only(page)
        await page.goto(f"{site}/explorer/auditors/{slashed}")
        for name in ("stake", "reputation", "earnings"):
            chart = page.locator(f"svg#chart-{name}")
            await expect(chart).to_be_visible()
            assert await chart.locator("path[data-label]").count() >= 1, name
            assert await chart.locator("circle").count() >= 2, name
            assert await chart.locator("text[data-tick]").count() >= 2, name
        # The governance slash is a step down of the stake line, to the registry's stake.
        ticks = await page.locator("svg#chart-stake text[data-tick]").all_text_contents()
        assert all(re.fullmatch(r"-?\d+(\.\d+)?", t) for t in ticks), ticks
        info = await story.world.protocol.registry.auditor(slashed)
        last = page.locator("svg#chart-stake circle[data-series='0']").last
        assert await last.get_attribute("data-value") == str(info.stake)
        note = await last.locator("title").text_content() or ""
        assert note.startswith(f"stake {amount_text(info.stake, 'TRUST')} after forfeit, block ")
        await page.locator("#history").scroll_into_view_if_needed()
        keep(await check_screenshot(page, tmp_path / "auditor-charts.png"))
        await page.locator(".charts").screenshot(path=str(tmp_path / "auditor-charts-only.png"))
        keep(tmp_path / "auditor-charts-only.png")
    assert_local(requests, site)
