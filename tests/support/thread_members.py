"""kafka-python group members on threads of their own, for tests of a broker's group coordination.

One thread polling several consumers with short timeouts is not how members run (each is a process of its
own): a JoinGroup answered while another consumer polls made kafka-python rejoin in a loop against tansu.
"""

from __future__ import annotations

import threading

from kafka import KafkaConsumer


class ThreadMembers:
    """``n`` consumers of ``topic`` in ``group`` (client ids ``<prefix><i>``), each polling on its own thread
    until :meth:`stop`; :attr:`owned` maps client id -> partitions owned after its last poll."""

    def __init__(self, bootstrap: str, topic: str, group: str, n: int, prefix: str) -> None:
        self.owned: dict[str, int] = {}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(bootstrap, topic, group, f"{prefix}{i}"), daemon=True)
            for i in range(n)
        ]

    def _run(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        try:
            while not self._stop.is_set():
                consumer.poll(200)
                self.owned[name] = len(consumer.assignment())
        finally:
            consumer.close()  # sends LeaveGroup

    def start(self) -> ThreadMembers:
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop every member (each closes its consumer); whether all threads ended within ``timeout``."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)
