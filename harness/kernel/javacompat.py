"""Java semantics that Kafka's Scala/Java code relies on and a Python port must reproduce.

* :func:`java_string_hashcode`: ``String.hashCode`` — sum of UTF-16 code units times 31^(n-1-i) in
  32-bit wrapping arithmetic, returned signed. Used by FindCoordinator's ``partitionFor`` and by the
  0.8.2 round-robin assignor's partition order.
* :func:`java_abs`: Kafka's ``Utils.abs``, which maps ``Integer.MIN_VALUE`` to 0.
"""

from __future__ import annotations

_INT_MIN = -(2**31)


def java_string_hashcode(s: str) -> int:
    """Java's ``s.hashCode()`` as a signed 32-bit int (``"Hello"`` -> 69609650)."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka ``Utils.abs``: ``abs(n)``, except 0 for ``Integer.MIN_VALUE``."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``partitionFor(groupId)``: ``Utils.abs(groupId.hashCode) % partitions``."""
    return java_abs(java_string_hashcode(key)) % partitions
