"""ZkClient 0.3's listener machinery on kazoo: the event thread, subscriptions and watch re-arming.

Contract (spec 1.15; ``ZkClient.java`` and ``ZkEventThread.java`` of zkclient 0.3)
---------------------------------------------------------------------------------
* :class:`EventThread` is ``ZkEventThread``: one worker (a thread, or a greenlet on gevent) runs the
  queued events one after another; an event that raises is logged ("Error handling event") and the
  worker goes on. Events may block (they make ZooKeeper requests that wait for a connection); kazoo's
  own threads only ever queue them.
* :class:`Subscriptions` is ZkClient's listener registry. ``subscribe_children(path)``
  (``subscribeChildChanges`` -> ``watchForChilds``) sends ``exists(path, watch)`` then
  ``getChildren(path, watch)`` on the caller's thread, so a watch on a path that does not exist yet
  fires when it is created; ``subscribe_data(path)`` (``watchForData``) sends ``exists(path, watch)``.
* Every notification kazoo delivers to :meth:`Subscriptions.watcher` is reported once to
  ``on_notification(path, type, "notification")`` (kazoo hands one deletion to a path's data and
  child watchers separately; the Java client delivers it once), then queued: for a child
  subscription (child, created or deleted event) the event re-arms with ``exists`` then
  ``getChildren`` and calls ``on_children(path, children_or_None, reason)``; for a data subscription
  (changed, created or deleted event) with ``exists`` then ``getData``, then
  ``on_data(path, exists, reason)`` (``fireChildChangedEvents`` / ``fireDataChangedEvents``). So one
  notification costs 2 requests.
* :meth:`fire_all` queues that same re-arm and listener call for every subscription (ZkClient's
  ``fireAllEvents`` after a session expiry), without a notification.
* :meth:`resync` stands in for the Java client's ``SetWatches`` after a reconnect within the same
  session: kazoo forgets its watches on a disconnect, so every subscription is re-armed (same two
  requests) and, where the value differs from the last one seen, reported as a notification
  (``via="reconnect"``) and passed to its listener, as the server's replayed event would have been.
* While ``active()`` is false (a member quiescing or closing) notifications are ignored and queued
  events do nothing: no re-arming, no listener calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionClosedError, NoNodeError
from kazoo.protocol.states import EventType

from legacy_zk.zkport import ZkPort

log = logging.getLogger("legacy_zk")

CHILD_EVENTS = (EventType.CHILD, EventType.CREATED, EventType.DELETED)
DATA_EVENTS = (EventType.CHANGED, EventType.CREATED, EventType.DELETED)

Job = Callable[[], None]


class EventThread:
    """``ZkEventThread``: runs queued events in order on one worker (module contract)."""

    def __init__(self, handler: Any, name: str) -> None:
        self._handler = handler
        self._queue = handler.queue_impl()
        self.name = name
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._handler.spawn(self._run)

    def send(self, description: str, job: Job) -> None:
        """Queue ``job`` (never blocks; callable from kazoo's threads)."""
        self._queue.put((description, job))

    def stop(self) -> None:
        """Let the worker finish what is queued before this call, then end."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            description, job = item
            try:
                job()
            except ConnectionClosedError:
                log.debug("%s: event %s ended: the client is closing", self.name, description)
            except Exception:  # noqa: BLE001 - ZkEventThread: log and go on
                log.exception("%s: Error handling event %s", self.name, description)


class Subscriptions:
    """ZkClient's child and data listeners with their watches (module contract)."""

    def __init__(
        self,
        zk: ZkPort,
        events: EventThread,
        on_notification: Callable[[str, str, str], None],
        on_children: Callable[[str, list[str] | None, str], None],
        on_data: Callable[[str, bool, str], None],
        active: Callable[[], bool],
    ) -> None:
        self.zk = zk
        self.events = events
        self._on_notification = on_notification
        self._on_children = on_children
        self._on_data = on_data
        self._active = active
        #: path -> the children last read (sorted; None: the node did not exist)
        self.children: dict[str, list[str] | None] = {}
        #: path -> ``mzxid`` of the node when last read (None: it did not exist)
        self.data: dict[str, int | None] = {}
        self._last_event: Any = None

    # -- subscribing (on the caller's thread, as ZkClient does) ---------------------------------
    def subscribe_children(self, path: str) -> list[str] | None:
        """``subscribeChildChanges``: register, then ``exists`` + ``getChildren`` with watches."""
        self.children.setdefault(path, None)
        return self._arm_children(path)

    def subscribe_data(self, path: str) -> None:
        """``subscribeDataChanges``: register, then ``exists`` with a watch."""
        self.data.setdefault(path, None)
        stat = self.zk.exists(path, watch=self.watcher)
        self.data[path] = stat.mzxid if stat is not None else None

    def _arm_children(self, path: str) -> list[str] | None:
        self.zk.exists(path, watch=self.watcher)  # a missing node: this watch fires on its creation
        try:
            children: list[str] | None = sorted(self.zk.get_children(path, watch=self.watcher))
        except NoNodeError:
            children = None
        self.children[path] = children
        return children

    def _arm_data(self, path: str) -> bool:
        self.zk.exists(path, watch=self.watcher)
        try:
            _, stat = self.zk.get(path, watch=self.watcher)
        except NoNodeError:
            self.data[path] = None
            return False
        self.data[path] = stat.mzxid
        return True

    # -- notifications (kazoo's callback thread: never blocks) ----------------------------------
    def watcher(self, event: Any) -> None:
        """The one watch callback of every request (ZkClient's ``process`` for znode events)."""
        if event.type == EventType.NONE:
            return  # kazoo drops its watches on a disconnect and tells each with a NONE event
        if event is self._last_event:
            return  # one deletion handed to our data watch and to our child watch: one event
        self._last_event = event
        if not self._active():
            return
        path, etype = event.path, event.type
        self._on_notification(path, etype, "notification")
        reason = f"watch:{path}"
        if path in self.children and etype in CHILD_EVENTS:
            self.events.send(f"children of {path} changed", lambda: self._fire_children(path, reason))
        if path in self.data and etype in DATA_EVENTS:
            self.events.send(f"data of {path} changed", lambda: self._fire_data(path, reason))

    def _fire_children(self, path: str, reason: str) -> None:
        if self._active():
            self._on_children(path, self._arm_children(path), reason)

    def _fire_data(self, path: str, reason: str) -> None:
        if self._active():
            self._on_data(path, self._arm_data(path), reason)

    def fire_all(self, reason: str) -> None:
        """Queue a re-arm and listener call for every subscription (``fireAllEvents``)."""
        for path in list(self.children):
            self.events.send(f"children of {path} (all)", lambda p=path: self._fire_children(p, reason))
        for path in list(self.data):
            self.events.send(f"data of {path} (all)", lambda p=path: self._fire_data(p, reason))

    def resync(self) -> None:
        """Queue the re-arm of every subscription after a reconnect in the same session."""
        for path in list(self.children):
            self.events.send(f"resync children of {path}", lambda p=path: self._resync_children(p))
        for path in list(self.data):
            self.events.send(f"resync data of {path}", lambda p=path: self._resync_data(p))

    def _resync_children(self, path: str) -> None:
        if not self._active():
            return
        before = self.children.get(path)
        after = self._arm_children(path)
        if after != before:
            etype = EventType.CHILD if after is not None and before is not None else EventType.CREATED
            if after is None:
                etype = EventType.DELETED
            self._on_notification(path, etype, "reconnect")
            self._on_children(path, after, f"watch:{path}")

    def _resync_data(self, path: str) -> None:
        if not self._active():
            return
        before = self.data.get(path)
        exists = self._arm_data(path)
        after = self.data.get(path)
        if after != before:
            etype = EventType.DELETED if not exists else (EventType.CHANGED if before else EventType.CREATED)
            self._on_notification(path, etype, "reconnect")
            self._on_data(path, exists, f"watch:{path}")
