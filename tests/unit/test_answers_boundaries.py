"""Exact form of the answers the proxy makes itself (coxswain/route/answers.py): one line of
plain text naming the status, its reason phrase and why; none for a 204 (RFC 9110 §15.3.5);
``Server``, ``Date``, the length, ``Location`` for a redirect (§10.2.2), extra fields last."""

from __future__ import annotations

from coxswain.route.answers import TEXT_PLAIN, own_body, own_fields

DATE = b"Sun, 06 Dec 2026 03:00:00 GMT"


def test_the_body_is_status_phrase_and_why_on_one_line():
    assert (
        own_body(404, "no route for a.example.com/")
        == b"404 Not Found: no route for a.example.com/\n"
    )
    assert own_body(503, "é") == "503 Service Unavailable: é\n".encode()
    assert own_body(299, "odd") == b"299 Error: odd\n"
    assert own_body(204, "preflight") == b""
    assert own_body(200, "") == b"200 OK: \n"


def test_a_lone_surrogate_in_the_text_is_replaced_not_raised():
    assert own_body(400, "\ud800") == b"400 Bad Request: ?\n"


def test_the_fields_of_an_answer_in_order():
    headers, body = own_fields(421, "not this host", date=DATE)
    assert body == b"421 Misdirected Request: not this host\n"
    assert headers == [
        (b"server", b"coxswain"),
        (b"date", DATE),
        (b"content-type", TEXT_PLAIN),
        (b"content-length", str(len(body)).encode()),
    ]
    assert TEXT_PLAIN == b"text/plain; charset=utf-8"


def test_a_204_has_no_content_fields_and_a_redirect_its_location():
    headers, body = own_fields(204, "x", date=DATE, fields=[(b"access-control-allow-origin", b"*")])
    assert body == b""
    assert headers == [
        (b"server", b"coxswain"),
        (b"date", DATE),
        (b"access-control-allow-origin", b"*"),
    ]
    headers, body = own_fields(302, "moved", date=DATE, location="https://é.example/")
    assert body == b"302 Found: moved\n"
    assert headers[-1] == (b"location", "https://é.example/".encode("latin-1"))
    assert headers[-2] == (b"content-length", b"17")
    headers, _ = own_fields(302, "moved", date=DATE, location="https://\u4e00/")
    assert headers[-1] == (b"location", b"https://?/")
