"""The Gateway API v1.6.1 conformance sweep (docs/quality.md): the GATEWAY-HTTP profile, the
GATEWAY-GRPC profile, its calls over h2c to the stand-in of upstream's gRPC echo
(:mod:`.echo_grpc`), and the GATEWAY-TLS, GATEWAY-TCP and GATEWAY-UDP scenarios, their traffic
through the proxy's layer-4 listeners to the stand-ins of upstream's TCP, UDP and DNS pods
(:mod:`.echo_l4`).

One test per upstream test (``scenarios/<ShortName>.yaml``): its manifests compiled by the
real compiler (:mod:`.world`), the status it expects checked on the compiler's status, its
requests sent through the real proxy, in this process, to local echo backends. Scenarios of
features Coxswain does not declare, or needing what it does not have, are skipped with the
reason; those it gets wrong are strict xfails naming the bug.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import pytest

from coxswain.compile.gateway.status import supported_features
from tests.conformance.certificates import server_context
from tests.conformance.echo_l4 import serve_scenario_echo
from tests.conformance.scenario import Scenario, read_scenarios
from tests.conformance.steps import Session
from tests.conformance.world import band_port, load_world, scenario_config
from tests.integration.proxy_harness import Running, run_proxy, write_snapshot

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conformance.world import Compiled


def _params() -> list[object]:
    params = []
    for scenario in read_scenarios():
        marks = []
        declared = supported_features(scenario_config(scenario.config))
        missing = sorted(set(scenario.features) - set(declared))
        if scenario.skip:
            marks.append(pytest.mark.skip(reason=scenario.skip))
        elif missing:
            marks.append(pytest.mark.skip(reason=f"supportedFeatures lacks {missing}"))
        elif scenario.xfail:
            marks.append(pytest.mark.xfail(reason=scenario.xfail, strict=True))
        params.append(pytest.param(scenario, id=scenario.name, marks=marks))
    return params


@pytest.mark.parametrize("scenario", _params())
def test_conformance(scenario: Scenario, tmp_path: Path) -> None:
    """Run the scenario's steps; fail with every expectation it does not meet."""
    world = load_world(list(scenario.manifests), scenario.fill, scenario_config(scenario.config))
    file = tmp_path / "snapshot.json"
    echo_ports: dict[str, int] = {}
    vip_ports: dict[tuple[str, int], int] = {}
    compiled: list[Compiled] = []

    def compile_world() -> Compiled:
        """Compile, each listener port of a Gateway given an internal port the first time it
        appears, as the controller adds it to the Gateway's VIP Service."""
        for pair in world.listener_ports() - vip_ports.keys():
            vip_ports[pair] = band_port()
        compiled.append(world.compile(echo_ports, vip_ports))
        return compiled[-1]

    def make_snapshot(ports: dict[str, int]) -> dict[str, object]:
        echo_ports.update((key, ports[key]) for key in world.echoes)
        return compile_world().snapshot

    def client(running: Running) -> None:
        def recompile() -> Compiled:
            compile_world()
            write_snapshot(file, compiled[-1].snapshot)
            running.wait_applies(len(compiled))
            return compiled[-1]

        session = Session(world, compiled[0], running, recompile)
        session.run(scenario.steps)
        assert not session.failures, "\n".join([scenario.upstream, *session.failures])

    run_proxy(
        tmp_path,
        make_snapshot,
        client,
        backends=tuple(world.echoes),
        tls_backends={key: server_context(*serving) for key, serving in world.tls.items()},
        echo=partial(serve_scenario_echo, world.echoes),
    )
