"""compile.api: ``analyse`` compiles its routes through the ``cache`` it is handed
(``gateway.route_kinds.RouteCache``), so that a memo remembers them between compiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.compile import CompileConfig, build_state
from coxswain.compile.api import analyse
from coxswain.compile.gateway.route_kinds import compile_any_route
from tests.integration.manifests import gateway, gateway_class, http_route

if TYPE_CHECKING:
    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.gateway.route_rules import CompiledRoute
    from coxswain.compile.model.gateway_objects import CommonRoute


class _Recorder:
    """A ``RouteCache`` that compiles each route as asked and keeps the names it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def route(self, route: CommonRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
        self.asked.append(route.meta.key.name)
        return compile_any_route(route, services, grants)


def test_analyse_compiles_its_routes_through_the_cache() -> None:
    state = build_state(
        [
            gateway_class(),
            gateway("east", 82),
            http_route("r1", "east", "svc1"),
            http_route("r2", "east", "svc2"),
        ]
    )
    recorder = _Recorder()
    assert analyse(state, CompileConfig(), recorder) == analyse(state, CompileConfig())
    assert sorted(recorder.asked) == ["r1", "r2"]
