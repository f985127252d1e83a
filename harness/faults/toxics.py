# pyright: strict
"""Degraded-network faults of the fault proxies, named as toxiproxy names its toxics.

Contract
--------
A :class:`Toxic` is one degradation of one direction (``stream``) of every connection through a proxy
(:meth:`harness.faults.proxy.TcpProxy.add_toxic`); ``upstream`` is client -> server (a member's requests),
``downstream`` server -> client (toxiproxy's default), ``both`` either. Kinds and attributes (toxiproxy's
names and units; https://github.com/Shopify/toxiproxy#toxics):

==============  ======================  ==============================================================
kind            attributes              effect while the toxic is on
==============  ======================  ==============================================================
``latency``     ``latency``, ``jitter``  each chunk is delivered ``latency`` ms +- a uniform draw of up to
                (ms)                    ``jitter`` ms after it arrived (order kept)
``bandwidth``   ``rate`` (KB/s, 1 KB =  delivery paced at ``rate`` * 1000 bytes per second
                1000 bytes)
``reset_peer``  ``timeout`` (ms)        each connection is reset (TCP RST to both ends) ``timeout`` ms
                                        after the toxic was added or the connection opened, if later
``slow_close``  ``delay`` (ms)          an end-of-stream is passed on ``delay`` ms late
``timeout``     ``timeout`` (ms)        data is dropped; each connection is closed ``timeout`` ms after
                                        the toxic was added or it opened (0: never closed)
``limit_data``  ``bytes``               each connection is closed once ``bytes`` bytes went through it
                                        in the stream since the toxic was added
==============  ======================  ==============================================================

A proxy holds at most one toxic per kind (adding one again replaces it); removing a toxic stops its
effect for data not yet delivered and cancels its pending resets and closes. Pure data: no I/O here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from harness.kernel.actions import TOXIC_ACTIONS

#: The toxic kinds (toxiproxy's names; the action registry's toxic actions), and the streams a toxic can
#: act on.
TOXICS = TOXIC_ACTIONS
STREAMS = ("upstream", "downstream", "both")
#: Each kind's attributes (toxiproxy's names).
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "latency": ("latency", "jitter"),
    "bandwidth": ("rate",),
    "reset_peer": ("timeout",),
    "slow_close": ("delay",),
    "timeout": ("timeout",),
    "limit_data": ("bytes",),
}


@dataclass(frozen=True)
class Toxic:
    """One toxic (see the module contract). Attributes not of ``kind`` must stay 0; ``ValueError``
    for an unknown kind or stream, a negative attribute, a jitter above the latency, or a zero rate."""

    kind: str
    stream: str = "downstream"
    latency: int = 0
    jitter: int = 0
    rate: int = 0
    timeout: int = 0
    delay: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        if self.kind not in TOXICS:
            raise ValueError(f"unknown toxic {self.kind!r} (one of {', '.join(TOXICS)})")
        if self.stream not in STREAMS:
            raise ValueError(f"unknown stream {self.stream!r} (one of {', '.join(STREAMS)})")
        own = ATTRIBUTES[self.kind]
        for name in ("latency", "jitter", "rate", "timeout", "delay", "bytes"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{self.kind}: {name} cannot be negative")
            if value and name not in own:
                raise ValueError(f"{self.kind} has no attribute {name!r} (it has {', '.join(own)})")
        if self.jitter > self.latency:
            raise ValueError("latency: jitter cannot exceed latency")
        if self.kind == "bandwidth" and self.rate <= 0:
            raise ValueError("bandwidth: rate must be positive (KB/s)")

    def acts_on(self, upstream: bool) -> bool:
        """Whether the toxic acts on the upstream (client -> server) or downstream direction."""
        return self.stream == "both" or self.stream == ("upstream" if upstream else "downstream")

    @property
    def attributes(self) -> dict[str, Any]:
        """The kind's attributes and the stream, as recorded in the history (``toxic`` field)."""
        return {
            "kind": self.kind,
            "stream": self.stream,
            **{a: getattr(self, a) for a in ATTRIBUTES[self.kind]},
        }

    def delay_s(self, rng: random.Random) -> float:
        """A latency toxic's delay of one chunk in seconds (``latency`` +- up to ``jitter`` ms)."""
        jitter = rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        return max(0.0, self.latency + jitter) / 1000.0

    @property
    def bytes_per_s(self) -> float:
        """A bandwidth toxic's rate in bytes per second."""
        return self.rate * 1000.0


def toxic_from(fields: dict[str, Any]) -> Toxic:
    """A :class:`Toxic` from recorded ``attributes`` (``kind``, ``stream`` and the kind's attributes)."""
    return Toxic(**fields)
