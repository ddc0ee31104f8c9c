"""One FastAPI app with the provider gateway (`/v1`) and the explorer (`/explorer`): what `trust gateway`
serves.

    app = create_app(account, settings, options=GatewayOptions(epoch_seconds=10))
    uvicorn.run(app, host="127.0.0.1", port=8600)

The gateway is mounted at once (its routes are in the OpenAPI document before the app starts) and
needs neither the chain nor IPFS to start: while they are down, submissions get 503 with the SDK's
message. The explorer is mounted by the lifespan, which connects to the chain and reads the
deployment (as `create_explorer_app` does), so with `explorer=True` the app does not start without a
chain. On shutdown the gateway stops: audits still queued or running fail with `gateway_stopped`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from eth_account.signers.local import LocalAccount
from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from starlette.exceptions import HTTPException

from trust.api.explorer import explorer_router
from trust.api.gateway import Gateway, GatewayError, GatewayOptions, gateway_router
from trust.api.index import ChainIndex
from trust.chain.client import ChainClient
from trust.chain.compiler import Artifact, compile_protocol
from trust.chain.deployment import Deployment
from trust.chain.protocol import Protocol
from trust.sdk.provider import provider_account
from trust.settings import Settings
from trust.toolchain import Toolchain

__all__ = ["DEFAULT_GATEWAY_PORT", "LOCAL_GATEWAY_INDEX", "create_app", "gateway_account"]

DEFAULT_GATEWAY_PORT = 8600
"""Where `trust gateway` listens by default (the devnet's RPC is 8545, IPFS 5101, review pages 8700)."""
LOCAL_GATEWAY_INDEX = 4
"""The development account the gateway pays from on a local chain (0 deploys, 1 and 2 receive fees,
3 is the CLI's provider: a wallet of its own keeps the two from racing for nonces)."""
_GATEWAY_PREFIX = "/v1/"


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
) -> FastAPI:
    """The gateway (paying from `account`) and, with `explorer`, the explorer over the same chain.

    `settings` gives the chain, IPFS, deployments folder and home (the environment's when None);
    `rpc_url` / `ipfs_url` override them. `options` are the gateway's (`GatewayOptions`: epochs,
    limits, timeouts). `artifacts` are the compiled contracts (compiled through the toolchain when
    None). `poll_seconds` is how often a batch session looks for a new block.
    """
    settings = settings or Settings()
    chain_url = rpc_url or settings.effective_rpc_url
    gateway = Gateway(
        account, settings, rpc_url=chain_url, ipfs_url=ipfs_url, options=options, poll_seconds=poll_seconds
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(gateway.aclose)
            if explorer:
                abis = artifacts if artifacts is not None else compile_protocol(Toolchain.discover())
                chain = await stack.enter_async_context(ChainClient(chain_url, abis))
                deployment = Deployment.load(settings.deployments_path(Toolchain.discover().root), chain.chain_id)
                index = ChainIndex(Protocol.bind(chain, deployment))
                app.include_router(explorer_router(index))
                app.state.explorer_index = index
            yield

    app = FastAPI(
        title="TRUST gateway",
        summary="Audit reasoning traces on the TRUST network over HTTP",
        description="Submit a trace or an agent log; it is audited with the other traces of its epoch as one "
        "session (source anonymization, paper 3.4.4). See docs/gateway.md.",
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    app.include_router(gateway_router(gateway))
    app.add_exception_handler(HTTPException, _errors_in_gateway_format)
    return app
