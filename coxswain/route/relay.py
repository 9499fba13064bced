"""The response headers a proxy relays to its client (RFC 9110 §7.6.1, §6.6.1, §10.2.4).

Rules:
1. Hop-by-hop fields are removed: those of :data:`~.forward.HOP_BY_HOP` and every field the
   response's ``Connection`` names (the proxy frames the response to the client itself).
2. ``Server: coxswain`` and the proxy's ``Date`` come first and replace the upstream's, as
   nginx (``proxy_pass_header`` off) and Envoy (``server_header_transformation:
   OVERWRITE``) do: the client talks to the proxy, and one ``Server`` value tells an
   operator which layer answered. A recipient with a clock that forwards a response MUST
   give it a ``Date`` when it has none (RFC 9110 §6.6.1); the proxy's clock is the one every
   response of the gateway then agrees with.
3. With ``pass_server`` (``--pass-server-header``), the upstream's ``Server`` is kept, and
   ``Server: coxswain`` is added only to a response that has none (nginx's
   ``proxy_pass_header Server``).

A route's response header edits apply after these rules: a ``ResponseHeaderModifier`` that
sets or removes ``Server`` has the last word.

4. Trailers (RFC 9110 §6.5) reach an HTTP/2 client as they came; an HTTP/1.1 client gets them
   in the last chunk only when its request said ``TE: trailers`` (:func:`accepts_trailers`,
   RFC 9110 §10.1.4), as a recipient that did not ask may not expect them; else they are
   dropped, which a trailer section allows (RFC 9110 §6.5.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from coxswain.route.forward import HOP_BY_HOP

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

__all__ = ["SERVER", "accepts_trailers", "relayed_fields"]

SERVER: Final = b"coxswain"
_REPLACED: Final = HOP_BY_HOP | {b"server", b"date"}
_REPLACED_BUT_SERVER: Final = HOP_BY_HOP | {b"date"}


def relayed_fields(
    headers: Sequence[tuple[bytes, bytes]],
    named: Collection[bytes],
    date: bytes,
    *,
    pass_server: bool = False,
) -> list[tuple[bytes, bytes]]:
    """The upstream response's fields as the client gets them, before the route's edits. Pure.

    Args:
        headers: the response's fields, names lower-cased (as the parser gives them).
        named: the fields its ``Connection`` names (:func:`~.forward.connection_named`).
        date: the proxy's ``Date`` value (an IMF-fixdate, RFC 9110 §5.6.7).
        pass_server: keep the upstream's ``Server`` (rule 3).
    """
    if not pass_server:
        fields = [(b"server", SERVER), (b"date", date)]
        fields.extend([(n, v) for n, v in headers if n not in _REPLACED and n not in named])
        return fields
    kept = [(n, v) for n, v in headers if n not in _REPLACED_BUT_SERVER and n not in named]
    own = [(b"date", date)]
    if not any(n == b"server" for n, _ in kept):
        own.insert(0, (b"server", SERVER))
    return own + kept


def accepts_trailers(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether a request's ``TE`` fields list ``trailers`` (rule 4; any case, with or without
    whitespace). Pure."""
    for name, value in headers:
        if name.lower() == b"te":
            for member in value.split(b","):
                if member.strip().lower() == b"trailers":
                    return True
    return False
