"""Epochs: how the gateway groups submissions into batches (source anonymization, paper 3.4.4).

An epoch opens with its first submission and closes at whichever comes first: `epoch_seconds` after
it opened, or when it holds `max_traces` submissions. A submission whose segments would take the
epoch past `max_segments` (one session's limit) closes the open epoch first and opens the next one.
A closed epoch is handed to `dispatch(epoch_number, items)` in a task of its own, so epochs audit
concurrently; the batcher keeps the tasks until they end and cancels them on `aclose`.

Times are the event loop's monotonic clock (`loop.call_later`), so the wall clock stepping does not
open or close an epoch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from trust.errors import ConfigError

__all__ = ["Batcher", "EpochPolicy"]

log = logging.getLogger("trust.api.gateway.service")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class EpochPolicy:
    """When an epoch closes: after `epoch_seconds` (from its first submission), at `max_traces`
    submissions, or before `max_segments` segments would be exceeded."""

    epoch_seconds: float
    max_traces: int
    max_segments: int

    def __post_init__(self) -> None:
        if not self.epoch_seconds > 0:
            raise ConfigError(f"epoch_seconds must be positive, got {self.epoch_seconds}")
        if self.max_traces < 1:
            raise ConfigError(f"max_traces_per_epoch must be at least 1, got {self.max_traces}")
        if self.max_segments < 1:
            raise ConfigError(f"max_segments_per_epoch must be at least 1, got {self.max_segments}")


@dataclass
class _Epoch(Generic[T]):
    number: int
    items: list[T] = field(default_factory=list)
    segments: int = 0
    timer: asyncio.TimerHandle | None = None


class Batcher(Generic[T]):
    """Collects items into epochs (see the module docstring) and dispatches each closed epoch."""

    def __init__(self, policy: EpochPolicy, dispatch: Callable[[int, list[T]], Coroutine[Any, Any, None]]) -> None:
        self.policy = policy
        self._dispatch = dispatch
        self._open: _Epoch[T] | None = None
        self._next_number = 1
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def open_epoch(self) -> int | None:
        """The number of the epoch now collecting, if any."""
        return None if self._open is None else self._open.number

    @property
    def running(self) -> int:
        """Closed epochs whose dispatch has not ended yet."""
        return len(self._tasks)

    def add(self, item: T, segments: int, *, max_segments: int | None = None) -> int:
        """Puts `item` (of `segments` segments) into the open epoch, or a new one; returns its number.

        `max_segments` lowers the policy's segment limit for this call (the chain's own limit, read
        when the item was admitted). An item larger than the limit is refused with `ConfigError`:
        the caller checks sizes first.
        """
        if self._closed:
            raise ConfigError("the gateway is shutting down: no new epoch opens")
        cap = min(self.policy.max_segments, max_segments or self.policy.max_segments)
        if segments > cap:
            raise ConfigError(f"{segments} segments do not fit an epoch of at most {cap}")
        if self._open is not None and self._open.segments + segments > cap:
            self._close_open()
        if self._open is None:
            epoch: _Epoch[T] = _Epoch(self._next_number)
            self._next_number += 1
            epoch.timer = asyncio.get_running_loop().call_later(self.policy.epoch_seconds, self._due, epoch.number)
            self._open = epoch
        epoch = self._open
        epoch.items.append(item)
        epoch.segments += segments
        if len(epoch.items) >= self.policy.max_traces:
            self._close_open()
        return epoch.number

    def flush(self) -> None:
        """Closes the open epoch now (if any), whatever its size."""
        if self._open is not None:
            self._close_open()

    def _due(self, number: int) -> None:
        if self._open is not None and self._open.number == number:
            self._close_open()

    def _close_open(self) -> None:
        epoch, self._open = self._open, None
        assert epoch is not None
        if epoch.timer is not None:
            epoch.timer.cancel()
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(
            self._dispatch(epoch.number, epoch.items), name=f"gateway epoch {epoch.number}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s ended with an error", task.get_name(), exc_info=task.exception())

    async def aclose(self) -> list[T]:
        """Stops: no epoch opens any more, running dispatches are cancelled (and awaited). Returns the
        items of the epoch that was still open, never dispatched."""
        self._closed = True
        left: list[T] = []
        if self._open is not None:
            if self._open.timer is not None:
                self._open.timer.cancel()
            left, self._open = self._open.items, None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return left
