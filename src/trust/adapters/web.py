"""What every HTML page this project serves shares (the explorer, the tier-3 review page): the
templates' frame and environment, and the headers sent with them; and an app served in the caller's
own event loop (benchmarks and tests that drive the gateway or the explorer over real HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import jinja2
import uvicorn
from starlette.responses import Response
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp

__all__ = ["LAYOUT_DIR", "page_templates", "serve_in_loop", "set_security_headers"]

LAYOUT_DIR = Path(__file__).with_name("web_templates")
"""Where `layout.html` lies: the frame (head, shared style, header, main) that each app's own
`base.html` extends."""


def page_templates(directory: Path) -> Jinja2Templates:
    """The templates of an app whose own pages lie in `directory`, over the shared `layout.html`.

    Autoescaped everywhere (the pages show chain data and submitted text); an undefined name is an
    error rather than an empty string; block tags leave no blank lines. A name in `directory` wins
    over the same name in the shared folder.
    """
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(directory), jinja2.FileSystemLoader(LAYOUT_DIR)]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return Jinja2Templates(env=env)


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
