"""The service layer: the read-only explorer of what the chain holds (`ChainIndex`, the explorer's
pages and JSON), and the gateway routes that providers call."""

from trust.api.explorer import create_explorer_app, explorer_router
from trust.api.index import ChainIndex, RefreshReport, UnknownEntity

__all__ = ["ChainIndex", "RefreshReport", "UnknownEntity", "create_explorer_app", "explorer_router"]
