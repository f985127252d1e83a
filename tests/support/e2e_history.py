"""A hand-made one-unit history for the end-to-end latency tests (shared by two test modules).

One coordinator unit, one partition, times in integer ms (origin: ``stable`` at 1000 ms). The
producer acknowledges offsets 0..39 at 1000 + 100 i. Member a processes:

* offsets 0..19 (before the trigger) at 1010 + 110 i: latency 10 (i + 1) ms, 10..200 ms;
* offset 5 again at 8000 (a duplicate: its latency stays its first processing's, 60 ms);
* offset 38 at 4790, 10 ms before its acknowledgement at 4800: -10 ms, clamped to 0;
* offsets 20..37 (in the window of the trigger ``leave b`` at 5000, until settling_end at 9000) at
  5200 + 150 j (j = i - 20): latency 5200 + 150 j - (3000 + 100 j) = 2200 + 50 j ms, 2200..3050 ms;
* never offset 39 (not drained: no latency).
"""

from __future__ import annotations

from tests.support.histories import UnitHistory

EPOCH_S = 1_800_000_000  # tests.support.histories.T0_NS in seconds


def history() -> UnitHistory:
    u = UnitHistory("e2e", partitions=1)
    u.unit_start(0, ["a", "b"]).ready(0, "a").ready(0, "b")
    u.joined(100, "a", 0, generation=1, member="A").joined(100, "b", generation=1, member="B")
    u.stable(1000)
    u.produced(0, range(40), 1000, 100)
    for i in range(20):
        u.records("a", 0, [i], 1010 + 110 * i, 1)
    u.records("a", 0, [38], 4790, 1)
    u.action(5000, "leave", ["b"], complete_ms=5050)
    u.records("a", 0, range(20, 38), 5200, 150)
    u.records("a", 0, [5], 8000, 1)
    u.settling_end(9000)
    return u
