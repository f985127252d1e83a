"""What every coordinator member adapter is, whatever its client library: the interface the registry
(:mod:`harness.members.clients.registry`) hands out and the adapters implement (they import it from here,
the registry imports them).

* :class:`ClientMember`: :meth:`~ClientMember.run` joins and consumes until :meth:`~ClientMember.stop`
  (``clean``: commit what the policy says and leave the group as the client does on close; otherwise just
  return); :attr:`~ClientMember.stopping` says whether stop was called; :meth:`~ClientMember.stall`
  stops its processing (no poll) while its client's heartbeat goes on, or ends that stall
  (:class:`harness.members.template.MemberTemplate`).
* :data:`OnChange`: ``on_change(what, partitions, generation)``, called after each assignment change.
* :class:`MemberFatal`: what :meth:`~ClientMember.run` raises when the client (or a member's child
  process) ended the member with a fatal error it recorded: the command prints it as one line (exit
  status 1), not as a defect's traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

OnChange = Callable[[str, list[int], int], None]


class MemberFatal(RuntimeError):
    """The member was ended by a fatal error of its client, recorded (the message names it)."""


class ClientMember(Protocol):
    """One group member on one client library (see the module contract)."""

    def run(self) -> None: ...

    def stop(self, clean: bool = True) -> None: ...

    def stall(self, on: bool) -> None: ...

    @property
    def stopping(self) -> bool: ...
