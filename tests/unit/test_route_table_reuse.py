"""A snapshot indexed after a change, reusing the previous index (``build_table(previous=)``),
is indexed exactly as from scratch; only the route hosts whose rules changed are indexed
again, the others are the previous entries."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pyrsistent import pmap, pvector

from coxswain.compile import CompileConfig, SharedPool, build_state
from coxswain.compile.model.state import Upserted, apply
from coxswain.route import build_table
from coxswain.shell.publisher import Publisher
from tests.integration.manifests import backend, gateway, gateway_class, http_route

if TYPE_CHECKING:
    from coxswain.route.gateway import HostRules
    from coxswain.route.table import RouteTable


def _world(header: bool) -> list[dict[str, Any]]:
    edited = http_route("b", "web", "echo", hostnames=["b.example"])
    if header:
        edited["spec"]["rules"][0]["matches"] = [{"headers": [{"name": "x-v", "value": "2"}]}]
    return [
        gateway_class(),
        gateway("web", 80),
        *backend("echo", 8080),
        http_route("a", "web", "echo", hostnames=["a.example"]),
        edited,
        http_route("c", "web", "echo", hostnames=["*.c.example"]),
    ]


def _hosts(table: RouteTable) -> dict[tuple[int, str, str], HostRules]:
    found = {}
    for port, index in table.gateway_ports.items():
        for listener in index.listeners():
            named = [*listener.exact.items()]
            named += [(f"*.{suffix}", rules) for suffix, rules in listener.wildcard.items()]
            named += [("*", listener.any_host)] if listener.any_host is not None else []
            for host, rules in named:
                found[port, listener.table.hostname, host] = rules
    return found


def _form(rules: HostRules) -> object:
    return (
        list(rules.rules),
        rules.exact,
        [rule for _, rule in rules.regex],
        rules.prefix,
        sorted(rules.patterns),
        rules.ranks,
        rules.reads_headers,
    )


def test_an_index_built_on_the_previous_one_equals_a_fresh_one_and_reuses_unchanged_hosts() -> None:
    publisher = Publisher(CompileConfig())
    state = build_state(_world(header=False))
    before = publisher.compile(state)[SharedPool()]
    edited = build_state(_world(header=True))
    [key] = [key for key in edited.httproutes if key.name == "b"]
    state = apply(state, Upserted(edited.httproutes[key]))  # as serve and the controller do
    after = publisher.compile(state)[SharedPool()]
    previous = build_table(before)
    reused = _hosts(build_table(after, previous=previous))
    fresh = _hosts(build_table(after))
    assert {key: _form(rules) for key, rules in reused.items()} == {
        key: _form(rules) for key, rules in fresh.items()
    }
    old = _hosts(previous)
    same = {key[2] for key, rules in reused.items() if old.get(key) is rules}
    assert same == {"a.example", "*.c.example"}
    assert any(rules.reads_headers for rules in reused.values())


def test_a_host_whose_rules_grew_after_the_same_first_ones_is_indexed_again() -> None:
    publisher = Publisher(CompileConfig())
    state = build_state(_world(header=False))
    before = publisher.compile(state)[SharedPool()]
    added = build_state([http_route("a2", "web", "echo", hostnames=["a.example"])])
    [route] = added.httproutes.values()
    state = apply(state, Upserted(route))
    after = publisher.compile(state)[SharedPool()]
    reused = _hosts(build_table(after, previous=build_table(before)))
    fresh = _hosts(build_table(after))
    assert {key: _form(rules) for key, rules in reused.items()} == {
        key: _form(rules) for key, rules in fresh.items()
    }
    assert [len(rules.rules) for key, rules in reused.items() if key[2] == "a.example"] == [2]


def test_a_host_whose_rules_are_a_new_vector_of_the_same_rules_keeps_its_index() -> None:
    before = Publisher(CompileConfig()).compile(build_state(_world(header=False)))[SharedPool()]
    copied = dataclasses.replace(
        before,
        gateways=pmap(
            {
                port: pmap(
                    {
                        name: dataclasses.replace(
                            table,
                            hosts=pmap({h: pvector(list(r)) for h, r in table.hosts.items()}),
                        )
                        for name, table in tables.items()
                    }
                )
                for port, tables in before.gateways.items()
            }
        ),
    )
    previous = build_table(before)
    old = _hosts(previous)
    reused = _hosts(build_table(copied, previous=previous))
    assert sorted(key[2] for key, rules in reused.items() if old.get(key) is rules) == [
        "*.c.example",
        "a.example",
        "b.example",
    ]
