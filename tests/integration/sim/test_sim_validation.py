"""The simulator against a real run: a 10-member legacy_zk group on a real ZooKeeper and
broker, one join, then the same scenario simulated; the join's herd counts must be equal exactly.

Worked out by hand for N = 10 members over 10 partitions (range): the joiner's consumer id sorts after
every initial member's (0.8 ids are host-millis-uuid; the simulator orders its ids by start time too), so
the first ten consumers keep one partition each and the joiner gets none: no partition moves, so no claim
can meet an owner znode not yet released (no conflict, whatever the timing). Each of the 10 initial
members gets one notification (the ids child list changed) and makes one attempt, the joiner one
(its start): 11 attempts; creates: the joiner's registration and the 10 members' claims of their own
partition again: 11; deletes: the 10 releases. Offset commits (auto commit every 500 ms) are steady-state
traffic and left out of the counts, as the herd figures leave them out.
"""

from __future__ import annotations

from pathlib import Path

from harness.run.runner import RunOptions, run_scenario
from harness.scenario import load_scenario
from harness.sim.model import MACHINE_PROFILE, load_profile
from harness.sim.session import SimOptions, simulate_scenario
from harness.sim.validate import compare_runs

SCENARIO = """
name = "sim-validation"
implementations = ["legacy_zk"]
repetitions = 1
settle_window = "1s"
stable_timeout = "60s"
drain = "15s"

[topic]
name = "herd"
partitions = "members"

[workload]
rate = 100

[group]
id = "herd"
members = 10
assignor = "range"

[group.legacy_zk]
zookeeper_session_timeout_ms = 3000
rebalance_backoff_ms = 500
rebalance_max_retries = 10
auto_commit_interval_ms = 500

[[timeline]]
at = "2s"
action = "join"
count = 1
"""


def test_a_simulated_join_makes_the_herd_of_a_real_one_exactly(tmp_path: Path) -> None:
    path = tmp_path / "sim-validation.toml"
    path.write_text(SCENARIO)
    s = load_scenario(str(path))
    real = run_scenario(s, RunOptions(out=tmp_path / "real"))
    assert not [u for u in real.units if u.get("failed")], real.units
    # the profile fitted to the machine the real run shares
    sim = simulate_scenario(s, SimOptions(out=tmp_path / "sim", delays=load_profile(MACHINE_PROFILE)))
    assert not [u for u in sim.units if u.get("failed")], sim.units

    rows = compare_runs(real.run_dir, sim.run_dir, s.settle_window)
    assert [(r.impl, r.members, r.trigger) for r in rows] == [("legacy_zk", 10, "#1 join j0")]
    row = rows[0]
    expected = {"watches": 10, "attempts": 11, "zk:create": 11, "zk:delete": 10}
    assert {k: row.simulated.get(k) for k in expected} == expected
    assert row.real == [row.simulated]  # every count, the reads by op included, equal exactly
    assert row.simulated_latency_s is not None and row.real_latency_s
