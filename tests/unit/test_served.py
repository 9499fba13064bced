"""``shell.dataplane.served.Served``: the routing memo and the header edits converted once per
snapshot."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyrsistent import pvector

from coxswain.compile.snapshot import HeaderEdits
from coxswain.compile.snapshot_read import snapshot_from_data
from coxswain.http1 import RequestHead
from coxswain.route.decision import Decision
from coxswain.shell.dataplane import served as served_module
from coxswain.shell.dataplane.served import Routed, Served
from tests.integration.proxy_harness import backend, gateway_rule, ingress_path, snapshot

INGRESS_PORT, GATEWAY_PORT = 8080, 9000


def served(data: dict[str, Any]) -> Served:
    return Served(snapshot_from_data(data), ingress_http_port=INGRESS_PORT, ingress_https_port=8443)


def head(
    target: bytes, *, host: bytes = b"a.example.com", headers: tuple[Any, ...] = ()
) -> RequestHead:
    return RequestHead(
        method=b"GET",
        target=target,
        http_version=b"1.1",
        headers=((b"host", host), *headers),
        host=host,
        connection=(),
        keep_alive=True,
        content_length=None,
        chunked=False,
        expect_continue=False,
        upgrade=None,
    )


def ingress_snapshot() -> Served:
    return served(
        snapshot(hosts={"a.example.com": [ingress_path("one", "/")]}, endpoints={"one": [1]})
    )


def test_a_decision_is_made_once_per_key_and_carries_its_log_and_metric_labels() -> None:
    table = ingress_snapshot()
    first = table.route(INGRESS_PORT, head(b"/x"), tls=False, sni=None)
    assert table.route(INGRESS_PORT, head(b"/x"), tls=False, sni=None) is first
    assert first.decision.status is None
    assert first.label == "Ingress app/one spec.rules[0]"
    assert first.metric == ("Ingress", "app", "one")
    assert first.host == b"a.example.com"
    other_host = table.route(INGRESS_PORT, head(b"/x", host=b"b.example.com"), tls=False, sni=None)
    assert other_host.decision.status == 404
    assert other_host.label is None


def test_the_memo_starts_over_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(served_module, "ROUTE_MEMO_SIZE", 8)
    table = ingress_snapshot()
    first = table.route(INGRESS_PORT, head(b"/0"), tls=False, sni=None)
    for n in range(1, 20):
        table.route(INGRESS_PORT, head(b"/%d" % n), tls=False, sni=None)
    again = table.route(INGRESS_PORT, head(b"/0"), tls=False, sni=None)
    assert again is not first  # forgotten: the memo held at most 8 keys
    assert again.decision == first.decision


def test_a_port_whose_rules_match_headers_is_decided_per_request() -> None:
    matched = gateway_rule(
        [backend("canary")],
        match={
            "path_type": "PathPrefix",
            "path": "/",
            "headers": [{"name": "x-canary", "type": "Exact", "value": "1"}],
            "query": [],
            "method": None,
        },
    )
    fallback = gateway_rule([backend("stable")])
    table = served(
        snapshot(
            gateway_port=GATEWAY_PORT,
            gateway_rules=[matched, fallback],
            endpoints={"canary": [1], "stable": [2]},
        )
    )
    canary = table.route(
        GATEWAY_PORT, head(b"/", headers=((b"x-canary", b"1"),)), tls=False, sni=None
    )
    stable = table.route(GATEWAY_PORT, head(b"/"), tls=False, sni=None)
    assert [b.service for b in canary.decision.backends] == ["canary"]
    assert [b.service for b in stable.decision.backends] == ["stable"]


def test_a_port_with_a_cors_filter_is_decided_per_request() -> None:
    cors = {"allow_origins": ["https://a.example"], "allow_methods": [], "allow_headers": []}
    rule = gateway_rule([backend("one")], cors={**cors, "expose_headers": []})
    table = served(
        snapshot(gateway_port=GATEWAY_PORT, gateway_rules=[rule], endpoints={"one": [1]})
    )
    marked = table.route(
        GATEWAY_PORT, head(b"/", headers=((b"origin", b"https://a.example"),)), tls=False, sni=None
    )
    plain = table.route(GATEWAY_PORT, head(b"/"), tls=False, sni=None)
    assert dict(marked.decision.response_fields)[b"vary"] == b"Origin"
    assert plain.decision.response_fields == ()


def test_edits_are_converted_once_and_an_unsendable_one_fails_every_time() -> None:
    table = ingress_snapshot()
    edits = HeaderEdits(
        set=pvector([("x-a", "1")]), add=pvector([("x-b", "2")]), remove=pvector(["x-c"])
    )
    wire = table.edits(edits)
    assert table.edits(edits) is wire
    assert wire.set == ((b"x-a", b"1"),)
    assert wire.add == ((b"x-b", b"2"),)
    assert wire.replaced == {b"x-a", b"x-c"}
    injected = HeaderEdits(set=pvector([("x-a", "1\r\nx-evil: 2")]))
    for _ in range(2):
        with pytest.raises(ValueError, match="invalid header field"):
            table.edits(injected)
    with pytest.raises(ValueError, match="not Latin-1"):
        table.edits(HeaderEdits(add=pvector([("x-a", "\u20ac")])))


def test_a_forwarded_host_that_is_not_latin_1_is_flagged_for_a_500() -> None:
    decision = Decision(matched=True, status=None, reason="r", host="\u20ac.example", path="/")
    assert Routed(decision).host is None
    assert Routed(decision).target == b"/"
    assert Routed(replace(decision, host="h", path="/\u20ac")).target is None
