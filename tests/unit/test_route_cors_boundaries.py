"""CORS on a route at its edges (``coxswain.route.cors``; docs/migrating-from-ingress-nginx.md,
"CORS"): a requested header Latin-1 cannot hold is written back replaced, not refused (the pure
packages are total), and a backend's ``Set-Cookie`` stays beside an external authentication's."""

from __future__ import annotations

from pyrsistent import pvector

from coxswain.compile.snapshot import Cors
from coxswain.route.cors import cors_outcome, with_cors


def test_a_requested_header_latin_1_cannot_hold_is_written_back_replaced() -> None:
    cors = Cors(allow_origins=pvector(["https://a"]), allow_headers=pvector(["*"]))
    asked = {"access-control-request-method": "GET", "access-control-request-headers": "x-\u20ac"}
    fields = cors_outcome(cors, "OPTIONS", "https://a", asked).fields
    assert (b"access-control-allow-headers", b"x-?") in fields


def test_a_backend_s_set_cookie_is_kept_beside_the_one_that_rides_along() -> None:
    backend = [(b"set-cookie", b"b=1"), (b"access-control-allow-origin", b"*")]
    fields = ((b"access-control-allow-origin", b"https://a"), (b"set-cookie", b"auth=1"))
    assert with_cors(backend, fields) == [
        (b"set-cookie", b"b=1"),
        (b"access-control-allow-origin", b"https://a"),
        (b"set-cookie", b"auth=1"),
    ]
