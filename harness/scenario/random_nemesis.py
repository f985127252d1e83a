"""Seeded random fault schedules: ``[[nemesis]] kind = "random"`` drawn into concrete timeline actions.

Contract
--------
* :func:`draw` is a pure function of one :class:`~harness.scenario.model.RandomNemesis` and the
  scenario (its ``seed`` when the schedule has none, its ``settle_window``): the same inputs give the
  same actions, as plain timeline entries (dicts a scenario file could hold), sorted by ``at``.
* The draw (``random.Random(seed)``): fault starts form a Poisson process of ``rate`` per minute from
  ``start`` (exponential gaps of mean ``60 / rate`` s), except that a start falling before the previous
  fault ended plus the settle window is moved to that moment (one drawn fault at a time: the ZooKeeper
  and coordinator faults' one-at-a-time rules and the trigger spacing hold), and the gaps go on from
  there. No fault starts at or after ``stop``. Per fault: the action uniformly from ``actions``, a
  duration (``duration`` / ``downtime``) uniformly within the ``duration`` bounds, a target (cut and
  toxics) uniformly from ``targets``; every one hits one member chosen at random (``count = 1``,
  ``select = "random"``: the plan draws the member with the scenario's seed), the other keys keep their
  defaults, overridden by ``params[action]``. Times and durations are rounded to the millisecond.
* :func:`replay_data` is what ``herdlab run --replay`` runs again: the resolved scenario as data, only
  the keys the scenario set (every timeline entry whole).
* :func:`resolve` returns the scenario with every schedule's draws merged into its ``timeline`` and
  ``nemesis`` emptied (so resolving again changes nothing), validated again as a whole, plus the drawn
  entries (written into ``manifest.json`` as ``drawn_timeline``). A drawn timeline the scenario refuses
  (a crash with no member left, a coordinator fault with one broker, ``params`` with an unknown key) is a
  :class:`~harness.kernel.errors.ConfigError` naming the schedule.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import ValidationError

from harness.kernel import actions
from harness.kernel.errors import ConfigError
from harness.scenario.model import RandomNemesis, Scenario

#: Drawn actions whose length is a ``duration``, those whose length is a ``downtime``, those that hit
#: chosen members, and those with a ``target``: the registry's (:mod:`harness.kernel.actions`).
_WITH_DURATION = tuple(s.name for s in actions.SPECS if s.length == "duration")
_WITH_DOWNTIME = tuple(s.name for s in actions.SPECS if s.length == "downtime")
_MEMBERS = tuple(s.name for s in actions.SPECS if s.chooses)
_WITH_TARGET = tuple(s.name for s in actions.SPECS if s.timeline and s.family in ("cut", "toxic"))


def draw(spec: RandomNemesis, scenario: Scenario) -> list[dict[str, Any]]:
    """The schedule's timeline entries (see the module contract)."""
    rng = random.Random(scenario.seed if spec.seed is None else spec.seed)
    lo, hi = spec.duration
    out: list[dict[str, Any]] = []
    t = spec.start
    free_at = spec.start  # the previous fault's end plus the settle window
    while True:
        t = max(t + rng.expovariate(spec.rate / 60.0), free_at)
        at = round(t, 3)
        if at >= spec.stop:
            return out
        action = rng.choice(spec.actions)
        length = round(rng.uniform(lo, hi), 3)
        entry: dict[str, Any] = {"action": action, "at": at}
        if action in _MEMBERS:
            entry.update(count=1, select="random")
        if action in _WITH_TARGET:
            entry["target"] = rng.choice(spec.targets)
        if action in _WITH_DURATION:
            entry["duration"] = length
        elif action in _WITH_DOWNTIME:
            entry["downtime"] = length
        else:
            length = 0.0
        entry.update(spec.params.get(action, {}))
        out.append(entry)
        t = at
        free_at = at + length + scenario.settle_window


def resolve(scenario: Scenario) -> tuple[Scenario, list[dict[str, Any]]]:
    """The scenario with its random schedules drawn and merged, and the drawn entries (see the module
    contract). A scenario without schedules comes back as it is, with no entries."""
    if not scenario.nemesis:
        return scenario, []
    drawn: list[dict[str, Any]] = []
    for i, spec in enumerate(scenario.nemesis):
        entries = draw(spec, scenario)
        where = f"scenario {scenario.name}: nemesis entry {i + 1} (random, seed {spec.seed if spec.seed is not None else scenario.seed})"
        for e in entries:
            try:
                one = Scenario.model_validate({**_base(scenario), "timeline": [e]})
            except ValidationError as err:
                first = err.errors()[0]
                loc = ".".join(str(x) for x in first["loc"][3:]) or "timeline"
                raise ConfigError(
                    f"{where}: drawn {e['action']} at {e['at']:g}s: {loc}: {first['msg']}"
                ) from None
            drawn.append(one.timeline[0].model_dump(mode="json"))  # every key, defaults included
    data = _base(scenario)
    data["timeline"] = [a.model_dump(mode="json") for a in scenario.timeline] + drawn
    data["timeline"].sort(key=lambda a: a["at"])
    try:
        return Scenario.model_validate(data), drawn
    except ValidationError as err:
        first = err.errors()[0]
        raise ConfigError(
            f"scenario {scenario.name}: with its random schedule drawn: {first['msg']}"
        ) from None


def _base(scenario: Scenario) -> dict[str, Any]:
    """The scenario as data without its schedules (and with no timeline when checking one entry)."""
    # only what the scenario set: a full dump would set every typed coordinator key, which the model
    # refuses beside a properties table naming the same Kafka property
    data = scenario.model_dump(mode="json", exclude_unset=True)
    data["nemesis"] = []
    data["timeline"] = []
    return data


def replay_data(resolved: Scenario) -> dict[str, Any]:
    """The resolved scenario as data for ``manifest.json`` (``replay_scenario``): what it set, with every
    timeline entry whole, so that loading it gives the same plan (see the module contract)."""
    data = resolved.model_dump(mode="json", exclude_unset=True)
    data["timeline"] = [a.model_dump(mode="json") for a in resolved.timeline]
    data.pop("nemesis", None)
    return data
