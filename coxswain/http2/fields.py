"""One HTTP/2 field checked, whichever peer sent it (RFC 9113 §8.2).

The proxy's HTTP/2 codecs check frames, not fields, on both sides of the proxy (its clients',
:mod:`coxswain.http2.server`, and its backends', :mod:`coxswain.http2.client`), so every field
is checked here, once, by the rules the HTTP/1.1 parser applies, since a field may be relayed
to an HTTP/1.1 peer:

- names are lower-case tokens (RFC 9113 §8.2.1);
- values are visible ASCII, obs-text, space and tab, without leading or trailing whitespace
  (RFC 9113 §8.2.1, RFC 9110 §5.5): no CR, LF or NUL can reach an HTTP/1.1 peer;
- the connection-specific fields ``connection``, ``keep-alive``, ``proxy-connection``,
  ``transfer-encoding`` and ``upgrade`` make the message malformed, as does ``te`` other than
  ``trailers`` (RFC 9113 §8.2.2).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["field_problem", "quoted"]

_NAME: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9a-z]+")
_VALUE: Final = re.compile(
    rb"(?:[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?"
)
_CONNECTION_SPECIFIC: Final = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)


def field_problem(name: bytes, value: bytes) -> str | None:
    """Why the regular field ``name: value`` is malformed, or None. Pure."""
    if _NAME.fullmatch(name) is None:
        return f"invalid field name {quoted(name)}"
    if _VALUE.fullmatch(value) is None:
        return f"invalid value of field {quoted(name)}"
    if name in _CONNECTION_SPECIFIC:
        return f"connection-specific field {quoted(name)}"
    if name == b"te" and value != b"trailers":
        return "te other than trailers"
    return None


def quoted(name: bytes) -> str:
    """A field name for a message: at most 64 bytes of it, quoted."""
    return repr(name[:64].decode("latin-1"))
