"""HTTP field names and values from manifests: the syntax the proxy can write as it stands.

A header a route sets or adds is written into requests and responses as given, so a value with
a CR or LF would start a header (or a request) of the tenant's choosing. Rules, each a check
of every character against a class, linear in the input (no regular expression):

1. A field name is an RFC 9110 §5.6.2 ``token``: at least one of ``!#$%&'*+-.^_`|~``, digits and
   letters; at most 256 characters (the Gateway API ``HTTPHeaderName`` bound).
2. A field value is an RFC 9110 §5.5 ``field-value``: visible ASCII, obs-text (0x80-0xFF: the
   proxy writes Latin-1), and spaces or tabs inside but not at either end; so no CR, LF, NUL
   or other control character; at most 4,096 characters (the Gateway API ``HTTPHeader.value``
   bound).
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_FIELD_NAME", "MAX_FIELD_VALUE", "is_field_name", "is_field_value"]

MAX_FIELD_NAME: Final = 256
MAX_FIELD_VALUE: Final = 4096

_TCHAR: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_FIELD_CHAR: Final = frozenset(chr(c) for c in (0x09, *range(0x20, 0x7F), *range(0x80, 0x100)))
_WHITESPACE: Final = " \t"


def is_field_name(name: str) -> bool:
    """Whether ``name`` is an RFC 9110 token of at most 256 characters."""
    return 0 < len(name) <= MAX_FIELD_NAME and _TCHAR.issuperset(name)


def is_field_value(value: str) -> bool:
    """Whether ``value`` is an RFC 9110 field value of at most 4,096 characters."""
    return (
        len(value) <= MAX_FIELD_VALUE
        and _FIELD_CHAR.issuperset(value)
        and not value.startswith(tuple(_WHITESPACE))
        and not value.endswith(tuple(_WHITESPACE))
    )
