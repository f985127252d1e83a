# pyright: strict
"""The simulator's stated model of delays: what a simulated run assumes about the network and the
processes, written into the run's manifest and printed in its report.

Contract
--------
:class:`DelayModel` is frozen and complete: every delay the simulator applies comes from one of its
fields (never a constant elsewhere), so ``describe()`` is the whole model. Times are seconds of
virtual time. ``seed`` seeds the only random source (:meth:`DelayModel.rng`); with ``jitter`` 0 a
simulation is fully deterministic. The legacy fields model a kazoo client against one ZooKeeper
server; the coordinator fields a kafka-python client against one broker (its thread timing:
:mod:`harness.sim.kafka_python30`).

The values live in named profiles, TOML files in ``harness/sim/profiles/`` (package data), each
setting every field but ``seed`` and ``profile``; :func:`load_profile` reads one, with overrides.
:data:`DEFAULT_PROFILE` (every member on a machine of its own) serves what the simulator is for, groups
larger than one machine holds; :data:`MACHINE_PROFILE` is the model fitted to real runs on one 2-core
machine, every member sharing its cores. How the values were fitted: docs/validation/simulator-profile.md.
A field whose name ends ``_per_member_s`` scales with the live members per client core
(:meth:`DelayModel.per_core`).
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import asdict, dataclass, fields
from importlib import resources
from typing import Any

from harness.kernel.errors import ConfigError

__all__ = ["DEFAULT_PROFILE", "MACHINE_PROFILE", "DelayModel", "load_profile", "profile_names"]

#: The profile ``herdlab simulate`` uses unless told otherwise: members on machines of their own.
DEFAULT_PROFILE = "host-per-member"
#: The profile fitted to this project's real runs: every member sharing one machine's two cores.
MACHINE_PROFILE = "two-core-host"


@dataclass(frozen=True)
class DelayModel:
    """Delays of a simulated run (seconds of virtual time unless a field says otherwise)."""

    #: One-way network delay, each direction of every request and notification (s; 0: instant).
    network_one_way_s: float
    #: ZooKeeper server's service time per request, served one at a time (s; 0: no queue).
    zk_service_s: float
    #: ZooKeeper's ``tickTime``: sessions expire at the tick boundary after their timeout (s; 0: at it).
    zk_tick_s: float
    #: A legacy member's client-side cost per ZooKeeper request, on the client cores (s; 0: free).
    zk_client_s: float
    #: A legacy member's cost to receive one watch notification and hand it on (s; 0: free).
    zk_watch_client_s: float
    #: A legacy member's rebalance starts uniformly within this after its watch (s; 0: at once, lockstep).
    watch_wake_spread_s: float
    #: A legacy member's fetcher poll length, which a rebalance's stop waits out (s; 0: stops at once).
    fetch_poll_s: float
    #: A legacy member's cost to open its ZooKeeper session before the connect round trip (s; 0: free).
    zk_connect_s: float
    #: The initial members become ready uniformly within this interval (s; 0: all at the unit's start).
    member_start_spread_s: float
    #: The producer starts uniformly within this interval (s; 0: at the unit's start).
    producer_start_spread_s: float
    #: A held member a ``join`` releases is ready uniformly within this (s; 0: at the invoke).
    member_release_poll_s: float
    #: A started member's boot, gamma mean: this plus the next field's part (s; 0 and 0: ready at once).
    member_boot_s: float
    #: A started member's boot, the mean's part per live member per client core (s; 0: none).
    member_boot_per_member_s: float
    #: A started member's boot, coefficient of variation (ratio; 0: exactly the mean).
    member_boot_cv: float
    #: Cores the members' client-side work shares (count; 0: every member a core of its own).
    client_cores: int
    #: Which waiting legacy member a freed client core serves (1: one at random; 0: first come first served).
    zk_client_random_order: int
    #: In random order, lognormal sigma of a legacy member's share of the cores, per wake (0: equal shares).
    zk_client_share_sigma: float
    #: The broker's service time per group request (s; 0: instant).
    broker_service_s: float
    #: The broker's work per parked answer it sends when a phase completes (s; 0: answers leave at once).
    broker_response_s: float
    #: The same, per answer sent together per client core (s; 0: none).
    broker_response_per_member_s: float
    #: A coordinator member's client-side cost per request (s; 0: free).
    kafka_client_s: float
    #: A coordinator member's work on a SyncGroup answer after its first, on the client cores (s; 0: free).
    kafka_sync_client_s: float
    #: A coordinator member's work on its first SyncGroup answer, on the client cores (s; 0: free).
    kafka_first_sync_client_s: float
    #: SyncGroup answers' work against waiting join-answer work (0: first come first served; 1: served first).
    kafka_sync_answer_priority: int
    #: A coordinator member's work on its JoinGroup answer before its SyncGroup leaves (s; 0: free).
    kafka_join_answer_s: float
    #: The same, per live member per client core (s; 0: none).
    kafka_join_answer_per_member_s: float
    #: The group leader's assignment work per member in its JoinGroup answer (s; 0: free).
    kafka_assign_per_member_s: float
    #: The same, per member in the answer per live member per client core: waiting for a core (s; 0: none).
    kafka_assign_per_member_per_core_s: float
    #: A coordinator member's main-thread gap between polls, mean per live member per core (s; 0: no gap).
    kafka_poll_gap_per_member_s: float
    #: Coefficient of variation of poll gaps, heartbeat and main-check lateness (ratio; 0: exactly the mean).
    kafka_poll_gap_cv: float
    #: Mean lateness of each heartbeat's send by kafka-python's IO thread (s; 0 and 0: on time).
    kafka_heartbeat_late_s: float
    #: The same, per live member per client core (s; 0: none).
    kafka_heartbeat_late_per_member_s: float
    #: Mean lateness of the main thread's flag check at a heartbeat deadline (s; 0 and 0: before the answer).
    kafka_main_check_late_s: float
    #: The same, per live member per client core (s; 0: none).
    kafka_main_check_late_per_member_s: float
    #: Mean lateness of a JoinGroup resent after a join found done by the next poll (s; 0 and 0: at the poll).
    kafka_rejoin_late_s: float
    #: The same, per live member per client core (s; 0: none).
    kafka_rejoin_late_per_member_s: float
    #: Coefficient of variation of that rejoin lateness (ratio; 0: exactly the mean).
    kafka_rejoin_late_cv: float
    #: Mean time from a clean stop's revoke to its LeaveGroup's send (s; 0: at once).
    kafka_close_leave_s: float
    #: Coefficient of variation of that time (ratio; 0: exactly the mean).
    kafka_close_leave_cv: float
    #: A member's cost to apply an assignment (callbacks, fetcher restart), on the client cores (s; 0: free).
    member_apply_s: float
    #: Mean lateness of the runner's step after its time (s; 0 and 0: on time).
    runner_step_late_s: float
    #: The same, per live member per client core (s; 0: none).
    runner_step_late_per_member_s: float
    #: Coefficient of variation of the step's lateness (ratio; 0: exactly the mean).
    runner_step_late_cv: float
    #: Relative jitter on every delay, uniform in [1 - jitter, 1 + jitter] (ratio; 0: deterministic).
    jitter: float
    #: Seed of the only random source (integer; not part of a profile).
    seed: int = 0
    #: The profile the values came from (name; empty: given field by field).
    profile: str = ""

    def rng(self) -> random.Random:
        """A fresh random source from ``seed`` (one per simulated unit, so units are independent)."""
        return random.Random(self.seed)

    def per_core(self, members: int) -> float:
        """Members per client core, the load the per-member-per-core fields scale with (``*_per_member_s``):
        ``members / client_cores``, 1 with ``client_cores`` 0 (every member a core of its own)."""
        return members / self.client_cores if self.client_cores > 0 else 1.0

    def as_dict(self) -> dict[str, float | int | str]:
        """Every field (the profile's name too), for the manifest and ``metrics.json``."""
        return asdict(self)

    def describe(self) -> str:
        """The model in one line, for the report: its profile, then every field (units: the fields')."""
        parts = [f"{f.name}={getattr(self, f.name)}" for f in fields(self) if f.name != "profile"]
        return f"profile {self.profile or '(none)'}; virtual time; delays in seconds: " + ", ".join(parts)


#: The fields a profile sets: every one but ``seed`` and ``profile``.
PROFILE_FIELDS = tuple(f.name for f in fields(DelayModel) if f.name not in ("seed", "profile"))


def profile_names() -> list[str]:
    """The profiles shipped in ``harness/sim/profiles/``, sorted."""
    folder = resources.files("harness.sim").joinpath("profiles")
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def load_profile(name: str, changes: dict[str, Any] | None = None, seed: int = 0) -> DelayModel:
    """The model of profile ``name`` with ``changes`` (field name to value) applied; a one-line
    :class:`~harness.kernel.errors.ConfigError` for an unknown profile or one that does not set exactly
    :data:`PROFILE_FIELDS` (each a number, an integer where the field is one)."""

    known = profile_names()
    if name not in known:
        raise ConfigError(f"no delay profile {name!r} (profiles: {', '.join(known)})")
    text = resources.files("harness.sim").joinpath("profiles", f"{name}.toml").read_text()
    values: dict[str, Any] = tomllib.loads(text)
    missing = [f for f in PROFILE_FIELDS if f not in values]
    extra = [k for k in values if k not in PROFILE_FIELDS]
    if missing or extra:
        raise ConfigError(f"delay profile {name!r}: missing {missing}, unknown {extra}")
    ints = {f.name for f in fields(DelayModel) if f.type in (int, "int")}
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or (k in ints and not isinstance(v, int)):
            kind = "an integer" if k in ints else "a number"
            raise ConfigError(f"delay profile {name!r}: {k} = {v!r} is not {kind}")
        if k not in ints:
            values[k] = float(v)
    merged: dict[str, Any] = {**values, **(changes or {})}
    return DelayModel(**merged, seed=seed, profile=name)
