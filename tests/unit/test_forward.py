"""route.forward: the header list a proxy sends upstream (RFC 9110 §7.6.1, X-Forwarded-*)."""

from __future__ import annotations

import ipaddress

import pytest

from coxswain.route.forward import HOP_BY_HOP, forwarded_headers, trusted_peer


def names(headers: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [name for name, _ in headers]


def values(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for n, value in headers if n == name]


@pytest.mark.parametrize(
    "hop",
    [
        b"Connection",
        b"Keep-Alive",
        b"Proxy-Connection",
        b"TE",
        b"Trailer",
        b"Transfer-Encoding",
        b"Upgrade",
        b"KEEP-ALIVE",
        b"transfer-encoding",
    ],
)
def test_hop_by_hop_field_is_removed_in_any_case(hop):
    out = forwarded_headers(
        [(b"Host", b"a"), (hop, b"x"), (b"Accept", b"*/*")], host=b"a", proto=b"http", client=None
    )
    assert hop.lower() not in names(out)
    assert values(out, b"accept") == [b"*/*"]


def test_expect_is_not_forwarded_the_proxy_answers_it():
    out = forwarded_headers(
        [(b"Host", b"a"), (b"Expect", b"100-continue"), (b"Content-Length", b"3")],
        host=b"a",
        proto=b"http",
        client=None,
    )
    assert b"expect" not in names(out)
    assert values(out, b"content-length") == [b"3"]


def test_hop_by_hop_set_is_the_rfc_list():
    assert {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    } == HOP_BY_HOP


def test_fields_named_in_connection_are_removed_when_listed_in_any_case_and_spacing():
    out = forwarded_headers(
        [
            (b"Host", b"a"),
            (b"Connection", b"keep-alive, X-Secret ,x-other"),
            (b"connection", b"X-Third"),
            (b"X-Secret", b"1"),
            (b"x-other", b"2"),
            (b"X-THIRD", b"3"),
            (b"X-Kept", b"4"),
        ],
        host=b"a",
        proto=b"http",
        client=None,
    )
    assert names(out) == [b"host", b"x-kept", b"x-forwarded-proto", b"x-forwarded-host"]


def test_x_forwarded_for_gets_a_trusted_proxy_appended_to_what_it_sent():
    out = forwarded_headers(
        [
            (b"Host", b"a"),
            (b"X-Forwarded-For", b"1.1.1.1"),
            (b"x-forwarded-for", b"2.2.2.2, 3.3.3.3"),
        ],
        host=b"a",
        proto=b"http",
        client=b"10.0.0.9",
        trusted=True,
    )
    assert values(out, b"x-forwarded-for") == [b"1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9"]


def test_x_forwarded_for_is_the_client_when_the_client_sent_none():
    out = forwarded_headers([(b"Host", b"a")], host=b"a", proto=b"http", client=b"192.0.2.1")
    assert values(out, b"x-forwarded-for") == [b"192.0.2.1"]


def test_x_forwarded_for_of_a_trusted_proxy_is_kept_as_sent_when_its_address_is_unknown():
    out = forwarded_headers(
        [(b"Host", b"a"), (b"X-Forwarded-For", b"1.1.1.1")],
        host=b"a",
        proto=b"http",
        client=None,
        trusted=True,
    )
    assert values(out, b"x-forwarded-for") == [b"1.1.1.1"]
    assert b"x-forwarded-for" not in names(
        forwarded_headers([], host=b"a", proto=b"http", client=None)
    )


def test_x_forwarded_proto_and_host_replace_what_the_client_sent():
    out = forwarded_headers(
        [
            (b"Host", b"Shop.Example.com:8443"),
            (b"X-Forwarded-Proto", b"http"),
            (b"X-Forwarded-Host", b"evil.example"),
        ],
        host=b"shop.example.com",
        proto=b"https",
        client=b"203.0.113.5",
    )
    assert values(out, b"x-forwarded-proto") == [b"https"]
    assert values(out, b"x-forwarded-host") == [b"Shop.Example.com:8443"]


def test_host_is_replaced_by_the_decided_host_and_sent_once_first():
    out = forwarded_headers(
        [(b"Accept", b"*/*"), (b"HOST", b"client.example"), (b"User-Agent", b"t")],
        host=b"upstream.example",
        proto=b"http",
        client=None,
    )
    assert out[0] == (b"host", b"upstream.example")
    assert values(out, b"host") == [b"upstream.example"]
    assert values(out, b"x-forwarded-host") == [b"client.example"]


def test_forwarded_host_is_the_decided_host_when_the_client_sent_no_host():
    out = forwarded_headers([], host=b"decided.example", proto=b"http", client=None)
    assert out == [
        (b"host", b"decided.example"),
        (b"x-forwarded-proto", b"http"),
        (b"x-forwarded-host", b"decided.example"),
    ]


def test_end_to_end_headers_keep_their_order_and_values_with_names_lower_cased():
    out = forwarded_headers(
        [
            (b"Host", b"a"),
            (b"Cookie", b"a=1"),
            (b"Accept", b"text/html"),
            (b"cookie", b"b=2"),
            (b"Content-Length", b"5"),
        ],
        host=b"a",
        proto=b"http",
        client=b"10.0.0.1",
    )
    assert out == [
        (b"host", b"a"),
        (b"cookie", b"a=1"),
        (b"accept", b"text/html"),
        (b"cookie", b"b=2"),
        (b"content-length", b"5"),
        (b"x-forwarded-for", b"10.0.0.1"),
        (b"x-real-ip", b"10.0.0.1"),
        (b"x-forwarded-proto", b"http"),
        (b"x-forwarded-host", b"a"),
    ]


FORGED = [
    (b"Host", b"a"),
    (b"X-Real-IP", b"6.6.6.6"),
    (b"X-Forwarded-For", b"6.6.6.6"),
    (b"Forwarded", b"for=6.6.6.6;proto=https"),
    (b"X-Forwarded-Proto", b"https"),
    (b"X-Forwarded-Host", b"evil.example"),
    (b"X-Forwarded-Port", b"443"),
    (b"x-forwarded-prefix", b"/admin"),
    (b"X-Kept", b"1"),
]


def test_an_untrusted_peer_cannot_forge_forwarding_fields():
    out = forwarded_headers(FORGED, host=b"a", proto=b"http", client=b"192.0.2.7")
    assert out == [
        (b"host", b"a"),
        (b"x-kept", b"1"),
        (b"x-forwarded-for", b"192.0.2.7"),
        (b"x-real-ip", b"192.0.2.7"),
        (b"x-forwarded-proto", b"http"),
        (b"x-forwarded-host", b"a"),
    ]


def test_a_trusted_proxy_keeps_its_forwarding_fields_and_gets_appended():
    out = forwarded_headers(FORGED, host=b"a", proto=b"http", client=b"10.0.0.2", trusted=True)
    assert out == [
        (b"host", b"a"),
        (b"x-real-ip", b"6.6.6.6"),
        (b"forwarded", b"for=6.6.6.6;proto=https"),
        (b"x-forwarded-proto", b"https"),
        (b"x-forwarded-host", b"evil.example"),
        (b"x-forwarded-port", b"443"),
        (b"x-forwarded-prefix", b"/admin"),
        (b"x-kept", b"1"),
        (b"x-forwarded-for", b"6.6.6.6, 10.0.0.2"),
    ]


def test_a_trusted_proxy_that_sent_none_gets_them_set():
    out = forwarded_headers(
        [(b"Host", b"a")], host=b"a", proto=b"https", client=b"10.0.0.2", trusted=True
    )
    assert out == [
        (b"host", b"a"),
        (b"x-forwarded-for", b"10.0.0.2"),
        (b"x-real-ip", b"10.0.0.2"),
        (b"x-forwarded-proto", b"https"),
        (b"x-forwarded-host", b"a"),
    ]


@pytest.mark.parametrize(
    ("address", "trusted"),
    [
        ("10.1.2.3", True),
        ("::ffff:10.1.2.3", True),
        ("fd00::1", True),
        ("11.0.0.1", False),
        ("fe80::1", False),
        ("not-an-ip", False),
        (None, False),
    ],
)
def test_trusted_peer_is_inside_a_configured_network(address, trusted):
    proxies = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))
    assert trusted_peer(address, proxies) is trusted
    assert trusted_peer(address, ()) is False
