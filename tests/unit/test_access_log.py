"""``shell.dataplane.access_log``: a proxied request's line is the JSON object the generic encoder
makes."""

from __future__ import annotations

import io
import json

import pytest

from coxswain.shell.dataplane.access_log import AccessLog


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {
                "method": b"GET",
                "host": b"shop.example.com:8080",
                "path": b'/a?q="x"\\y\x7f',
                "route": "HTTPRoute app/r spec.rules[0]",
                "client": "203.0.113.9",
                "reason": None,
                "status": 200,
                "protocol": "h2",
                "grpc_status": "14",
                "upstream": "10.0.0.1:80",
                "duration_ms": 1.234,
            },
            {
                "method": "GET",
                "host": "shop.example.com:8080",
                "path": '/a?q="x"\\y\x7f',
                "route": "HTTPRoute app/r spec.rules[0]",
                "client": "203.0.113.9",
                "status": 200,
                "protocol": "h2",
                "grpc_status": "14",
                "upstream": "10.0.0.1:80",
                "duration_ms": 1.234,
            },
        ),
        (
            {
                "method": b"POST",
                "host": None,
                "path": b"/caf\xe9",
                "route": None,
                "client": None,
                "reason": 'no Ingress rule matches host "\u00e9vil\n"',
                "status": 404,
                "protocol": "http/1.1",
                "grpc_status": "",
                "upstream": None,
                "duration_ms": 0.0,
            },
            {
                "method": "POST",
                "host": None,
                "path": "/caf\u00e9",
                "route": None,
                "client": None,
                "reason": 'no Ingress rule matches host "\u00e9vil\n"',
                "status": 404,
                "protocol": "http/1.1",
                "upstream": None,
                "duration_ms": 0.0,
            },
        ),
    ],
)
def test_a_request_line_is_the_json_object_of_its_fields_in_order(
    fields: dict[str, object], expected: dict[str, object]
) -> None:
    out = io.StringIO()
    log = AccessLog(out)
    log.request(**fields)  # type: ignore[arg-type]
    log.write(expected)
    log.flush()
    built, encoded = out.getvalue().splitlines()
    assert json.loads(built) == expected
    assert list(json.loads(built)) == list(expected)  # the same keys in the same order
    assert built == encoded
