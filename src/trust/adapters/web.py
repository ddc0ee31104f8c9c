"""What every HTML page this project serves sends with it (the explorer, the tier-3 review page), and
an app served in the caller's own event loop (benchmarks and tests that drive the gateway or the
explorer over real HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import uvicorn
from starlette.responses import Response
from starlette.types import ASGIApp

__all__ = ["serve_in_loop", "set_security_headers"]


def set_security_headers(response: Response, content_security_policy: str) -> None:
    """The page's own Content-Security-Policy, and headers that forbid MIME sniffing, framing,
    referrers and caching (the pages show private or live data)."""
    response.headers["Content-Security-Policy"] = content_security_policy
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"


class _LoopServer(uvicorn.Server):
    """uvicorn without its signal handlers: the caller owns the process's signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve_in_loop(app: ASGIApp, what: str = "the server") -> AsyncIterator[str]:
    """Serves `app` with uvicorn (lifespan on) in the running event loop on a free port of 127.0.0.1;
    yields its URL and stops it on the way out. `what` names it in the error when it cannot start."""
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False, http="h11", ws="none")
    server = _LoopServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            sock.close()
            task.result()
            raise RuntimeError(f"{what} stopped while starting")
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()
