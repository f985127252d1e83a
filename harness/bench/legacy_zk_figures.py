"""The figures of ``herdlab bench legacy_zk``: the PySpark checker's, per trigger, beside the analytic
model, and their printing (see :mod:`harness.bench.legacy_zk` for the contract).

Nothing is counted here: :func:`figures` reads one trigger of the checker's metrics document
(``metrics.json``: :func:`harness.analysis.herd.herd_fields` and
:func:`harness.analysis.latency.window_fields` of its trigger window) and puts
:func:`legacy_zk.model.herd_model` of the members live at its invoke beside it; :func:`format_size`
prints one group size's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.errors import HerdlabError
from legacy_zk.model import CHANGES, HerdModel, herd_model

__all__ = ["BROKERS", "ChangeFigures", "deviation", "figures", "format_size", "unit_figures"]

BROKERS = 1  # the bench registers one 0.8 broker: B of the model


@dataclass(frozen=True)
class ChangeFigures:
    """One trigger of one group size: the checker's figures of its window, and the model of it.

    Counts are None for a trigger the checker did not measure (skipped); ``latency_s`` is None
    unless it settled, ``first_notification_s`` without a watch, the packets without mntr samples.
    """

    action: str
    targets: tuple[str, ...]
    outcome: str
    members_before: int
    partitions: int
    latency_s: float | None
    first_notification_s: float | None
    watches: int | None
    zk_requests: int | None
    by_op: dict[str, int] = field(default_factory=dict)
    owner_writes: int | None = None
    registration_reads: int | None = None
    conflicts: int | None = None
    failed_attempts: int | None = None
    gave_up: int | None = None
    rebalance_attempts: int | None = None
    rebalancing_members: int | None = None
    packets: int | None = None
    packets_minus_idle: int | None = None
    model: HerdModel | None = None


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def figures(t: Mapping[str, Any], brokers: int = BROKERS) -> ChangeFigures:
    """One trigger of the metrics document's ``units[].triggers`` and the model of its change (None
    for an action the model does not know, or when the checker found no members at the invoke)."""
    action = str(t.get("action"))
    members = _int(t.get("members_at_invoke"))
    partitions = _int(t.get("partitions_at_invoke"))
    model = None
    if (
        action in CHANGES
        and members is not None
        and partitions is not None
        and (action == "join" or members >= 1)
    ):
        model = herd_model(action, members, brokers, partitions)
    return ChangeFigures(
        action=action,
        targets=tuple(str(x) for x in t.get("targets") or []),
        outcome=str(t.get("outcome")),
        members_before=int(members or 0),
        partitions=int(partitions or 0),
        latency_s=t.get("latency_s"),
        first_notification_s=t.get("first_notification_s"),
        watches=t.get("watches"),
        zk_requests=t.get("zk_requests"),
        by_op=dict(t.get("zk_requests_by_op") or {}),
        owner_writes=t.get("owner_writes"),
        registration_reads=t.get("registration_reads"),
        conflicts=t.get("conflicts"),
        failed_attempts=t.get("failed_attempts"),
        gave_up=t.get("gave_up"),
        rebalance_attempts=t.get("rebalance_attempts"),
        rebalancing_members=t.get("rebalancing_members"),
        packets=t.get("zk_packets"),
        packets_minus_idle=t.get("zk_packets_minus_idle"),
        model=model,
    )


def unit_figures(metrics: Mapping[str, Any], case: str, brokers: int = BROKERS) -> list[ChangeFigures]:
    """Every trigger of the unit of ``case`` in the metrics document, in the checker's order (by t0).
    Raises HerdlabError when the document has no such unit."""
    units = [u for u in metrics.get("units") or [] if u.get("case") == case]
    if not units:
        raise HerdlabError(f"the checker's metrics have no unit {case!r}")
    return [figures(t, brokers) for t in units[0].get("triggers") or []]


# -- printing -----------------------------------------------------------------------------------------
def deviation(measured: int, model: int) -> str:
    """``measured - model`` and its share of the model: ``+2 (+0.7%)``."""
    d = measured - model
    pct = f"{100.0 * d / model:+.1f}%" if model else "n/a"
    return f"{d:+d} ({pct})"


def _cell(measured: int | None, model: int | None) -> str:
    if measured is None:
        return "-"
    if model is None:
        return str(measured)
    return f"{measured} ({model}) {deviation(measured, model)}"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _s0(v: int | None) -> str:
    return "-" if v is None else str(v)


def format_size(n: int, changes: list[ChangeFigures], window_s: float) -> str:
    """One Markdown table of a group size: per change the measurement, the model and the deviation."""
    lines = [
        f"\nN = {n}: {n} members, {n} partitions, B = {BROKERS} broker (coordination-only members), "
        f"W = {window_s:g} s; cells: measured (model) measured - model (%)\n",
        "| change | outcome | latency s | 1st notification s | notifications | zk requests | owner writes "
        "| registration reads | packets recv (-idle) | conflicts | failed attempts | gave up "
        "| rebalancing members |",
        "|" + "---|" * 13,
    ]
    for c in changes:
        m = c.model
        packets = "-" if c.packets is None else f"{c.packets} ({_s0(c.packets_minus_idle)})"
        lines.append(
            f"| {c.action} | {c.outcome} | {_s(c.latency_s)} | {_s(c.first_notification_s)} "
            f"| {_cell(c.watches, m and m.notifications)} | {_cell(c.zk_requests, m and m.zk_requests)} "
            f"| {_cell(c.owner_writes, m and m.owner_writes)} "
            f"| {_cell(c.registration_reads, m and m.registration_reads)} | {packets} | {_s0(c.conflicts)} "
            f"| {_s0(c.failed_attempts)} | {_s0(c.gave_up)} | {_s0(c.rebalancing_members)} |"
        )
    return "\n".join(lines)
