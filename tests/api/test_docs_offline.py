"""The gateway's API pages (`/docs`: Swagger UI, `/redoc`: ReDoc) work with no internet: every script,
style sheet and icon they load is served by the app itself, over a real uvicorn server.

Over plain HTTP: the pages name only local asset URLs, and each answers 200 with its content type. In
a real headless Chromium that may reach nothing but 127.0.0.1 (any other request is recorded and
aborted): Swagger UI renders every operation of the app's OpenAPI document and ReDoc renders its
operations, with no request having tried to leave the machine, and the pages' Content-Security-Policy
(which keeps them on their own host: ReDoc's sidebar asks a CDN for its maker's logo) blocking
nothing of their own. FastAPI's default pages load their assets from a CDN: offline they are blank.

The gateway runs alone (no explorer), pointed at a chain and an IPFS node that are not there: its
pages need neither.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from playwright.async_api import Page, Request, Route, expect

from tests.api.story import serve
from tests.auditors.browser import chromium, requires_chromium
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.processes import free_port
from trust.api.app import DOCS_ASSETS_PATH, LOCAL_GATEWAY_INDEX, create_app
from trust.settings import DevnetSettings, Settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
HTTP_TIMEOUT = httpx.Timeout(30.0)
RENDER_TIMEOUT_MS = 60_000
"""How long a page may take to render (ms): Swagger UI's bundle is 1.5 MB of JavaScript, and the
machine may be busy."""
_ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|(?:url|Url)\s*:\s*["']([^"']+)["']""")


@pytest.fixture(scope="module")
def app() -> FastAPI:
    dead = f"http://127.0.0.1:{free_port()}"
    account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
    return create_app(account, Settings(), rpc_url=dead, ipfs_url=dead, explorer=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(app: FastAPI) -> AsyncIterator[str]:
    async with serve(app) as url:
        yield url


def _operations(app: FastAPI) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation in the app's OpenAPI document: what the pages must show."""
    document: dict[str, Any] = app.openapi()
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}


def _asset_urls(html: str) -> list[str]:
    return [a or b for a, b in _ASSET.findall(html)]


# ------------------------------------------------------------------------------------------- HTTP


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}),
        ("/redoc", {"redoc.standalone.js", "favicon.png"}),
    ],
)
async def test_the_pages_name_only_local_assets_and_each_answers(gateway: str, page: str, assets: set[str]) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=HTTP_TIMEOUT) as http:
        response = await http.get(page)
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in response.headers["content-security-policy"]
        urls = _asset_urls(response.text)
        assert urls, response.text
        for url in urls:
            assert not urlsplit(url).netloc, f"{page} loads {url} from another host"
        named = {url.rsplit("/", 1)[-1] for url in urls if url.startswith(DOCS_ASSETS_PATH + "/")}
        assert assets <= named, urls
        for url in urls:
            asset = await http.get(urljoin(f"{gateway}{page}", url))
            assert asset.status_code == 200, url
            assert len(asset.content) > 0, url
        for name in assets:
            asset = await http.get(f"{DOCS_ASSETS_PATH}/{name}")
            kind = asset.headers["content-type"]
            expected = {".js": "javascript", ".css": "text/css", ".png": "image/png"}[Path(name).suffix]
            assert expected in kind, (name, kind)
        # The document the pages render, and a missing asset is a plain 404.
        assert (await http.get("/openapi.json")).status_code == 200
        assert (await http.get(f"{DOCS_ASSETS_PATH}/nothing-here.js")).status_code == 404


# ---------------------------------------------------------------------------------------- Chromium


class _Offline:
    """Lets a page reach the local server only; records (and aborts) every request to another host,
    and what the page's Content-Security-Policy refused (`violations`, read by `check`)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.blocked: list[str] = []
        self.local: list[str] = []

    async def check(self, server: str) -> list[str]:
        """Asserts nothing tried to leave the machine and the policy refused nothing of the page's own
        (an inline script, its assets); returns the other hosts' URLs the policy kept it from asking."""
        assert self.blocked == [], f"{self.page.url} tried to leave the machine: {self.blocked}"
        violations: list[dict[str, str]] = await self.page.evaluate("window.__cspViolations")
        own = [v for v in violations if not urlsplit(v["uri"]).netloc or v["uri"].startswith(server)]
        assert own == [], f"the page's Content-Security-Policy broke it: {own}"
        return [v["uri"] for v in violations]

    async def route(self, route: Route, request: Request) -> None:
        host = urlsplit(request.url).hostname or ""
        if request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            self.local.append(request.url)
            await route.continue_()
        else:
            self.blocked.append(request.url)
            await route.abort("internetdisconnected")


async def _offline_page(page: Page) -> _Offline:
    offline = _Offline(page)
    await page.route("**/*", offline.route)
    await page.add_init_script(
        "window.__cspViolations = [];"
        "document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push("
        "{uri: e.blockedURI, directive: e.violatedDirective}));"
    )
    return offline


@requires_chromium
@pytest.mark.slow
async def test_swagger_ui_renders_every_operation_offline(gateway: str, app: FastAPI) -> None:
    expected = _operations(app)
    assert ("POST", "/v1/audits") in expected
    async with chromium() as browser:
        page = await browser.new_page()
        offline = await _offline_page(page)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(f"{gateway}/docs")
        blocks = page.locator(".opblock")
        await expect(blocks).to_have_count(len(expected), timeout=RENDER_TIMEOUT_MS)
        shown = set()
        for i in range(await blocks.count()):
            block = blocks.nth(i)
            method = (await block.locator(".opblock-summary-method").inner_text()).strip()
            path = await block.locator(".opblock-summary-path").get_attribute("data-path")
            shown.add((method.upper(), path))
        assert shown == expected
        await expect(page.locator(".info .title")).to_contain_text(app.title)
        await offline.check(gateway)
    assert errors == []
    assert any(DOCS_ASSETS_PATH in url for url in offline.local)


@requires_chromium
@pytest.mark.slow
async def test_redoc_renders_the_operations_offline(gateway: str, app: FastAPI) -> None:
    document: dict[str, Any] = app.openapi()
    summaries = {op["summary"] for item in document["paths"].values() for op in item.values() if "summary" in op}
    assert summaries
    async with chromium() as browser:
        page = await browser.new_page()
        offline = await _offline_page(page)
        await page.goto(f"{gateway}/redoc")
        for summary in summaries:
            # A ReDoc operation heading is its anchor link's name, then the summary.
            heading = page.get_by_role("heading", name=re.compile(re.escape(summary) + "$"))
            await expect(heading.first).to_be_visible(timeout=RENDER_TIMEOUT_MS)
        await offline.check(gateway)
