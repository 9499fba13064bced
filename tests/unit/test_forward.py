"""route.forward: the header list a proxy sends upstream (RFC 9110 §7.6.1, X-Forwarded-*)."""

from __future__ import annotations

import pytest

from coxswain.route.forward import HOP_BY_HOP, forwarded_headers


def names(headers: list[tuple[str, str]]) -> list[str]:
    return [name for name, _ in headers]


def values(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [value for n, value in headers if n == name]


@pytest.mark.parametrize(
    "hop",
    [
        "Connection",
        "Keep-Alive",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "KEEP-ALIVE",
        "transfer-encoding",
    ],
)
def test_hop_by_hop_field_is_removed_in_any_case(hop):
    out = forwarded_headers(
        [("Host", "a"), (hop, "x"), ("Accept", "*/*")], host="a", proto="http", client=None
    )
    assert hop.lower() not in names(out)
    assert values(out, "accept") == ["*/*"]


def test_hop_by_hop_set_is_the_rfc_list():
    assert {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    } == HOP_BY_HOP


def test_fields_named_in_connection_are_removed_when_listed_in_any_case_and_spacing():
    out = forwarded_headers(
        [
            ("Host", "a"),
            ("Connection", "keep-alive, X-Secret ,x-other"),
            ("connection", "X-Third"),
            ("X-Secret", "1"),
            ("x-other", "2"),
            ("X-THIRD", "3"),
            ("X-Kept", "4"),
        ],
        host="a",
        proto="http",
        client=None,
    )
    assert names(out) == ["host", "x-kept", "x-forwarded-proto", "x-forwarded-host"]


def test_x_forwarded_for_gets_the_client_appended_when_the_client_sent_one():
    out = forwarded_headers(
        [("Host", "a"), ("X-Forwarded-For", "1.1.1.1"), ("x-forwarded-for", "2.2.2.2, 3.3.3.3")],
        host="a",
        proto="http",
        client="10.0.0.9",
    )
    assert values(out, "x-forwarded-for") == ["1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9"]


def test_x_forwarded_for_is_the_client_when_the_client_sent_none():
    out = forwarded_headers([("Host", "a")], host="a", proto="http", client="192.0.2.1")
    assert values(out, "x-forwarded-for") == ["192.0.2.1"]


def test_x_forwarded_for_is_kept_as_sent_when_the_client_is_unknown():
    out = forwarded_headers(
        [("Host", "a"), ("X-Forwarded-For", "1.1.1.1")], host="a", proto="http", client=None
    )
    assert values(out, "x-forwarded-for") == ["1.1.1.1"]
    assert "x-forwarded-for" not in names(
        forwarded_headers([], host="a", proto="http", client=None)
    )


def test_x_forwarded_proto_and_host_replace_what_the_client_sent():
    out = forwarded_headers(
        [
            ("Host", "Shop.Example.com:8443"),
            ("X-Forwarded-Proto", "http"),
            ("X-Forwarded-Host", "evil.example"),
        ],
        host="shop.example.com",
        proto="https",
        client="203.0.113.5",
    )
    assert values(out, "x-forwarded-proto") == ["https"]
    assert values(out, "x-forwarded-host") == ["Shop.Example.com:8443"]


def test_host_is_replaced_by_the_decided_host_and_sent_once_first():
    out = forwarded_headers(
        [("Accept", "*/*"), ("HOST", "client.example"), ("User-Agent", "t")],
        host="upstream.example",
        proto="http",
        client=None,
    )
    assert out[0] == ("host", "upstream.example")
    assert values(out, "host") == ["upstream.example"]
    assert values(out, "x-forwarded-host") == ["client.example"]


def test_forwarded_host_is_the_decided_host_when_the_client_sent_no_host():
    out = forwarded_headers([], host="decided.example", proto="http", client=None)
    assert out == [
        ("host", "decided.example"),
        ("x-forwarded-proto", "http"),
        ("x-forwarded-host", "decided.example"),
    ]


def test_end_to_end_headers_keep_their_order_and_values_with_names_lower_cased():
    out = forwarded_headers(
        [
            ("Host", "a"),
            ("Cookie", "a=1"),
            ("Accept", "text/html"),
            ("cookie", "b=2"),
            ("Content-Length", "5"),
        ],
        host="a",
        proto="http",
        client="10.0.0.1",
    )
    assert out == [
        ("host", "a"),
        ("cookie", "a=1"),
        ("accept", "text/html"),
        ("cookie", "b=2"),
        ("content-length", "5"),
        ("x-forwarded-for", "10.0.0.1"),
        ("x-forwarded-proto", "http"),
        ("x-forwarded-host", "a"),
    ]
