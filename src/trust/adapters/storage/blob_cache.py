"""Verified blobs kept in memory by what they were fetched as, for a client that fetches the same
content again and again.

A worker opening its seats of one trace fetches each seat's node and the node's parents, and the
parents repeat from seat to seat: every step of an HDAG has the goal among its parents, and the
step before it. A blob stored under a CID is the same bytes forever, so once `KuboClient.cat` has
checked it against its CID and digest, the next seat that names the same (CID, digest) can have it
without another request. Requests for a blob already on its way wait for that one fetch.

Only successful fetches are kept; a failed one is not, and the next asks again. The cache holds at
most `max_bytes`, the least recently used blob going first; a blob larger than a quarter of that is
never kept.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Final

__all__ = ["DEFAULT_CACHE_BYTES", "BlobCache"]

DEFAULT_CACHE_BYTES: Final = 32 * 1024 * 1024


class BlobCache:
    """See the module docstring. Keys name a blob and the checks it passed: (CID, digest)."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self._blobs: OrderedDict[Hashable, bytes] = OrderedDict()
        self._size = 0
        self._pending: dict[Hashable, asyncio.Future[bytes]] = {}
        self.hits = 0
        self.misses = 0

    @property
    def size_bytes(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._blobs)

    async def fetch(self, key: Hashable, load: Callable[[], Awaitable[bytes]]) -> bytes:
        """The blob under `key`: kept, on its way (waited for), or loaded now with `load`, which
        must raise unless the blob passed the checks `key` names."""
        kept = self._blobs.get(key)
        if kept is not None:
            self._blobs.move_to_end(key)
            self.hits += 1
            return kept
        pending = self._pending.get(key)
        if pending is not None:
            self.hits += 1
            return await asyncio.shield(pending)
        self.misses += 1
        future = asyncio.ensure_future(load())
        # Retrieved here, so that a failure nobody waits for any more (its waiters were cancelled)
        # is not reported as never retrieved.
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._pending[key] = future
        try:
            blob = await asyncio.shield(future)
        finally:
            if self._pending.get(key) is future:
                del self._pending[key]
        self._keep(key, blob)
        return blob

    def _keep(self, key: Hashable, blob: bytes) -> None:
        if len(blob) * 4 > self.max_bytes or key in self._blobs:
            return
        self._blobs[key] = blob
        self._size += len(blob)
        while self._size > self.max_bytes:
            _, dropped = self._blobs.popitem(last=False)
            self._size -= len(dropped)
