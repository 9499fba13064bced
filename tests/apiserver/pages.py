"""Paged lists (``limit`` and ``continue``), as clients such as client-go's reflector ask them.

A list of 15,000 Services is one JSON document of tens of megabytes; a client that asks for it in
pages decodes each page on its own. The token is opaque to clients; here it holds the first
page's resourceVersion and the last key served (``Store.list_page``).
"""

from __future__ import annotations

import base64
import json

from .errors import ApiError

__all__ = ["continue_token", "continued", "page_limit"]


def page_limit(value: str | None) -> int:
    """``limit`` of a list (0: no limit); 400 if it is not a number."""
    if not value:
        return 0
    if not value.isdigit():
        raise ApiError(400, f"invalid limit {value!r}")
    return int(value)


def continue_token(rv: int, after: tuple[str, str]) -> str:
    """An opaque ``continue`` token: the first page's resourceVersion and the last key served."""
    return base64.urlsafe_b64encode(json.dumps([rv, *after]).encode()).decode()


def continued(token: str | None) -> tuple[int, tuple[str, str] | None]:
    """The first page's resourceVersion and the key to continue after (0 and None at first);
    400 for a token the emulator did not hand out."""
    if not token:
        return 0, None
    try:
        rv, namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError) as error:
        raise ApiError(400, f"invalid continue token {token!r}") from error
    return int(rv), (str(namespace), str(name))
