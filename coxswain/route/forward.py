"""The request headers a proxy forwards upstream (RFC 9110 §7.6.1, de-facto X-Forwarded-*).

Rules:
1. Hop-by-hop fields are removed: ``Connection`` and every field it names, ``Keep-Alive``,
   ``Proxy-Connection``, ``TE``, ``Trailer``, ``Transfer-Encoding``, ``Upgrade`` (the proxy
   re-adds framing and upgrade fields itself when it relays them).
2. ``Host`` is the decided host.
3. ``X-Forwarded-For`` gets the client address appended; ``X-Forwarded-Proto`` and
   ``X-Forwarded-Host`` are set to what the client used (replacing what the client sent:
   the edge proxy is the authority on them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import HeaderEdits

__all__ = ["HOP_BY_HOP", "apply_edits", "forwarded_headers"]

HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_REPLACED: Final = frozenset({"host", "x-forwarded-proto", "x-forwarded-host"})


def forwarded_headers(
    headers: Sequence[tuple[str, str]],
    *,
    host: str,
    proto: str,
    client: str | None,
) -> list[tuple[str, str]]:
    """The header list to send upstream.

    Args:
        headers: the client's headers, names in any case, in order.
        host: the Host to forward.
        proto: ``http`` or ``https``, as the client connected.
        client: the client's address, or None when unknown (offline explanations).
    """
    named_by_connection = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    out: list[tuple[str, str]] = [("host", host)]
    forwarded_for: list[str] = []
    original_host = host
    for name, value in headers:
        lower = name.lower()
        if lower in HOP_BY_HOP or lower in named_by_connection:
            continue
        if lower == "x-forwarded-for":
            forwarded_for.append(value)
            continue
        if lower == "host":
            original_host = value
            continue
        if lower in _REPLACED:
            continue
        out.append((lower, value))
    if client is not None:
        forwarded_for.append(client)
    if forwarded_for:
        out.append(("x-forwarded-for", ", ".join(forwarded_for)))
    out.append(("x-forwarded-proto", proto))
    out.append(("x-forwarded-host", original_host))
    return out


def apply_edits(headers: Sequence[tuple[str, str]], edits: HeaderEdits) -> list[tuple[str, str]]:
    """Apply a Gateway API header modifier (HTTPHeaderFilter): remove, set, then add.

    ``set`` replaces every value of the name; ``add`` appends a value; names compare
    case-insensitively (the edits hold lower-case names).
    """
    replaced = {name for name, _ in edits.set} | set(edits.remove)
    out = [(name, value) for name, value in headers if name.lower() not in replaced]
    out.extend(edits.set)
    out.extend(edits.add)
    return out
