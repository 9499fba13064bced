"""What the proxy asks of the upstream for a client's ``Upgrade`` offer, and the
``X-Forwarded-Host`` of an absolute-form request (``route.forward``; RFC 6455, RFC 9110
§7.8 and §7.2, RFC 9112 §3.2.2)."""

from __future__ import annotations

from coxswain.route.forward import forwarded_headers, switched_to_websocket, tunnelled_upgrade

ASKED = [b"WebSocket", b"h2c, websocket", b"h2c,\twebsocket\t", b" websocket"]
"""Offers naming ``websocket`` as one of their comma-separated tokens, whatever its case and
its optional whitespace (SP and HTAB, RFC 9110 §5.6.3)."""
NOT_ASKED = [None, b"", b"h2c", b"h2c websocket", b"\x0bwebsocket", b"websocketX", b"websocket/13"]


def test_only_a_websocket_token_is_asked_of_the_upstream() -> None:
    assert [tunnelled_upgrade(offer) for offer in ASKED] == [b"websocket"] * len(ASKED)
    assert [tunnelled_upgrade(offer) for offer in NOT_ASKED] == [None] * len(NOT_ASKED)


def test_an_absolute_form_target_s_authority_is_the_forwarded_host() -> None:
    sent = [(b"Host", b"received.example")]
    out = forwarded_headers(sent, host=b"h", proto=b"http", client=None, authority=b"a.example")
    assert (b"x-forwarded-host", b"a.example") in out
    out = forwarded_headers(sent, host=b"h", proto=b"http", client=None)
    assert (b"x-forwarded-host", b"received.example") in out  # the Host the client sent


def test_a_101_switches_to_websocket_only_when_its_one_upgrade_says_exactly_that() -> None:
    switched = [b" WebSocket\t", b"websocketX", b"Xwebsocket"]
    assert [switched_to_websocket([(b"upgrade", u)]) for u in switched] == [True, False, False]
