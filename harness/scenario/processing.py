"""The processing gap bound: the longest silence a member's processing interval may hold.

Contract
--------
A member processes a partition while its records of it follow one another; the split-brain figures
(:mod:`harness.analysis.split_brain`) cut a member's processing interval wherever two consecutive
records of one partition lie further apart than this bound, so silence is never counted as processing.

:func:`processing_gap_s` is the bound of one implementation in one case: the scenario's
``split_brain_gap`` when set, else the larger of

* :data:`GAP_RECORDS` intervals between two records of one partition (``partitions / workload.rate``):
  a member that keeps up receives its partition's next record within about one such interval; ten
  leave room for batching and scheduling delays on a loaded machine;
* one fetch wait plus one poll window of the member's client (the fetch wait is the broker's long poll
  of an empty partition, the poll window the member's own loop): where records come slower than that,
  the member cannot see the next one sooner.

The fetch wait is the client's property where the case sets one (``group.coordinator.fetch_max_wait_ms``,
or by the client's own name: ``fetch.max.wait.ms``; librdkafka's
``fetch.wait.max.ms``; the Go clients' own options, Go durations: kafka-go's ``MaxWait``, franz-go's
``FetchMaxWait``), else its default (:data:`CLIENT_FETCH_WAIT_MS`); legacy_zk's fetcher uses 0.8's
``fetch.wait.max.ms`` default (:data:`legacy_zk.fetcher.FETCH_MAX_WAIT_MS`) and its poll window
(:data:`legacy_zk.fetcher.POLL_MS`); every coordinator member polls in windows of
:data:`MEMBER_POLL_TIMEOUT_MS`.
"""

from __future__ import annotations

from harness.scenario.model import Scenario
from harness.scenario.properties import go_duration_ms
from legacy_zk.fetcher import FETCH_MAX_WAIT_MS, POLL_MS

#: intervals between two records of one partition that a processing interval may stay silent
GAP_RECORDS = 10
#: the coordinator members' poll window (``poll(timeout_ms=...)`` and its equivalents)
MEMBER_POLL_TIMEOUT_MS = 200
#: the coordinator clients' fetch-wait property and its default (kafka-python and aiokafka:
#: ``fetch_max_wait_ms`` 500; librdkafka: ``fetch.wait.max.ms`` 500; Kafka's Java consumer:
#: ``fetch.max.wait.ms`` 500)
CLIENT_FETCH_WAIT_MS = {
    "kafka-python": ("fetch.max.wait.ms", 500),
    "aiokafka": ("fetch.max.wait.ms", 500),
    "librdkafka": ("fetch.wait.max.ms", 500),
    "java": ("fetch.max.wait.ms", 500),
    # kafka-go: each partition reader's MaxWait (10s); franz-go: FetchMaxWait (5s)
    "kafka-go": ("MaxWait", 10_000),
    "franz-go": ("FetchMaxWait", 5_000),
}


def fetch_and_poll_ms(scenario: Scenario, impl: str) -> int:
    """One fetch wait plus one poll window of ``impl``'s members in ``scenario``, in ms."""
    if impl == "legacy_zk":
        return FETCH_MAX_WAIT_MS + POLL_MS
    c = scenario.group.consumer if impl == "consumer" else scenario.group.coordinator
    name, default = CLIENT_FETCH_WAIT_MS[c.client]
    if c.fetch_max_wait_ms is not None and name not in c.properties:  # the typed key, unless overridden
        return c.fetch_max_wait_ms + MEMBER_POLL_TIMEOUT_MS
    value = c.properties.get(name, default)
    duration = go_duration_ms(str(value)) if isinstance(value, str) else None
    try:
        wait = int(duration) if duration is not None else int(str(value))
    except ValueError:
        wait = default  # the client itself refuses such a value when the members start
    return wait + MEMBER_POLL_TIMEOUT_MS


def processing_gap_s(scenario: Scenario, impl: str, partitions: int) -> float:
    """The processing gap bound of ``impl`` in the case ``scenario`` with ``partitions`` (seconds)."""
    if scenario.split_brain_gap is not None:
        return float(scenario.split_brain_gap)
    per_record = partitions / scenario.workload.rate
    return round(max(GAP_RECORDS * per_record, fetch_and_poll_ms(scenario, impl) / 1000), 6)
