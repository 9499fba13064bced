"""route.forward: the header list a proxy sends upstream (RFC 9110 §7.6.1, X-Forwarded-*)."""

from __future__ import annotations

import pytest

from coxswain.route.forward import HOP_BY_HOP, forwarded_headers


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


def test_x_forwarded_for_gets_the_client_appended_when_the_client_sent_one():
    out = forwarded_headers(
        [
            (b"Host", b"a"),
            (b"X-Forwarded-For", b"1.1.1.1"),
            (b"x-forwarded-for", b"2.2.2.2, 3.3.3.3"),
        ],
        host=b"a",
        proto=b"http",
        client=b"10.0.0.9",
    )
    assert values(out, b"x-forwarded-for") == [b"1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9"]


def test_x_forwarded_for_is_the_client_when_the_client_sent_none():
    out = forwarded_headers([(b"Host", b"a")], host=b"a", proto=b"http", client=b"192.0.2.1")
    assert values(out, b"x-forwarded-for") == [b"192.0.2.1"]


def test_x_forwarded_for_is_kept_as_sent_when_the_client_is_unknown():
    out = forwarded_headers(
        [(b"Host", b"a"), (b"X-Forwarded-For", b"1.1.1.1")], host=b"a", proto=b"http", client=None
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
        (b"x-forwarded-proto", b"http"),
        (b"x-forwarded-host", b"a"),
    ]
