"""Whether one request goes to a path's canary backend (``snapshot.Canary``), as
ingress-nginx's balancer decides it (docs/migrating-from-ingress-nginx.md, "Canary"). Pure.

Precedence, first that decides:
1. the ``canary-by-header`` request header, when present: with ``canary-by-header-value``,
   equal to it → canary; else with ``canary-by-header-pattern``, the pattern found in it →
   canary; else ``always`` → canary and ``never`` → the main backend. Any other value decides
   nothing;
2. the ``canary-by-cookie`` cookie: ``always`` → canary, ``never`` → main, else nothing;
3. the weight: ``canary-weight`` out of ``canary-weight-total`` (at least 100) of the rest go
   to the canary. That draw is the proxy's weighted choice between the two backends, which
   ``route.select`` weighs; here it is None ("not decided").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.compile.regex import compile_pattern

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.regex import FullMatch
    from coxswain.compile.snapshot import Canary

__all__ = ["CanaryCheck", "cookie_value"]


class CanaryCheck:
    """One path's canary rules, parsed once per snapshot."""

    __slots__ = ("_cookie", "_header", "_pattern", "_value")

    def __init__(self, canary: Canary) -> None:
        self._header = None if canary.header is None else canary.header.lower().encode("latin-1")
        self._value = canary.header_value or None
        self._pattern: FullMatch | None = None
        if not self._value and canary.header_pattern:
            found = compile_pattern(f"(?s).*(?:{canary.header_pattern}).*")
            self._pattern = None if isinstance(found, str) else found  # checked when compiled
        self._cookie = canary.cookie

    def choice(self, headers: tuple[tuple[bytes, bytes], ...]) -> bool | None:
        """True: the canary; False: the main backend; None: the weighted draw decides."""
        if self._header is not None:
            value = next((v for n, v in headers if n.lower() == self._header), None)
            if value is not None:
                text = value.decode("latin-1")
                if self._value is not None:
                    if text == self._value:
                        return True
                elif self._pattern is not None:
                    if self._pattern.matches(text):
                        return True
                elif text in ("always", "never"):
                    return text == "always"
        if self._cookie is not None:
            cookie = cookie_value(headers, self._cookie)
            if cookie in ("always", "never"):
                return cookie == "always"
        return None


def cookie_value(headers: Sequence[tuple[bytes, bytes]], name: str) -> str | None:
    """The value of cookie ``name`` in the Cookie fields (RFC 6265 §5.4), the first one."""
    for field, value in headers:
        if field.lower() != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            key, equals, found = pair.strip().partition("=")
            if equals and key == name:
                return found
    return None
