"""The route kinds the Gateway API passes compile, in one registry, and the cache seam they go
through (docs/architecture.md, "Rules of the core").

A route kind plugs in with a few lines, and incremental compilation (``compile.memo``) then
serves it like the others:

1. its decoded type carries ``meta`` and ``parent_refs`` (``CommonRoute``) and lives in a
   ``ClusterState`` table (``model.state.TABLES`` names the field for its kind);
2. its compiler has the signature ``RouteCompiler``: a pure function of the route, the Service
   view (``backends.ServiceIndex``) and the ReferenceGrants (``refgrants.Grants``) that reads
   nothing else. The memo records every ``ServiceIndex`` and ``Grants`` call a compile makes
   and reuses the result while the route is the same object and every recorded call answers
   the same, so a compiler that reads anything else would be reused wrongly: pass it in
   through those two views instead;
3. one entry in ``ROUTE_COMPILERS`` below, keyed by the kind.

A kind attaches to listeners through ``attach.attach_route`` by its ``parent_refs``;
``model.state`` indexes those (``routes_by_parent``) for the scopes that read one Gateway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

from coxswain.compile.gateway.grpcroute import compile_grpc_route
from coxswain.compile.gateway.httproute import compile_route
from coxswain.compile.gateway.l4route import compile_stream_route

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.gateway.route_rules import CompiledRoute
    from coxswain.compile.model.gateway_objects import CommonRoute

    RouteCompiler = Callable[[Any, ServiceIndex, Grants], CompiledRoute]

__all__ = ["ROUTE_COMPILERS", "RouteCache", "compile_any_route"]

ROUTE_COMPILERS: Final[Mapping[str, RouteCompiler]] = {
    "HTTPRoute": compile_route,
    "GRPCRoute": compile_grpc_route,
    "TLSRoute": compile_stream_route,
    "TCPRoute": compile_stream_route,
    "UDPRoute": compile_stream_route,
}
"""Kind → its compiler (the module docstring says what a compiler may read)."""


class RouteCache(Protocol):
    """Where compiled routes may be remembered between compiles (``compile.memo.CompileMemo``);
    the answer must be what ``compile_any_route`` would give."""

    def route(self, route: CommonRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
        """The compiled ``route``."""
        ...


def compile_any_route(route: CommonRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
    """Compile a route of any registered kind. Pure."""
    return ROUTE_COMPILERS[route.meta.key.kind](route, services, grants)
