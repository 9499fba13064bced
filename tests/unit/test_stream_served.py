"""The stream listeners' view of a snapshot (coxswain/shell/dataplane/streams/served.py): a
routing decision is made once per port and server name, and a flood of server names (the
clients choose them) is still routed right once no more decisions are kept."""

from __future__ import annotations

from coxswain.shell.dataplane.streams.served import DECIDED, StreamServed
from tests.integration.streams_harness import Route, stream_snapshot

PORT = 9443


def _served() -> StreamServed:
    routes = [Route("abc.example.com", "exact", (1,)), Route("*.example.com", "wild", (2,))]
    return StreamServed(stream_snapshot(PORT, "TLS", routes, listener_host="*.example.com"))


def test_a_decision_is_made_once_per_port_and_server_name() -> None:
    served = _served()
    first = served.decide(PORT, "abc.example.com")
    assert first.label == "TLSRoute app/exact"
    assert served.decide(PORT, "abc.example.com") is first
    assert served.decide(PORT, "x.example.com").label == "TLSRoute app/wild"
    assert served.decide(PORT + 1, "abc.example.com").action is None  # no listener there


def test_server_names_past_the_kept_decisions_are_still_routed() -> None:
    served = _served()
    for number in range(DECIDED + 10):
        assert served.decide(PORT, f"n{number}.example.com").label == "TLSRoute app/wild"
    assert served.decide(PORT, "abc.example.com").label == "TLSRoute app/exact"
    assert served.decide(PORT, "abc.example.org").action is None
