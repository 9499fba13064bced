"""A layer-4 connection's route (``route.streams.select_stream``, Gateway API TLSRoute,
TCPRoute, UDPRoute): the listener by server name, the route host, the backends by weight, and
the exact reason when there is none."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from coxswain.compile.snapshot import (
    Backend,
    GatewayRule,
    ListenerTable,
    RouteAction,
    RouteMatch,
    RouteRef,
)
from coxswain.route.gateway import index_gateway_port
from coxswain.route.streams import StreamDecision, select_stream

EVERY = RouteMatch(path_type="PathPrefix", path="/")


def action(name: str, *weights: int) -> RouteAction:
    backends = pvector(
        Backend(namespace="apps", service=f"{name}-{i}", port=443, weight=w)
        for i, w in enumerate(weights)
    )
    return RouteAction(route=RouteRef("TLSRoute", "apps", name, "spec.rules[0]"), backends=backends)


def table(hostname: str, hosts: dict[str, RouteAction]) -> ListenerTable:
    return ListenerTable(
        gateway="apps/gw",
        listener=hostname,
        port=443,
        protocol="TLS",
        hostname=hostname,
        hosts=pmap({h: pvector([GatewayRule(match=EVERY, action=a)]) for h, a in hosts.items()}),
    )


EXACT = table("a.example.com", {"a.example.com": action("exact", 1)})
WILD = table("*.example.com", {"*.example.com": action("wild", 1), "b.example.com": action("b", 1)})
ANY = table("*", {"*": action("any", 1)})


def test_no_index_is_no_listener_on_the_port() -> None:
    assert select_stream(None, "a.example.com") == StreamDecision(
        None, None, "no listener is served on this port"
    )


@given(sni=st.sampled_from([None, "", "c.other.org"]))
def test_no_listener_for_the_server_name_says_which(sni: str | None) -> None:
    found = select_stream(index_gateway_port({"a.example.com": EXACT}), sni)
    wanted = f"server name {sni!r}" if sni else "a client without a server name"
    assert found == StreamDecision(None, None, f"no listener of this port takes {wanted}")


@given(sni=st.sampled_from([None, "", "c.example.com"]))
@example(sni=None)
@example(sni="c.example.com")
def test_no_route_host_of_the_listener_says_which(sni: str | None) -> None:
    empty = table("*", {"b.example.com": action("b", 1)})
    found = select_stream(index_gateway_port({"*": empty}), sni)
    wanted = f"server name {sni!r}" if sni else "clients without a server name"
    assert found == StreamDecision(empty, None, f"no route of the listener takes {wanted}")


def test_the_most_specific_listener_then_route_host() -> None:
    index = index_gateway_port({"a.example.com": EXACT, "*.example.com": WILD, "*": ANY})
    assert select_stream(index, "a.example.com").action == EXACT.hosts["a.example.com"][0].action
    assert select_stream(index, "b.example.com").action == WILD.hosts["b.example.com"][0].action
    assert select_stream(index, "c.example.com").action == WILD.hosts["*.example.com"][0].action
    # TCP and UDP, and TLS without a server name: the catch-all listener and route host
    assert select_stream(index, None).action == ANY.hosts["*"][0].action
    assert select_stream(index, "").action == ANY.hosts["*"][0].action
    assert select_stream(index, None).label == "TLSRoute apps/any"
    assert select_stream(index, None).table is ANY


@given(weights=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=4))
@example(weights=[0, 1, 2])
def test_backends_weighted_zero_are_left_out(weights: list[int]) -> None:
    routed = action("any", *weights)
    found = select_stream(index_gateway_port({"*": table("*", {"*": routed})}), None)
    kept = tuple(b for b in routed.backends if b.weight >= 1)
    assert found == StreamDecision(
        found.table, routed, "", kept, tuple(w for w in weights if w >= 1)
    )
    assert found.table is not None
    assert found.table.hostname == "*"
