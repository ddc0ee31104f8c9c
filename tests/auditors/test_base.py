"""`trust.auditors.base.all_or_nothing`: how the auditors await several questions at once."""

from __future__ import annotations

import asyncio

import pytest

from trust.auditors.base import all_or_nothing


async def test_results_come_in_order_with_at_most_concurrency_in_flight() -> None:
    running, most = 0, 0

    async def job(value: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)  # let the others start, if the gate allows
        await asyncio.sleep(0)
        running -= 1
        return value * value

    assert await all_or_nothing([job(v) for v in range(10)], concurrency=3) == [v * v for v in range(10)]
    assert most == 3
    most = 0
    assert await all_or_nothing([job(v) for v in range(10)]) == [v * v for v in range(10)]
    assert most == 10


async def test_a_failure_cancels_the_others_before_it_is_raised() -> None:
    hang = asyncio.Event()
    cancelled: list[int] = []

    async def waits(index: int) -> int:
        try:
            await hang.wait()
        except asyncio.CancelledError:
            cancelled.append(index)
            raise
        return index

    async def fails() -> int:
        await asyncio.sleep(0)
        raise RuntimeError("endpoint down")

    for concurrency in (2, None):
        cancelled.clear()
        with pytest.raises(RuntimeError, match="endpoint down"):
            await all_or_nothing([waits(0), fails(), waits(2)], concurrency=concurrency)
        assert 0 in cancelled and set(cancelled) <= {0, 2}
        assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing outlives the call
