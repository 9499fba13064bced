"""ingress-nginx's cookie session affinity annotations, read into
:class:`~coxswain.compile.snapshot.Affinity` (docs/migrating-from-ingress-nginx.md,
"Session affinity"; the proxy's side: ``route.affinity``). Pure.

Rules, ingress-nginx's (its annotation reference):
1. ``affinity: cookie`` turns it on; ingress-nginx knows no other kind.
2. ``affinity-mode``: ``balanced`` (default) or ``persistent``.
3. ``session-cookie-name`` (default ``INGRESSCOOKIE``), ``-path`` (default: the Ingress path;
   ``/`` for a regex path, where ingress-nginx wants one written), ``-domain``, ``-expires``
   and ``-max-age`` (seconds), ``-samesite`` (``None``, ``Lax``, ``Strict``) and ``-secure``
   (default: on HTTPS requests) are the cookie's; with
   ``session-cookie-conditional-samesite-none: "true"``, ``SameSite=None`` is left out for the
   browsers that reject or misread it (``route.affinity``, rule 5).
   ``session-cookie-change-on-failure: "true"`` moves a client whose endpoint fails to another
   (``shell.dataplane.affinity``).
4. A value that does not parse is reported and dropped (its default applies); a bad
   ``affinity`` turns affinity off.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from coxswain.compile.ingress.registry import annotation_value, invalid_annotation
from coxswain.compile.snapshot import Affinity

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.objects import Ingress

__all__ = ["read_affinity"]

_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
_PATH: Final = re.compile(r"/[!-:<-~]{0,1023}")  # printable, no ';' (RFC 6265 §4.1.1)
_DOMAIN: Final = re.compile(r"\.?[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_SECONDS: Final = re.compile(r"[0-9]{1,10}")
_SAMESITE: Final = {"none": "None", "lax": "Lax", "strict": "Strict"}


def read_affinity(ingress: Ingress, found: list[Diagnostic]) -> Affinity | None:
    """The session affinity of ``ingress``, or None (rules 1 to 4)."""
    kind = annotation_value(ingress, "affinity")
    if kind is None:
        return None
    if kind[0].strip() != "cookie":
        why = f"{kind[0][:20]!r} is not cookie; the Ingress gets no session affinity"
        found.append(invalid_annotation(ingress, kind[1], why))
        return None

    def text(name: str, pattern: re.Pattern[str]) -> str | None:
        read = annotation_value(ingress, name)
        if read is None:
            return None
        if pattern.fullmatch(read[0].strip()):
            return read[0].strip()
        found.append(
            invalid_annotation(
                ingress, read[1], f"{read[0][:60]!r} does not parse; the annotation is dropped"
            )
        )
        return None

    mode = text("affinity-mode", re.compile("balanced|persistent"))
    samesite = annotation_value(ingress, "session-cookie-samesite")
    secure = text("session-cookie-secure", re.compile("true|false"))
    conditional = text("session-cookie-conditional-samesite-none", re.compile("true|false"))
    change = text("session-cookie-change-on-failure", re.compile("true|false"))
    if samesite is not None and samesite[0].strip().lower() not in _SAMESITE:
        found.append(
            invalid_annotation(
                ingress,
                samesite[1],
                f"{samesite[0][:20]!r} is not None, Lax or Strict; it is dropped",
            )
        )
        samesite = None
    return Affinity(
        mode=mode or "balanced",
        cookie_name=text("session-cookie-name", _TOKEN) or "INGRESSCOOKIE",
        path=text("session-cookie-path", _PATH),
        domain=text("session-cookie-domain", _DOMAIN),
        expires=int(text("session-cookie-expires", _SECONDS) or 0),
        max_age=int(text("session-cookie-max-age", _SECONDS) or 0),
        samesite=None if samesite is None else _SAMESITE[samesite[0].strip().lower()],
        secure=None if secure is None else secure == "true",
        conditional_samesite_none=conditional == "true",
        change_on_failure=change == "true",
    )
