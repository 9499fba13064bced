"""The canary cookie's value (``route.canary.cookie_value``; RFC 6265 §5.4's Cookie field):
pairs split at ``;`` with or without a space, the value everything after the first ``=``, the
first of repeated names, and Cookie fields of any case."""

from __future__ import annotations

from coxswain.route.canary import cookie_value


def test_the_cookie_value_is_read_from_each_pair() -> None:
    assert cookie_value([(b"cookie", b"a=1;try=always")], "try") == "always"
    assert cookie_value([(b"Cookie", b"a=1; try=al=ways")], "try") == "al=ways"
    assert cookie_value([(b"cookie", b"try; try=never; try=always")], "try") == "never"
    assert cookie_value([(b"cookie", b"a=1"), (b"te", b"x"), (b"COOKIE", b"try=x")], "try") == "x"
    assert cookie_value([(b"set-cookie", b"try=always")], "try") is None
    assert cookie_value([(b"cookie", b"tr=always; try2=always")], "try") is None
