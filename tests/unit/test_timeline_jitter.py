"""``timeline_jitter``: each repetition's timeline entries start later by seeded offsets below the jitter,
the same for every implementation and case, entries at one time kept together; a jitter as long as the
shortest gap between entries is refused. Pure: scenarios and plans only."""

from __future__ import annotations

import random

import pytest

from harness.kernel.errors import ConfigError
from harness.run.plan import jittered, make_plan
from harness.scenario import expand, load_scenario

TIMELINE = 'timeline=[{at="5s",action="join"},{at="20s",action="leave"},{at="20s",action="crash"},{at="35s",action="join"}]'


def test_offsets_are_drawn_per_repetition_below_the_jitter_and_keep_simultaneous_entries_together() -> None:
    s = load_scenario("coordinators", ["matrix={}", "timeline_jitter=0.5", "seed=7", TIMELINE])
    for rep in (0, 1):
        # the draw by hand: one uniform offset per distinct time, in time order, from Random("7/<rep>")
        rng = random.Random(f"7/{rep}")
        want = {
            5.0: 5.0 + rng.uniform(0, 0.5),
            20.0: 20.0 + rng.uniform(0, 0.5),
            35.0: 35.0 + rng.uniform(0, 0.5),
        }
        got = [a.at for a in jittered(s, rep).timeline]
        assert got == [want[5.0], want[20.0], want[20.0], want[35.0]]
        assert all(0 <= g - a.at < 0.5 for g, a in zip(got, s.timeline, strict=True))
    assert [a.at for a in jittered(s, 0).timeline] != [a.at for a in jittered(s, 1).timeline]
    # a repetition's plan follows its moved entries; the plan of no repetition keeps the timeline's times
    assert make_plan(s, 6, repetition=0).steps[0].at == want_first_of(0)
    assert make_plan(s, 6).steps[0].at == 5.0


def want_first_of(rep: int) -> float:
    return 5.0 + random.Random(f"7/{rep}").uniform(0, 0.5)


def test_no_jitter_leaves_the_scenario_as_it_is() -> None:
    s = load_scenario("coordinators", ["matrix={}"])
    assert jittered(s, 3) is s


def test_every_case_of_a_repetition_gets_the_same_offsets() -> None:
    s = load_scenario("reference")
    first, *others = [jittered(c.scenario, 2).timeline for c in expand(s)]
    assert all([a.at for a in o] == [a.at for a in first] for o in others)


def test_a_jitter_as_long_as_the_shortest_gap_is_refused() -> None:
    with pytest.raises(
        ConfigError,
        match=r"timeline_jitter \(15s\) must be shorter than the shortest time between two timeline entries \(15s\)",
    ):
        load_scenario("coordinators", ["timeline_jitter=15"])
