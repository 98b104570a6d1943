"""Wakes long polls when a task may have changed: the scheduler's thread notifies, the event loop's waiters wake."""

from __future__ import annotations

import asyncio
import contextlib


class Changes:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop, self._event = loop, asyncio.Event()

    def notify(self) -> None:
        """From any thread."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                self._loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        assert self._event is not None
        self._event.set()
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        """Take this before reading the state, then ``wait`` on it: a change in between is not missed."""
        assert self._event is not None
        return self._event

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)
