"""What an adapter that owns one `httpx.AsyncClient` does to close it (the LLM client, the Kubo
client): close it once, however many times it is asked, and say whether it is closed. httpx
refuses to reopen a closed client, so neither adapter reopens: each refuses calls after, with its
own error (`LlmError`, `IpfsError`) naming what to do.
"""

from __future__ import annotations

import httpx

__all__ = ["OwnedHttpClient"]


class OwnedHttpClient:
    """Closing for an adapter whose `__init__` sets `_http` (the client it owns) and `_closed = False`;
    `__aexit__` closes it, so the adapter's own `__aenter__` is all a subclass adds to be an async
    context manager."""

    _http: httpx.AsyncClient
    _closed: bool

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client (its connections); a second call does nothing."""
        if not self._closed:
            self._closed = True
            await self._http.aclose()

    @property
    def closed(self) -> bool:
        return self._closed
