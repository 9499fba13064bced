"""ingress-nginx's client-certificate annotations, read into
:class:`~coxswain.compile.snapshot.ClientTLS` (docs/migrating-from-ingress-nginx.md, "Access
and limits"; the proxy's side: ``route.client_tls``). Pure.

Rules, ingress-nginx's (its annotation reference and its ``authtls`` parser):
1. ``auth-tls-secret`` names ``namespace/name`` (or ``name``) of a Secret in the Ingress's own
   namespace with a ``ca.crt``; otherwise the Ingress's paths answer 503
   (``compile.ingress.access``, rule 3), as ingress-nginx denies them.
2. ``auth-tls-verify-client``: ``on`` (default), ``off``, ``optional``, ``optional_no_ca``;
   another value is reported and ``on`` applies, as in ingress-nginx.
3. ``auth-tls-verify-depth``: a number from 1 (default; 0 or a bad value is 1).
4. ``auth-tls-error-page``: an ``http(s)`` URL or an absolute path; a bad one is reported and
   dropped (a failed check is then answered 400).
5. ``auth-tls-pass-certificate-to-upstream``: ``true`` or ``false`` (default).
6. ``auth-tls-match-cn``: a pattern (RE2 syntax, where nginx has PCRE) searched in the
   certificate's subject; one RE2 refuses makes the Ingress's paths answer 503 (rule 1).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from coxswain.compile.ingress.registry import annotation_value, invalid_annotation
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.regex import compile_pattern
from coxswain.compile.snapshot import ClientTLS

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.objects import Ingress, Secret

__all__ = ["read_client_tls"]

_VERIFY: Final = frozenset({"on", "off", "optional", "optional_no_ca"})
_PAGE: Final = re.compile(r"(https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?)?/[!-~]{0,2000}")


def read_client_tls(
    ingress: Ingress,
    secrets: PMap[ObjectKey, Secret],
    problems: list[tuple[str, str]],
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> ClientTLS | None:
    """The client-certificate check of ``ingress``, None without ``auth-tls-secret`` or when
    its Secret cannot be used (then ``problems`` says why, rule 1)."""
    named = annotation_value(ingress, "auth-tls-secret")
    if named is None:
        return None
    value, key = named
    namespace, _, name = value.strip().rpartition("/")
    own = ingress.meta.key.namespace
    if namespace not in ("", own):
        problems.append((key, f"names a Secret outside the Ingress's namespace {own}"))
        return None
    secret_key = ObjectKey("Secret", own, name)
    read.add(secret_key)
    secret = secrets.get(secret_key)
    if secret is None or not secret.ca_bundle:
        problems.append((key, f"names Secret {own}/{name}, which has no ca.crt"))
        return None
    verify = annotation_value(ingress, "auth-tls-verify-client")
    mode = "on" if verify is None else verify[0].strip()
    if mode not in _VERIFY:
        why = f"{mode[:20]!r} is not on, off, optional or optional_no_ca; on applies"
        found.append(invalid_annotation(ingress, verify[1] if verify else key, why))
        mode = "on"
    depth = annotation_value(ingress, "auth-tls-verify-depth")
    page = annotation_value(ingress, "auth-tls-error-page")
    if page is not None and not _PAGE.fullmatch(page[0].strip()):
        why = f"{page[0][:60]!r} is not a URL or an absolute path; a failed check answers 400"
        found.append(invalid_annotation(ingress, page[1], why))
        page = None
    match_cn = annotation_value(ingress, "auth-tls-match-cn")
    if match_cn is not None:
        refused = compile_pattern(f"(?s).*(?:{match_cn[0].strip()}).*")
        if isinstance(refused, str):
            problems.append((match_cn[1], f"is not an RE2 pattern: {refused}"))
            return None
    passed = annotation_value(ingress, "auth-tls-pass-certificate-to-upstream")
    return ClientTLS(
        ca_pem=secret.ca_bundle,
        verify=mode,
        depth=int(depth[0])
        if depth and depth[0].strip().isdigit() and 0 < int(depth[0]) < 100
        else 1,
        error_page=None if page is None else page[0].strip(),
        pass_certificate=passed is not None and passed[0].strip().lower() == "true",
        match_cn=None if match_cn is None else match_cn[0].strip(),
    )
