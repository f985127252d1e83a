# pyright: strict
"""Short case labels for narrow output, and the legend that gives the full names once.

Contract
--------
A case's full label is its matrix parameters as ``key=value`` joined by commas
(``group.members=4``, ``cluster.broker=tansu,group.coordinator.client=kafka-python``), or ``default``.
:func:`short_labels` maps each full label of a run to a short one:

* only the keys whose value differs between the run's cases are shown (with one case: all of them);
  the others are stated once in the legend as the same in every case;
* a key is shown by its alias when it has one (:data:`ALIASES`: ``group.members`` is ``N``), else by
  its last dotted segment (``cluster.broker`` is ``broker``), widened to as many trailing segments as
  make it unique among the shown keys;
* the shown pairs are joined by a space (``N=4``, ``fenced_commits=False takeover_delay_ms=0``), so a
  narrow column wraps between them.

The legend (:attr:`CaseLabels.legend`) names each shortened key once (``N = group.members``) and the
keys left out; it is empty when no label changed. Cases without parameters in the document (an older
or hand-made one) have them read back from the label when every comma-separated part is
``key=value``; otherwise their label stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Short names of the matrix keys people read most, in place of their last segment.
ALIASES: Mapping[str, str] = {"group.members": "N", "group.partitions": "P"}


@dataclass(frozen=True)
class CaseLabels:
    """Short labels by full label, and the legend lines that explain them."""

    short: dict[str, str] = field(default_factory=lambda: {})
    legend: list[str] = field(default_factory=lambda: [])

    def __call__(self, label: str) -> str:
        """The short label of ``label`` (``label`` itself when the run has none for it)."""
        return self.short.get(label, label)


def _params(case: Mapping[str, Any]) -> dict[str, str] | None:
    """The case's parameters as strings (as its label prints them), or None when unknown."""
    params = case.get("params")
    if isinstance(params, Mapping):
        return {str(k): str(v) for k, v in params.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    label = str(case.get("label") or "")
    parts = label.split(",") if label and label != "default" else []
    if parts and all("=" in p for p in parts):
        return dict(p.split("=", 1) for p in parts)  # pyright: ignore[reportReturnType]
    return None


def _clashes(key: str, n: int, keys: Sequence[str]) -> bool:
    """Whether ``key``'s last ``n`` segments name another of ``keys`` too (its alias or its segments)."""
    tail = key.split(".")[-n:]
    return any(ALIASES.get(o) == ".".join(tail) or o.split(".")[-n:] == tail for o in keys if o != key)


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each key's short name: its alias, else the fewest trailing dotted segments unique among ``keys``."""
    out: dict[str, str] = {}
    for k in keys:
        if k in ALIASES:
            out[k] = ALIASES[k]
            continue
        segments = k.split(".")
        n = 1
        while n < len(segments) and _clashes(k, n, keys):
            n += 1
        out[k] = ".".join(segments[-n:])
    return out


def short_labels(cases: Sequence[Mapping[str, Any]]) -> CaseLabels:
    """The run's short case labels and their legend (see the module contract). ``cases`` are the
    metrics document's ``cases`` entries (``label`` and, when known, ``params``)."""
    known: list[tuple[str, dict[str, str]]] = []
    for c in cases:
        p = _params(c)
        if p is not None and c.get("label"):
            known.append((str(c["label"]), p))
    if not known:
        return CaseLabels()
    keys: list[str] = []
    for _, p in known:
        keys += [k for k in p if k not in keys]
    varying = [k for k in keys if len({p.get(k) for _, p in known}) > 1] if len(known) > 1 else keys
    names = short_names(varying)
    short = {label: " ".join(f"{names[k]}={p[k]}" for k in varying if k in p) or label for label, p in known}
    if all(s == label for label, s in short.items()):
        return CaseLabels(short=short)
    legend: list[str] = []
    renamed = [f"{names[k]} = {k}" for k in varying if names[k] != k]
    if renamed:
        legend.append("case keys: " + ", ".join(renamed))
    same = [k for k in keys if k not in varying]
    if same:
        first = known[0][1]
        legend.append("every case: " + ", ".join(f"{k}={first[k]}" for k in same if k in first))
    return CaseLabels(short=short, legend=legend)
