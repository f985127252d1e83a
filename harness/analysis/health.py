"""Session failures: harness health, not a protocol metric.

Contract
--------
* :func:`unit_values`: per unit, from its collected control events (:mod:`.control`) and the fold's
  marks and trigger windows: ``session_failures`` (heartbeat
  errors the member's client reported, the broker expiring the member's session (``member_removed``
  with reason ``expired``), and ZooKeeper SUSPENDED / LOST states of members that no nemesis action
  targeted, from the
  unit's ``stable`` until settling_end) and ``session_failures_startup`` (the same before
  ``stable``: start-up starvation). Units without any have neither. Trouble inside the trigger
  window of a coordinator or ZooKeeper-leader fault (:data:`.failover_verdict.FAULTS`, from its
  invoke) is not counted: those faults target no member but hit every member's session; it is the
  fault's effect, reported in its row (``units[i].failover``).
* :func:`health_fields`: the unit's two counts in the metrics document (0 when absent).
* With them, the start-up figures of :mod:`.startup` (members ready, when, first stable): the unit's
  ``start_up`` entry, computed in the same pass.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import startup
from harness.analysis.control import Control, UnitValues
from harness.analysis.facts import Facts
from harness.analysis.failover import TROUBLE_STATES
from harness.analysis.failover_verdict import FAULTS
from harness.analysis.frames import UnitKey, unit_key
from harness.kernel.events import Kind, Role

NAMES = ("session_failures", "session_failures_startup")
#: herdlab's broker's event when a member leaves the group, and the reason of a session expiry.
MEMBER_REMOVED, EXPIRED = "member_removed", "expired"


def unit_values(facts: Facts, control: Control) -> UnitValues:
    """Session failures of untargeted members per unit, and the start-up figures (see the module
    contract)."""
    marks = {unit_key(m): m for m in facts.rows("marks")}
    faults: dict[UnitKey, list[tuple[int, int]]] = {}
    for t in facts.rows("trigger"):
        if t["action"] in FAULTS and t["invoke"] is not None and t["wend"] is not None:
            faults.setdefault(unit_key(t), []).append((t["invoke"], t["wend"]))
    out: UnitValues = {}
    for k, rows in control.rows().items():
        m = marks.get(k) or {}
        stable, send = m.get("start"), m.get("end") if m.get("end") is not None else m.get("wend")
        targeted = {s for e in rows if e["kind"] == Kind.INVOKE for s in e["targets"] or []}
        # the coordinator expiring a member's session (herdlab's broker says which member id; the
        # member's own events map the id to its name): the one account every client gets, whether or
        # not its library reports failed heartbeats (kafka-python has no callback for them)
        names: dict[str, set[str | None]] = {}
        for e in rows:
            if e["role"] == Role.MEMBER and e["member"]:
                names.setdefault(e["member"], set()).add(e["source"])
        trouble: list[tuple[int, str | None]] = []
        for e in rows:
            if e["role"] == Role.MEMBER and (
                e["kind"] == Kind.HEARTBEAT_ERROR
                or (e["kind"] == Kind.ZK_STATE and e["state"] in TROUBLE_STATES)
            ):
                trouble.append((e["ts_ns"], e["source"]))
            elif e["role"] == Role.BROKER and e["kind"] == MEMBER_REMOVED and e["reason"] == EXPIRED:
                trouble.extend((e["ts_ns"], named) for named in names.get(e["member"], ()))
        counted = [
            ts
            for ts, source in trouble
            if ts is not None
            and send is not None
            and ts < send
            and source not in targeted
            and not any(a <= ts < b for a, b in faults.get(k, []))
        ]
        values = out.setdefault(k, {})
        if counted:
            values["session_failures"] = float(
                sum(1 for ts in counted if stable is not None and ts >= stable)
            )
            values["session_failures_startup"] = float(
                sum(1 for ts in counted if stable is not None and ts < stable)
            )
        values.update(startup.unit_values(rows))
    return {k: v for k, v in out.items() if v}


def health_fields(pu: dict[str, float]) -> dict[str, Any]:
    """``session_failures`` and ``session_failures_startup`` of a unit from its values ``pu``, its
    ``start_up`` entry (:func:`harness.analysis.startup.start_up_field`) and ``startup_stable_s`` (its
    ``stable_s``, the compared whole-unit metric; None without one)."""
    entry = startup.start_up_field(pu)
    return {
        **{name: int(pu.get(name) or 0) for name in NAMES},
        "start_up": entry,
        "startup_stable_s": entry.get("stable_s") if entry else None,
    }
