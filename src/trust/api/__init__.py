"""The service layer: the read-only explorer of what the chain holds (`ChainIndex`, the explorer's
pages and JSON), the provider gateway (`/v1/audits`, traces batched per epoch into one session for
source anonymization) and `create_app`, which serves both."""

from trust.api.app import create_app
from trust.api.explorer.pages import create_explorer_app, explorer_router
from trust.api.gateway.service import Gateway, GatewayError, GatewayOptions, gateway_router
from trust.api.index import ChainIndex, RefreshReport, UnknownEntity

__all__ = [
    "ChainIndex",
    "Gateway",
    "GatewayError",
    "GatewayOptions",
    "RefreshReport",
    "UnknownEntity",
    "create_app",
    "create_explorer_app",
    "explorer_router",
    "gateway_router",
]
