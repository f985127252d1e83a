"""Steady-state traffic: per unit, from ``stable`` to ``settling_end``, as a rate per second.

Contract
--------
* :func:`unit_values`: per unit, from its collected control events (:mod:`.control`) and the fold's
  marks: ``steady_window_ns`` (settling_end,
  else the unit's last event, minus stable), ``zk_commits`` (legacy members' offset writes to
  ZooKeeper in that window; counted by the ZooKeeper tap in a unit that ran with one, as the herd is) and ``broker:<api>`` (the broker's counter reports in that window of
  every API that is not a coordination API: Heartbeat, OffsetCommit, Fetch, Produce ...); for a unit
  with ConsumerGroupHeartbeat exchanges (the broker's ``group_request`` events of that API, herdlab's
  broker's or the Kafka tap's), ``heartbeat_exchanges`` (all of them in that window),
  ``steady_heartbeats`` (those whose ``change`` is not true: :func:`.herd.steady_heartbeat`) and
  ``member_s`` (the window's member-seconds: the sum over members of their live intervals, the fold's
  ``live`` facts, clipped to the window).
* :func:`steady_fields`: the unit's ``steady`` entry in the metrics document: ``window_s`` and the
  rates ``zk_commits_per_s`` (None without a window) and ``broker_per_s`` (by API); for a unit with
  ConsumerGroupHeartbeat exchanges also ``heartbeats`` (steady_heartbeats) and
  ``heartbeats_per_member_s`` (steady_heartbeats / member_s; None without member-seconds). Units without
  exchanges have neither key: not measured.

Steady-state traffic is never part of the herd (:mod:`.herd`).
"""

from __future__ import annotations

from typing import Any

from harness.analysis.control import Control, UnitValues
from harness.analysis.facts import Facts
from harness.analysis.frames import INF, unit_key
from harness.analysis.herd import CONSUMER_HEARTBEAT, steady_heartbeat
from harness.kernel.events import COORDINATION_APIS, Kind, Role, zk_counter, zk_steady


def unit_values(facts: Facts, control: Control) -> UnitValues:
    """The steady phase's length and traffic per unit (see the module contract; a value that cannot be
    had, a window without ``stable``, is absent)."""
    marks = {unit_key(m): m for m in facts.rows("marks")}
    live: dict[Any, list[dict[str, Any]]] = {}
    for r in facts.rows("live"):
        live.setdefault(unit_key(r), []).append(r)
    out: UnitValues = {}
    for k, rows in control.rows().items():
        zk_role = zk_counter(e["role"] for e in rows)
        m = marks.get(k) or {}
        stable, send = m.get("start"), m.get("end") if m.get("end") is not None else m.get("wend")
        values: dict[str, float] = {}
        if stable is not None and send is not None:
            values["steady_window_ns"] = float(send - stable)
        zk_commits = 0
        exchanges = steady_hb = 0
        broker: dict[str, float] = {}
        for e in rows if stable is not None and send is not None else []:
            if e["ts_ns"] is None or not stable <= e["ts_ns"] < send:
                continue
            if e["role"] == zk_role and e["kind"] == Kind.ZK_REQUEST and zk_steady(e["op"], e["path"]):
                zk_commits += (
                    1 if e["count"] is None else e["count"]
                )  # a simulated zk_request stands for `count`
            elif (
                e["role"] == Role.BROKER
                and e["kind"] == Kind.GROUP_REQUEST
                and e["api"] == CONSUMER_HEARTBEAT
            ):
                exchanges += 1
                steady_hb += steady_heartbeat(e)
            elif e["role"] == Role.BROKER and e["kind"] == Kind.BROKER_REQUEST:
                for api, n in (e["requests"] or {}).items():
                    if api not in COORDINATION_APIS and n is not None:
                        broker[api] = broker.get(api, 0.0) + n
        values["zk_commits"] = float(zk_commits)
        if exchanges and stable is not None and send is not None:
            values["heartbeat_exchanges"] = float(exchanges)
            values["steady_heartbeats"] = float(steady_hb)
            values["member_s"] = (
                sum(
                    max(0, min(send, INF if r["end"] is None else r["end"]) - max(stable, r["start"]))
                    for r in live.get(k, [])
                )
                / 1e9
            )
        values.update({f"broker:{api}": n for api, n in broker.items()})
        out[k] = values
    return out


def steady_fields(pu: dict[str, float]) -> dict[str, Any]:
    """The ``steady`` entry of a unit from its values ``pu`` (see :func:`unit_values`)."""
    window_ns = pu.get("steady_window_ns") or 0.0
    per_s = 1e9 / window_ns if window_ns > 0 else None
    out: dict[str, Any] = {
        "window_s": round(window_ns / 1e9, 3),
        "zk_commits_per_s": round(pu.get("zk_commits", 0.0) * per_s, 3) if per_s else None,
        "broker_per_s": {
            key.split(":", 1)[1]: round(v * per_s, 3)
            for key, v in sorted(pu.items())
            if key.startswith("broker:") and per_s
        },
    }
    if pu.get("heartbeat_exchanges"):
        member_s = pu.get("member_s") or 0.0
        beats = pu.get("steady_heartbeats") or 0.0
        out["heartbeats"] = int(beats)
        out["heartbeats_per_member_s"] = round(beats / member_s, 6) if member_s > 0 else None
    return out
