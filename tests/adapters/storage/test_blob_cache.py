"""`BlobCache`: one fetch per blob while it is kept, one for concurrent requests, none kept on failure."""

from __future__ import annotations

import asyncio

import pytest

from trust.adapters.storage.blob_cache import BlobCache


class _Loads:
    def __init__(self) -> None:
        self.count = 0
        self.gate = asyncio.Event()
        self.gate.set()

    def of(self, blob: bytes, *, fail: bool = False):  # type: ignore[no-untyped-def]
        async def load() -> bytes:
            self.count += 1
            await self.gate.wait()
            if fail:
                raise ConnectionError("the node went away")
            return blob

        return load


async def test_a_kept_blob_is_not_fetched_again() -> None:
    cache, loads = BlobCache(), _Loads()
    assert await cache.fetch(("cid-a", b"d"), loads.of(b"aaa")) == b"aaa"
    assert await cache.fetch(("cid-a", b"d"), loads.of(b"other")) == b"aaa"
    assert loads.count == 1 and (cache.hits, cache.misses) == (1, 1)
    # the key names the checks a blob passed: the same CID with another digest is fetched (and checked)
    assert await cache.fetch(("cid-a", b"e"), loads.of(b"aaa")) == b"aaa"
    assert loads.count == 2


async def test_concurrent_requests_share_one_fetch_and_a_failure_is_not_kept() -> None:
    cache, loads = BlobCache(), _Loads()
    loads.gate.clear()
    waiting = [asyncio.create_task(cache.fetch("k", loads.of(b"x", fail=True))) for _ in range(3)]
    await asyncio.sleep(0)
    loads.gate.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert loads.count == 1 and all(isinstance(r, ConnectionError) for r in results)
    assert len(cache) == 0
    assert await cache.fetch("k", loads.of(b"x")) == b"x"  # asked again, and kept now
    assert loads.count == 2 and len(cache) == 1


async def test_a_cancelled_waiter_leaves_the_fetch_to_the_others() -> None:
    cache, loads = BlobCache(), _Loads()
    loads.gate.clear()
    first = asyncio.create_task(cache.fetch("k", loads.of(b"x")))
    second = asyncio.create_task(cache.fetch("k", loads.of(b"y")))
    await asyncio.sleep(0)
    first.cancel()
    loads.gate.set()
    assert await second == b"x"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert loads.count == 1


async def test_the_least_recently_used_goes_first_and_large_blobs_are_never_kept() -> None:
    cache, loads = BlobCache(max_bytes=100), _Loads()
    for key in ("a", "b", "c"):
        await cache.fetch(key, loads.of(bytes(25)))
    await cache.fetch("a", loads.of(bytes(25)))  # used: "b" is now the oldest
    await cache.fetch("d", loads.of(bytes(25)))
    await cache.fetch("e", loads.of(bytes(25)))  # 125 bytes: "b" goes
    assert cache.size_bytes == 100 and len(cache) == 4
    before = loads.count
    await cache.fetch("b", loads.of(bytes(25)))
    assert loads.count == before + 1
    await cache.fetch("big", loads.of(bytes(26)))  # more than a quarter of the budget
    await cache.fetch("big", loads.of(bytes(26)))
    assert loads.count == before + 3
    with pytest.raises(ValueError, match="max_bytes"):
        BlobCache(max_bytes=0)
