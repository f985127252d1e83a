"""An asyncio loop in a daemon thread, as the taps serve their connections (:mod:`.kafka_tap`, :mod:`.zk_tap`).

Contract
--------
* :class:`LoopThread` ``start()`` runs a new event loop forever in a daemon thread named ``name`` and runs
  ``setup`` (a coroutine, e.g. binding the listeners) on it, returning its result once done; when ``setup``
  fails the loop is stopped and the error raised. :meth:`~LoopThread.call` runs a coroutine on the loop from
  another thread and waits for its result. ``stop(shutdown)`` (idempotent, returns whether this call stopped
  it) runs ``shutdown`` on the loop, ignoring its errors, then stops the loop, joins the thread and closes the
  loop.
* :func:`cancel_others`: cancels every task of the running loop but the current one and waits for them, so
  that no task is destroyed pending when the loop stops (asyncio reports those on the terminal).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop serving in a daemon thread (see the module contract)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def start(self, setup: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        try:
            return self.call(setup, timeout)
        except BaseException:
            self._stop_loop()
            raise

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        assert self._loop is not None, f"start() the {self.name} first"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self, shutdown: Coroutine[Any, Any, Any]) -> bool:
        with self._lock:
            if self._stopped or self._loop is None:
                self._stopped = True
                shutdown.close()
                return False
            self._stopped = True
        with contextlib.suppress(Exception):
            self.call(shutdown)
        self._stop_loop()
        return True

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10.0)
        if not loop.is_running():
            loop.close()


async def cancel_others(timeout: float = 5.0) -> None:
    """Cancel every other task of the running loop and wait for them (see the module contract)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
