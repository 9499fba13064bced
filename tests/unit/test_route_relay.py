"""coxswain.route.relay: the response fields a client gets, rule by rule."""

from __future__ import annotations

from coxswain.route.forward import connection_named
from coxswain.route.relay import relayed_fields

DATE = b"Sat, 05 Dec 2026 07:04:07 GMT"
UPSTREAM = [
    (b"content-type", b"text/plain"),
    (b"server", b"gunicorn"),
    (b"date", b"Thu, 01 Jan 1970 00:00:00 GMT"),
    (b"connection", b"x-private"),
    (b"x-private", b"1"),
    (b"transfer-encoding", b"chunked"),
    (b"x-app", b"a"),
]


def test_server_and_date_are_the_proxys_and_come_first():
    fields = relayed_fields(UPSTREAM, connection_named(UPSTREAM), DATE)
    assert fields == [
        (b"server", b"coxswain"),
        (b"date", DATE),
        (b"content-type", b"text/plain"),
        (b"x-app", b"a"),
    ]


def test_passing_the_server_keeps_the_upstreams_and_replaces_only_the_date():
    fields = relayed_fields(UPSTREAM, {b"x-private"}, DATE, pass_server=True)
    assert fields == [
        (b"date", DATE),
        (b"content-type", b"text/plain"),
        (b"server", b"gunicorn"),
        (b"x-app", b"a"),
    ]


def test_passing_the_server_of_an_upstream_that_sent_none_adds_the_proxys():
    fields = relayed_fields([(b"x-app", b"a")], set(), DATE, pass_server=True)
    assert fields == [(b"server", b"coxswain"), (b"date", DATE), (b"x-app", b"a")]


def test_a_field_the_connection_names_is_dropped_even_when_it_is_not_hop_by_hop():
    fields = relayed_fields([(b"x-app", b"a"), (b"x-b", b"b")], {b"x-b"}, DATE)
    assert fields[2:] == [(b"x-app", b"a")]
