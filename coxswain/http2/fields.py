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

Every field of every message passes here, so the check costs a byte translation and a search
per name and value (``bytes.translate`` through a table that marks each byte allowed or not),
not a regular expression's match.
"""

from __future__ import annotations

from typing import Final

__all__ = ["field_problem", "quoted"]


def _marks(allowed: bytes) -> bytes:
    """A translation table: each byte of ``allowed`` to 0, any other to 1."""
    return bytes(0 if byte in allowed else 1 for byte in range(256))


_NAME: Final = _marks(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")  # a token's
_VALUE: Final = _marks(b"\t" + bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100)))
_REFUSED: Final = 1  # an int: ``in`` a bytes object is then a memchr, without a TypeError first
_SPACE: Final = 0x20
_TAB: Final = 0x09  # whitespace a value neither starts nor ends with
_CONNECTION_SPECIFIC: Final = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)


def field_problem(name: bytes, value: bytes) -> str | None:
    """Why the regular field ``name: value`` is malformed, or None. Pure."""
    if not name or _REFUSED in name.translate(_NAME):
        return f"invalid field name {quoted(name)}"
    if value:
        first = value[0]  # ints: compared, not looked up in a bytes object
        last = value[-1]
        if _REFUSED in value.translate(_VALUE) or first in (_SPACE, _TAB) or last in (_SPACE, _TAB):
            return f"invalid value of field {quoted(name)}"
    if name in _CONNECTION_SPECIFIC:
        return f"connection-specific field {quoted(name)}"
    if name == b"te" and value != b"trailers":
        return "te other than trailers"
    return None


def quoted(name: bytes) -> str:
    """A field name for a message: at most 64 bytes of it, quoted."""
    return repr(name[:64].decode("latin-1"))
