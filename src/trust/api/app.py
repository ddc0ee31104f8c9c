"""One FastAPI app with the provider gateway (`/v1`) and the explorer (`/explorer`): what `trust gateway`
serves.

    app = create_app(account, settings, options=GatewayOptions(epoch_seconds=10))
    uvicorn.run(app, host="127.0.0.1", port=8600)

The gateway is mounted at once (its routes are in the OpenAPI document before the app starts) and
needs neither the chain nor IPFS to start: while they are down, submissions get 503 with the SDK's
message. The explorer is mounted by the lifespan, which connects to the chain and reads the
deployment (as `create_explorer_app` does), so with `explorer=True` the app does not start without a
chain. On shutdown the gateway stops: audits still queued or running fail with `gateway_stopped`.

The API's pages, `/docs` (Swagger UI) and `/redoc` (ReDoc), work offline: their scripts, style sheet
and favicon are served by the app itself under `/docs-assets` (`DOCS_ASSETS_PATH`), from the files the
pinned `fastapi-offline` package ships (Swagger UI 5 and ReDoc 2 as their projects distribute them),
instead of FastAPI's defaults, which load them from a CDN and leave a blank page without the internet.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import fastapi_offline
from eth_account.signers.local import LocalAccount
from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.protocol import Protocol
from trust.api.explorer.pages import explorer_router
from trust.api.gateway.access import AccessControl
from trust.api.gateway.service import Gateway, GatewayError, GatewayOptions, gateway_router
from trust.api.index import ChainIndex
from trust.errors import ConfigError
from trust.services.sdk.provider import provider_account
from trust.settings import Settings

__all__ = ["DEFAULT_GATEWAY_PORT", "DOCS_ASSETS_PATH", "LOCAL_GATEWAY_INDEX", "create_app", "gateway_account"]

DEFAULT_GATEWAY_PORT = 8600
"""Where `trust gateway` listens by default (the devnet's RPC is 8545, IPFS 5101, review pages 8700)."""
LOCAL_GATEWAY_INDEX = 4
"""The development account the gateway pays from on a local chain (0 deploys, 1 and 2 receive fees,
3 is the CLI's provider: a wallet of its own keeps the two from racing for nonces)."""
log = logging.getLogger("trust.api.gateway.service")

_GATEWAY_PREFIX = "/v1/"
DOCS_ASSETS_PATH = "/docs-assets"
"""Where the app serves the API pages' own assets: swagger-ui-bundle.js, swagger-ui.css,
redoc.standalone.js and favicon.png."""
_DOCS_ASSETS_DIRECTORY = Path(fastapi_offline.__file__).parent / "static"
# The API pages may load from this app only: ReDoc 2's sidebar shows its maker's logo from a CDN
# whatever its options (the image hides itself when it cannot load), and a newer asset version must
# not bring a CDN back. Inline script and style: both pages start from an inline <script>, and
# Swagger UI and ReDoc style elements inline; ReDoc runs its search index in a blob: worker.
_API_PAGES_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'"
)


def gateway_account(settings: Settings, rpc_url: str, keystore: Path | None, password: str | None) -> LocalAccount:
    """The gateway's wallet: the keystore's account; without one, on a local chain only, Anvil's
    development account `LOCAL_GATEWAY_INDEX`."""
    return provider_account(settings, rpc_url, keystore, password, local_index=LOCAL_GATEWAY_INDEX, role="gateway")


async def _errors_in_gateway_format(request: Request, exc: Exception) -> Response:
    """404 and 405 of paths under /v1 that match no route answer in the gateway's error format."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith(_GATEWAY_PREFIX):
        code = "not_found" if exc.status_code == 404 else "http_error"
        return GatewayError(exc.status_code, code, f"{request.method} {request.url.path}: {exc.detail}").response()
    return await http_exception_handler(request, exc)


def _serve_api_pages(app: FastAPI) -> None:
    """`/docs` and `/redoc` on assets this app serves itself (see the module docstring); the app must be
    built with `docs_url=None, redoc_url=None`, so FastAPI's CDN pages are not there too."""
    if not _DOCS_ASSETS_DIRECTORY.is_dir():
        raise ConfigError(
            f"the API pages' assets are missing from {_DOCS_ASSETS_DIRECTORY}; reinstall the fastapi-offline package"
        )
    app.mount(DOCS_ASSETS_PATH, StaticFiles(directory=_DOCS_ASSETS_DIRECTORY), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        # root_path: behind a proxy that mounts the app under a prefix, the URLs must carry it.
        root = request.scope.get("root_path", "")
        assets = f"{root}{DOCS_ASSETS_PATH}"
        page = get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            oauth2_redirect_url=f"{root}{oauth2_redirect_url}",
        )
        page.headers["Content-Security-Policy"] = _API_PAGES_CSP
        return page

    @app.get(oauth2_redirect_url, include_in_schema=False)
    async def swagger_ui_oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS_PATH}/favicon.png",
            with_google_fonts=False,  # fonts from Google are a request leaving the machine
        )
        page.headers["Content-Security-Policy"] = _API_PAGES_CSP
        return page


def create_app(
    account: LocalAccount,
    settings: Settings | None = None,
    *,
    rpc_url: str | None = None,
    ipfs_url: str | None = None,
    options: GatewayOptions | None = None,
    explorer: bool = True,
    artifacts: dict[str, Artifact] | None = None,
    poll_seconds: float = 0.1,
    access: AccessControl | None = None,
    billing: bool = False,
) -> FastAPI:
    """The gateway (paying from `account`) and, with `explorer`, the explorer over the same chain.

    `settings` gives the chain, IPFS, deployments folder and home (the environment's when None);
    `rpc_url` / `ipfs_url` override them. `options` are the gateway's (`GatewayOptions`: epochs,
    limits, timeouts). `artifacts` are the compiled contracts (compiled through the toolchain when
    None). `poll_seconds` is how often a batch session looks for a new block. `access` holds the API
    keys, rates and quotas (`trust.api.gateway.access`); without it the gateway serves anyone and logs a
    warning: `trust gateway` always passes one. `/health`, the API pages and the explorer stay public.
    With `billing` (it needs `access`), each key's provider pays its trace's share of the epoch's fee
    from its escrow (`trust.api.gateway.billing`); unfunded submissions get 402.
    """
    settings = settings or Settings()
    chain_url = rpc_url or settings.effective_rpc_url
    gateway = Gateway(
        account,
        settings,
        rpc_url=chain_url,
        ipfs_url=ipfs_url,
        options=options,
        poll_seconds=poll_seconds,
        access=access,
        billing=billing,
    )
    if access is None:
        log.warning("the gateway has no API keys: anyone who reaches it submits at its wallet's expense")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(gateway.aclose)
            if explorer:
                protocol = await stack.enter_async_context(Protocol.connect(settings, chain_url, artifacts=artifacts))
                index = ChainIndex(protocol)
                app.include_router(explorer_router(index))
                app.state.explorer_index = index
            yield

    app = FastAPI(
        title="TRUST gateway",
        summary="Audit reasoning traces on the TRUST network over HTTP",
        description="Submit a trace or an agent log; it is audited with the other traces of its epoch as one "
        "session (source anonymization, paper 3.4.4). See docs/gateway.md.",
        lifespan=lifespan,
        docs_url=None,  # served by _serve_api_pages, from local assets
        redoc_url=None,
    )
    _serve_api_pages(app)

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        """Public: a load balancer's probe needs no key."""
        return {"status": "ok"}

    app.state.gateway = gateway
    app.include_router(gateway_router(gateway))
    app.add_exception_handler(HTTPException, _errors_in_gateway_format)
    return app
