"""DescribeGroups v0-6, ListGroups v0-5, DeleteGroups v0-2 over every group type.

DescribeGroups of a group a type answers GROUP_ID_NOT_FOUND for (Kafka 4: a consumer group, "Group <id> is not a
classic group.") is that error with its message from v6, and Dead without error before (as Kafka 4 answers).

A group this broker does not coordinate (the routing) is NOT_COORDINATOR in DescribeGroups and DeleteGroups; the
others go to the type holding each group (:meth:`~coordinator.groups.types.GroupTypes.split`) and the answers
keep the request's order. ListGroups lists every type's groups whose type passes the request's ``types_filter``
(v5; none: all types), each tagged with its type's name (a group id is listed once, by the type holding it);
its error is the first type's error that is not NONE.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from coordinator.api_keys import ApiKey
from coordinator.context import RequestContext
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.groups.codec import NO_AUTH_OPS, kio_error
from coordinator.groups.routing import Routing
from coordinator.groups.types import GroupTypes
from coordinator.wire import ZERO_TD, make, nested, response_class

__all__ = ["DeleteGroupsApi", "DescribeGroupsApi", "ListGroupsApi"]


class DescribeGroupsApi:
    """The DescribeGroups handler."""

    def __init__(self, types: GroupTypes, routing: Routing) -> None:
        self.types = types
        self.routing = routing

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DESCRIBE_GROUPS, ctx.api_version)
        group_cls = nested(cls, "groups")
        member_cls = nested(group_cls, "members")
        mine = [gid for gid in req.groups if not self.routing.not_coordinator(gid)]
        described = {d.group_id: d for t, ids in self.types.split(mine) for d in t.describe_groups(ids)}
        groups = []
        for gid in req.groups:
            d = described.get(gid)
            if d is None:
                d = g.DescribedGroup(gid, ErrorCode.NOT_COORDINATOR, "")
            error, message = d.error, d.error_message
            if error == ErrorCode.GROUP_ID_NOT_FOUND and ctx.api_version < 6:
                # KafkaApis: before v6 a group that is not found (or not a classic group) is Dead without error
                error, message = ErrorCode.NONE, None
            groups.append(
                make(
                    group_cls,
                    error_code=kio_error(error),
                    error_message=message,
                    group_id=gid,
                    group_state=d.state,
                    protocol_type=d.protocol_type,
                    protocol_data=d.protocol,
                    authorized_operations=NO_AUTH_OPS,
                    members=tuple(
                        make(
                            member_cls,
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=m.metadata,
                            member_assignment=m.assignment,
                        )
                        for m in d.members
                    ),
                )
            )
        return make(cls, throttle_time=ZERO_TD, groups=tuple(groups))


class ListGroupsApi:
    """The ListGroups handler."""

    def __init__(self, types: GroupTypes) -> None:
        self.types = types

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.LIST_GROUPS, ctx.api_version)
        group_cls = nested(cls, "groups")
        types_filter = [t.lower() for t in getattr(req, "types_filter", ())]
        states: list[str] | None = list(getattr(req, "states_filter", ())) or None
        error = ErrorCode.NONE
        listed: list[Any] = []
        for t in self.types.types:
            r = t.list_groups(states)
            if error == ErrorCode.NONE:
                error = r.error
            if not types_filter or t.name in types_filter:
                listed.extend(
                    make(
                        group_cls,
                        group_id=x.group_id,
                        protocol_type=x.protocol_type,
                        group_state=x.state,
                        group_type=t.name,
                    )
                    for x in r.groups
                    if self.types.for_group(x.group_id) is t  # a group id one type took over from another
                )
        return make(cls, throttle_time=ZERO_TD, error_code=kio_error(error), groups=tuple(listed))


class DeleteGroupsApi:
    """The DeleteGroups handler."""

    def __init__(self, types: GroupTypes, routing: Routing) -> None:
        self.types = types
        self.routing = routing

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DELETE_GROUPS, ctx.api_version)
        result_cls = nested(cls, "results")
        names = list(req.groups_names)
        mine = [gid for gid in names if not self.routing.not_coordinator(gid)]

        def convert(results: list[g.DeleteGroupsResponse]) -> Any:
            errors = {d.group_id: d.error for r in results for d in r.results}
            return make(
                cls,
                throttle_time=ZERO_TD,
                results=tuple(
                    make(
                        result_cls,
                        group_id=gid,
                        error_code=kio_error(errors.get(gid, ErrorCode.NOT_COORDINATOR)),
                    )
                    for gid in names
                ),
            )

        parts = self.types.split(mine)
        if len(parts) == 1:  # one type answers, and its runner converts as it answers
            [(t, ids)] = parts
            return t.delete_groups(ids, lambda r: convert([r]))
        answers = [t.delete_groups(ids, _same) for t, ids in parts]
        if not any(inspect.isawaitable(a) for a in answers):
            return convert(answers)

        async def later() -> Any:
            return convert(list(await asyncio.gather(*answers)))

        return later()


def _same(r: g.DeleteGroupsResponse) -> g.DeleteGroupsResponse:
    return r
