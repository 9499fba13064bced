"""Exact edges of two header checks of the relay (coxswain/route/relay.py, forward.py):
whether a request's ``TE`` accepts trailers (RFC 9110 §10.1.4), and whether a 101 switches
to exactly WebSocket (RFC 9110 §15.2.2)."""

from __future__ import annotations

import pytest

from coxswain.route.forward import switched_to_websocket
from coxswain.route.relay import accepts_trailers


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([(b"te", b"trailers")], True),
        ([(b"TE", b" Trailers ")], True),
        ([(b"te", b"gzip, trailers")], True),
        ([(b"te", b"gzip,trailers,deflate")], True),
        ([(b"te", b"gzip"), (b"te", b"trailers")], True),
        ([(b"te", b"trailersx")], False),
        ([(b"te", b"trailers;q=1")], False),
        ([(b"te", b"gzip")], False),
        ([(b"tex", b"trailers")], False),
        ([(b"x-te", b"trailers")], False),
        ([], False),
    ],
)
def test_te_accepts_trailers_only_when_a_member_is_trailers(headers, expected):
    assert accepts_trailers(headers) is expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([(b"upgrade", b"websocket")], True),
        ([(b"upgrade", b" \tWebSocket\t ")], True),
        ([(b"connection", b"upgrade"), (b"upgrade", b"websocket")], True),
        ([(b"upgrade", b"websocket"), (b"upgrade", b"websocket")], False),
        ([(b"upgrade", b"h2c")], False),
        ([(b"upgrade", b"websocket, h2c")], False),
        ([(b"upgrade", b"\nwebsocket")], False),
        ([(b"Upgrade", b"websocket")], False),
        ([], False),
    ],
)
def test_a_101_switches_to_exactly_websocket(headers, expected):
    assert switched_to_websocket(headers) is expected
