"""Riding out a lost chain RPC or IPFS node while a session is open.

Once `createSession` is paid, the session lives on chain whatever happens to the provider's
connections: an RPC node restarting, or the IPFS node going away for a while, must not end the audit
with a traceback. Every step of the provider's session loop is idempotent (a draw or a finalization
somebody else already made reverts while its gas is estimated, key envelopes may be published
again), so a step that lost its connection is simply run again, after `backoff_seconds`, doubled per
try up to `max_backoff_seconds` (`trust.settings.ProviderSettings`), while progress says what is
happening ("RPC unreachable, retrying in 4 s"). If the service stays away for `outage_seconds`, the
audit stops with one `SessionInterrupted` that names the session and how to finish it
(`trust submit --resume N`): the journal already holds everything needed to resume it.

What counts as a lost connection (`lost_service`): the transport failing, not a service answering.
A revert, an RPC error answer, a refused IPFS request or a bad blob is an answer and is raised as
it is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import aiohttp
import httpx
from web3.exceptions import ProviderConnectionError, RequestTimedOut

from trust.core.backoff import backoff_delay
from trust.errors import ContentNotFound, IpfsError, SessionInterrupted, VerificationError, excerpt
from trust.services.sdk.progress import ProgressCallback, ProgressEvent
from trust.settings import ProviderSettings

__all__ = ["OUTAGE_STAGE", "RPC", "IPFS", "Outage", "lost_service"]

log = logging.getLogger("trust.services.sdk")

RPC = "rpc"
IPFS = "ipfs"
OUTAGE_STAGE = "connection"
"""The progress stage that reports a lost connection: seconds of the outage budget used."""

_CAUSE_CHARS = 160
_T = TypeVar("_T")

_CHAIN_TRANSPORT: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    ProviderConnectionError,
    RequestTimedOut,
    ConnectionError,
    TimeoutError,
)
"""What web3's HTTP provider raises when the node does not answer (aiohttp's connection errors come
through untranslated, `ClientConnectorError` when the node is down)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and the exceptions it was raised from (cause, else context), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        # `raise X from None` hides the context on purpose: the chain ends there.
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def lost_service(exc: BaseException) -> str | None:
    """`IPFS` or `RPC` when `exc` is a lost connection to that service, else None."""
    if not isinstance(exc, Exception) or isinstance(exc, VerificationError | ContentNotFound):
        return None
    if isinstance(exc, IpfsError):
        return IPFS if any(isinstance(link, httpx.TransportError) for link in _chain(exc)) else None
    if any(isinstance(link, _CHAIN_TRANSPORT) for link in _chain(exc)):
        return RPC
    return None


def _cause(exc: BaseException) -> str:
    """The innermost transport error in `exc`'s chain, on one short line."""
    links = list(_chain(exc))
    transport = [link for link in links if isinstance(link, _CHAIN_TRANSPORT + (httpx.TransportError,))]
    link = transport[-1] if transport else links[0]
    text = str(link) or "no answer"
    return f"{type(link).__name__}: {excerpt(text, _CAUSE_CHARS)}"


@dataclass
class Outage:
    """The outage budget of one session's driver: how long its RPC or IPFS node has been away, and
    the backoff of the next try. Use `retrying` around a step, or `wait` in a loop of steps."""

    settings: ProviderSettings
    rpc_url: str
    ipfs_url: str
    progress: ProgressCallback | None = None
    since: float | None = None
    service: str | None = None
    tries: int = 0
    _first_cause: str = field(default="", repr=False)

    def _url(self, service: str) -> str:
        return f"the RPC at {self.rpc_url}" if service == RPC else f"the IPFS node at {self.ipfs_url}"

    def _say(self, done: float, message: str) -> None:
        if self.progress is not None:
            total = max(1, round(self.settings.outage_seconds))
            self.progress(ProgressEvent(OUTAGE_STAGE, min(total, int(done)), total, message))

    async def wait(self, exc: BaseException, *, stopped: Callable[[str, str, float], SessionInterrupted]) -> None:
        """After a step failed with `exc`: re-raises it unless it is a lost connection; raises
        `stopped(service, cause, seconds)` once the outage outlasts the budget; otherwise sleeps the
        next backoff (and says so) so that the caller can run the step again."""
        service = lost_service(exc)
        if service is None:
            raise exc
        now = time.time()
        if self.since is None or self.service != service:
            self.since, self.service, self.tries, self._first_cause = now, service, 0, _cause(exc)
            log.info("lost %s: %s", self._url(service), self._first_cause)
        elapsed = now - self.since
        budget = self.settings.outage_seconds
        if elapsed >= budget:
            raise stopped(service, _cause(exc), elapsed) from None
        delay = min(
            backoff_delay(self.settings.backoff_seconds, self.tries, self.settings.max_backoff_seconds),
            budget - elapsed,
        )
        self.tries += 1
        name = "RPC" if service == RPC else "IPFS node"
        self._say(elapsed, f"{name} unreachable, retrying in {delay:.0f} s")
        log.info(
            "%s unreachable for %.1f s (try %d); retrying in %.1f s", self._url(service), elapsed, self.tries, delay
        )
        await asyncio.sleep(delay)

    def recovered(self) -> None:
        """A step succeeded: the outage, if there was one, is over."""
        if self.since is None or self.service is None:
            return
        elapsed = time.time() - self.since
        name = "RPC" if self.service == RPC else "IPFS node"
        self._say(elapsed, f"the {name} is back after {elapsed:.0f} s")
        log.info("%s is back after %.1f s", self._url(self.service), elapsed)
        self.since, self.service, self.tries = None, None, 0

    async def retrying(
        self, step: Callable[[], Awaitable[_T]], *, stopped: Callable[[str, str, float], SessionInterrupted]
    ) -> _T:
        """`step()`, run again after each lost connection (see `wait`)."""
        while True:
            try:
                result = await step()
            except Exception as exc:
                await self.wait(exc, stopped=stopped)
                continue
            self.recovered()
            return result

    def what(self, service: str) -> str:
        """`the RPC at <url>` or `the IPFS node at <url>`, for messages."""
        return self._url(service)
