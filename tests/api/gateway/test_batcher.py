"""Epochs (trust.api.gateway.batcher): an epoch closes at its trace count, at its time, or before a trace that
would take it past a session's segments; closed epochs are dispatched in tasks of their own."""

from __future__ import annotations

import asyncio

import pytest

from trust.api.gateway.batcher import Batcher, EpochPolicy
from trust.errors import ConfigError

LONG_SECONDS = 3600.0
"""An epoch time no test waits for: those epochs close by count or size."""
SHORT_SECONDS = 0.01


class Recorder:
    """A dispatch that records each closed epoch and can be held open."""

    def __init__(self) -> None:
        self.epochs: list[tuple[int, list[str]]] = []
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()
        self.cancelled = 0

    async def __call__(self, number: int, items: list[str]) -> None:
        self.epochs.append((number, items))
        self.arrived.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def next_epoch(self) -> tuple[int, list[str]]:
        await self.arrived.wait()
        self.arrived.clear()
        return self.epochs[-1]


async def test_an_epoch_closes_at_its_trace_count() -> None:
    recorder = Recorder()
    batcher: Batcher[str] = Batcher(EpochPolicy(LONG_SECONDS, max_traces=2, max_segments=100), recorder)
    assert batcher.add("a", 5) == 1 and batcher.open_epoch == 1
    assert batcher.add("b", 5) == 1 and batcher.open_epoch is None
    assert await recorder.next_epoch() == (1, ["a", "b"])
    assert batcher.add("c", 5) == 2
    assert await batcher.aclose() == ["c"]


async def test_an_epoch_closes_at_its_time_with_what_it_holds() -> None:
    recorder = Recorder()
    batcher: Batcher[str] = Batcher(EpochPolicy(SHORT_SECONDS, max_traces=10, max_segments=100), recorder)
    batcher.add("alone", 3)
    assert await recorder.next_epoch() == (1, ["alone"])
    assert batcher.open_epoch is None
    assert batcher.add("later", 3) == 2, "the next trace opens a new epoch"
    assert await recorder.next_epoch() == (2, ["later"])
    await batcher.aclose()


async def test_a_trace_that_would_overflow_the_session_starts_the_next_epoch() -> None:
    recorder = Recorder()
    batcher: Batcher[str] = Batcher(EpochPolicy(LONG_SECONDS, max_traces=10, max_segments=10), recorder)
    batcher.add("six", 6)
    assert batcher.add("five", 5) == 2
    assert await recorder.next_epoch() == (1, ["six"])
    # The chain's own limit, lower than the policy's, counts too.
    assert batcher.add("four", 4, max_segments=8) == 3
    assert await recorder.next_epoch() == (2, ["five"])
    with pytest.raises(ConfigError, match="do not fit an epoch of at most 10"):
        batcher.add("huge", 11)
    batcher.flush()
    assert await recorder.next_epoch() == (3, ["four"])
    await batcher.aclose()


async def test_closing_cancels_running_epochs_and_refuses_new_traces() -> None:
    recorder = Recorder()
    recorder.release.clear()
    batcher: Batcher[str] = Batcher(EpochPolicy(LONG_SECONDS, max_traces=1, max_segments=10), recorder)
    batcher.add("running", 1)
    await recorder.next_epoch()
    assert batcher.running == 1
    assert await batcher.aclose() == []
    assert recorder.cancelled == 1 and batcher.running == 0
    with pytest.raises(ConfigError, match="shutting down"):
        batcher.add("late", 1)


def test_a_policy_refuses_nonsense() -> None:
    with pytest.raises(ConfigError, match="epoch_seconds"):
        EpochPolicy(0, 1, 1)
    with pytest.raises(ConfigError, match="max_traces_per_epoch"):
        EpochPolicy(1, 0, 1)
    with pytest.raises(ConfigError, match="max_segments_per_epoch"):
        EpochPolicy(1, 1, 0)
