"""The member's watches: what it subscribes to, and how a notification becomes a rebalance.

Contract (spec 1.6, 1.15)
-------------------------
:class:`GroupWatches` owns the member's :class:`legacy_zk.listeners.Subscriptions`:

* :meth:`GroupWatches.subscribe` (``reinitializeConsumer``): the children of ``/consumers/<g>/ids``
  and the data of ``/brokers/topics/<t>`` for each subscribed topic (in sorted order);
  :meth:`GroupWatches.watch_brokers`: the children of ``/brokers/ids`` (after "no brokers");
* every notification delivered is one ``watch`` event (``path``, ``type``, ``via``) and counted in
  ``stats["watches"]``;
* a changed ids child list (``ZKRebalancerListener.handleChildChange``) or a changed topic znode
  (``ZKTopicPartitionChangeListener``) sets the :class:`RebalanceSignal` with the reason
  ``watch:<path>``, while the member is active; a deleted topic znode only warns;
* :class:`RebalanceSignal` is 0.8's ``isWatcherTriggered`` flag and condition: the rebalance thread
  waits on it up to 1000 ms, and one wake-up collects every reason set meanwhile (bursts coalesce).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from legacy_zk import paths
from legacy_zk.listeners import EventThread, Subscriptions
from legacy_zk.offsets import Emit
from legacy_zk.zkport import ZkPort

log = logging.getLogger("legacy_zk")

#: Reasons set by the member itself to wake the rebalance thread, never a cause to rebalance.
WAKE_ONLY = ("quiesce", "shutdown")


class RebalanceSignal:
    """0.8's ``isWatcherTriggered`` flag + condition, built from the handler's primitives."""

    def __init__(self, handler: Any) -> None:
        self._event = handler.event_object()
        self._lock = threading.Lock()  # held without yielding: safe for threads and greenlets
        self._reasons: list[str] = []

    def set(self, reason: str) -> None:
        with self._lock:
            if reason not in self._reasons:
                self._reasons.append(reason)
        self._event.set()

    def wait_and_clear(self, timeout: float | None) -> list[str]:
        """Wait up to ``timeout`` (None: until it is) for ``set``; return (and clear) the reasons seen, []
        if none."""
        self._event.wait(timeout)
        with self._lock:
            reasons, self._reasons = self._reasons, []
            self._event.clear()
        return reasons


class GroupWatches:
    """The subscriptions of one member of ``group`` (module contract)."""

    def __init__(
        self,
        zk: ZkPort,
        events: EventThread,
        handler: Any,
        group: str,
        topics: Iterable[str],
        emit: Emit,
        stats: MutableMapping[str, int],
        active: Callable[[], bool],
        tag: Callable[[], str],
    ) -> None:
        self.group = group
        self.topics = sorted(topics)
        self._emit = emit
        self._stats = stats
        self._active = active
        self._tag = tag
        self.signal = RebalanceSignal(handler)
        self.subs = Subscriptions(
            zk,
            events,
            on_notification=self._notified,
            on_children=self._children_changed,
            on_data=self._data_changed,
            active=active,
        )

    def subscribe(self) -> None:
        """``reinitializeConsumer``: the ids children, then each topic's data."""
        self.subs.subscribe_children(paths.ids_dir(self.group))
        for t in self.topics:
            self.subs.subscribe_data(paths.topic_path(t))

    def watch_brokers(self) -> None:
        """``subscribeChildChanges(BrokerIdsPath)`` (exists + getChildren, every time)."""
        self.subs.subscribe_children(paths.BROKER_IDS)

    def fire_all(self, reason: str) -> None:
        """After a session expiry: re-arm and re-deliver every subscription (``fireAllEvents``)."""
        self.subs.fire_all(reason)

    def resync(self) -> None:
        """After a reconnect in the same session: re-arm every subscription (kazoo dropped them)."""
        self.subs.resync()

    # -- reactions ------------------------------------------------------------------------------
    def _notified(self, path: str, etype: str, via: str) -> None:
        """A watch notification reached this member (kazoo's callback thread, or the event thread
        for one replayed after a reconnect): one ``watch`` event."""
        self._stats["watches"] += 1
        self._emit("watch", path=path, type=str(etype), via=via)

    def _children_changed(self, path: str, children: list[str] | None, reason: str) -> None:
        """``ZKRebalancerListener.handleChildChange`` (ids, or brokers after "no brokers"): trigger."""
        if self._active():
            self.signal.set(reason)

    def _data_changed(self, path: str, exists: bool, reason: str) -> None:
        """``ZKTopicPartitionChangeListener``: a changed topic triggers; a deleted one only warns."""
        if not exists:
            log.warning("%s: topic znode %s was deleted; not rebalancing", self._tag(), path)
            return
        if self._active():
            self.signal.set(reason)
