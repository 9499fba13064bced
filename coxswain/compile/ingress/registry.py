"""Every ingress-nginx annotation, and what Coxswain does with it.

Users moving from ingress-nginx keep their annotations, under its prefix
``nginx.ingress.kubernetes.io/`` or Coxswain's own ``coxswain-labs.dev/`` (the latter wins
when both are set). The names and their meaning are those of ingress-nginx's annotation
reference (docs/migrating-from-ingress-nginx.md holds the full table and each difference).
Each annotation is in one class:

- ``honoured``: behaves as ingress-nginx documents it;
- ``honoured-with-difference``: applied, with a difference the migration guide states;
- ``ignored``: accepted and without effect, because Coxswain needs no such setting (it streams
  bodies, so buffer sizes mean nothing) — harmless to leave;
- ``not-yet``: an ingress-nginx feature Coxswain does not implement yet; without effect;
- ``refused``: raw nginx configuration (``*-snippet`` and the like), never applied on
  purpose: it is the class of CVE-2025-1974, and Coxswain has no nginx to feed it to. The
  Ingress keeps serving without it;
- ``unknown``: a name under either prefix that ingress-nginx does not define either.

Every annotation that is not honoured gets a warning naming the Ingress and the annotation,
so that ``coxswain compile --emit diagnostics`` and the migration report
(``coxswain compile --emit migration``, :mod:`coxswain.compile.ingress.migration`) say
before the switch which Ingresses would behave differently. Pure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.objects import Ingress

__all__ = [
    "ANNOTATIONS",
    "PREFIXES",
    "AnnotationClass",
    "AnnotationInfo",
    "ClassifiedAnnotation",
    "annotation_value",
    "classify",
    "invalid_annotation",
]

PREFIXES: Final = ("coxswain-labs.dev/", "nginx.ingress.kubernetes.io/")
"""Coxswain's own prefix first: it wins over ingress-nginx's when both name one annotation."""


class AnnotationClass(enum.StrEnum):
    """What Coxswain does with an annotation (the module docstring says each)."""

    HONOURED = "honoured"
    DIFFERENT = "honoured-with-difference"
    IGNORED = "ignored"
    NOT_YET = "not-yet"
    REFUSED = "refused"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class AnnotationInfo:
    """One annotation's class and, unless honoured as documented, a phrase saying why."""

    klass: AnnotationClass
    note: str = ""


_H = AnnotationClass.HONOURED
_D = AnnotationClass.DIFFERENT
_I = AnnotationClass.IGNORED
_N = AnnotationClass.NOT_YET
_R = AnnotationClass.REFUSED

_STREAMS = "Coxswain streams request and response bodies, it has no buffers to size"
_RAW = "raw nginx configuration is never applied (the class of CVE-2025-1974)"
_NO_TLS_KNOBS = "Coxswain's TLS settings are its own (TLS 1.2 and 1.3, safe ciphers)"
_REGEX = (
    "RE2 syntax (no backreferences or lookaround, refused with a diagnostic), and regex "
    "matching applies to this Ingress's paths only, where ingress-nginx applies it to every "
    "path of the host"
)
_CORS = (
    "Gateway API CORS filter semantics: the allowed Origin is echoed (never *), a preflight "
    "from an origin not allowed gets 403"
)
_H1_ONLY = "applies to HTTP/1.1 backends; HTTP/2 backends keep the proxy's own"
_PEER = "the client is the connection's peer address; X-Forwarded-For is not consulted"
_FAIL_CLOSED = "the Ingress's paths answer 503 rather than serve unprotected"
_VARIABLES = (
    "of nginx variables only $request_uri, $uri, $args, $is_args, $host, $http_host and "
    "$scheme are expanded; others are refused with a diagnostic"
)

ANNOTATIONS: Final[Mapping[str, AnnotationInfo]] = {
    # Paths and rewrites
    "app-root": AnnotationInfo(_H),
    "rewrite-target": AnnotationInfo(_D, _REGEX),
    "use-regex": AnnotationInfo(_D, _REGEX),
    "x-forwarded-prefix": AnnotationInfo(_H, "sent with a rewrite-target, as ingress-nginx does"),
    "upstream-vhost": AnnotationInfo(_D, "a literal host[:port]; nginx variables are refused"),
    "server-alias": AnnotationInfo(
        _D, "each alias serves the virtual host of the Ingress's first rule host"
    ),
    "preserve-trailing-slash": AnnotationInfo(_N),
    # Redirects
    "ssl-redirect": AnnotationInfo(_H),
    "force-ssl-redirect": AnnotationInfo(_H),
    "from-to-www-redirect": AnnotationInfo(
        _D, "the Location names a port only when the request's Host did"
    ),
    "permanent-redirect": AnnotationInfo(_D, _VARIABLES),
    "permanent-redirect-code": AnnotationInfo(_H),
    "temporal-redirect": AnnotationInfo(_D, _VARIABLES),
    "temporal-redirect-code": AnnotationInfo(_H),
    "use-port-in-redirects": AnnotationInfo(_N),
    "relative-redirects": AnnotationInfo(_N),
    # Backends
    "backend-protocol": AnnotationInfo(
        _D, "HTTP, HTTPS, GRPC and GRPCS; AUTO_HTTP and FCGI are not implemented yet, answer 503"
    ),
    "service-upstream": AnnotationInfo(_H),
    "load-balance": AnnotationInfo(_I, "Coxswain balances with its own algorithm"),
    "upstream-hash-by": AnnotationInfo(_N),
    "upstream-hash-by-subset": AnnotationInfo(_N),
    "upstream-hash-by-subset-size": AnnotationInfo(_N),
    "proxy-http-version": AnnotationInfo(_I, "Coxswain speaks HTTP/1.1 or HTTP/2 to backends"),
    "proxy-ssl-secret": AnnotationInfo(_H),
    "proxy-ssl-verify": AnnotationInfo(_H),
    "proxy-ssl-verify-depth": AnnotationInfo(
        _D, "checked as a number; the chain is verified to the Secret's CA at any depth"
    ),
    "proxy-ssl-name": AnnotationInfo(
        _D,
        "a host name (nginx variables are refused); without it the name verified is the "
        "Service's <name>.<namespace>.svc, where nginx has its upstream's name",
    ),
    "proxy-ssl-server-name": AnnotationInfo(_H),
    "proxy-ssl-ciphers": AnnotationInfo(_I, _NO_TLS_KNOBS),
    "proxy-ssl-protocols": AnnotationInfo(_I, _NO_TLS_KNOBS),
    "proxy-ssl-session-reuse": AnnotationInfo(_I, _NO_TLS_KNOBS),
    "ssl-passthrough": AnnotationInfo(
        _D,
        "to the Service's endpoints, where ingress-nginx connects to its cluster IP (add "
        "service-upstream for that)",
    ),
    "default-backend": AnnotationInfo(_N),
    "custom-http-errors": AnnotationInfo(_N),
    "disable-proxy-intercept-errors": AnnotationInfo(_N),
    "fastcgi-index": AnnotationInfo(_N),
    "fastcgi-params-configmap": AnnotationInfo(_N),
    # Limits and timeouts
    "proxy-body-size": AnnotationInfo(
        _D,
        "a chunked body, or an HTTP/2 body without content-length, is streamed until it "
        "passes the limit, then 413; without the annotation the proxy's own "
        "--max-body-bytes applies (ingress-nginx: 1m)",
    ),
    "proxy-connect-timeout": AnnotationInfo(_D, _H1_ONLY),
    "proxy-send-timeout": AnnotationInfo(_D, _H1_ONLY),
    "proxy-read-timeout": AnnotationInfo(_D, _H1_ONLY),
    "proxy-next-upstream": AnnotationInfo(
        _D,
        "errors and timeouts are always tried again, even when not listed; a request with a "
        "body never is (non_idempotent is accepted, without effect)",
    ),
    "proxy-next-upstream-tries": AnnotationInfo(_D, "0 (unlimited) is bounded at 10 tries"),
    "proxy-next-upstream-timeout": AnnotationInfo(_H),
    "proxy-request-buffering": AnnotationInfo(_I, _STREAMS),
    "proxy-buffering": AnnotationInfo(_I, _STREAMS),
    "proxy-buffer-size": AnnotationInfo(_I, _STREAMS),
    "proxy-buffers-number": AnnotationInfo(_I, _STREAMS),
    "proxy-busy-buffers-size": AnnotationInfo(_I, _STREAMS),
    "proxy-max-temp-file-size": AnnotationInfo(_I, _STREAMS),
    "client-body-buffer-size": AnnotationInfo(_I, _STREAMS),
    "proxy-redirect-from": AnnotationInfo(_N),
    "proxy-redirect-to": AnnotationInfo(_N),
    "proxy-cookie-domain": AnnotationInfo(_N),
    "proxy-cookie-path": AnnotationInfo(_N),
    "connection-proxy-header": AnnotationInfo(
        _I, "Coxswain manages the backend connection's Connection header itself"
    ),
    # Traffic splitting
    "canary": AnnotationInfo(
        _D, "one canary per path; its Ingress's other annotations are not applied"
    ),
    "canary-by-header": AnnotationInfo(_H),
    "canary-by-header-value": AnnotationInfo(_H),
    "canary-by-header-pattern": AnnotationInfo(_D, "RE2 syntax, where ingress-nginx has PCRE"),
    "canary-by-cookie": AnnotationInfo(_H),
    "canary-weight": AnnotationInfo(_H),
    "canary-weight-total": AnnotationInfo(_H),
    "mirror-target": AnnotationInfo(_N),
    "mirror-host": AnnotationInfo(_N),
    "mirror-request-body": AnnotationInfo(_N),
    # Access and identity
    "whitelist-source-range": AnnotationInfo(_D, _PEER),
    "allowlist-source-range": AnnotationInfo(_D, _PEER),
    "denylist-source-range": AnnotationInfo(_D, _PEER),
    "auth-type": AnnotationInfo(_D, "basic; digest is not implemented and answers 503"),
    "auth-secret": AnnotationInfo(
        _D,
        "a Secret in the Ingress's own namespace; htpasswd hashes bcrypt, $apr1$, $1$ and "
        "{SHA} (DES crypt and SHA-crypt users cannot log in)",
    ),
    "auth-secret-type": AnnotationInfo(_D, "auth-file; auth-map is not implemented, answers 503"),
    "auth-realm": AnnotationInfo(_H),
    "auth-url": AnnotationInfo(
        _D,
        "an https URL's certificate is verified against the system's CAs (nginx verifies "
        "none); nginx variables in the URL are refused and the Ingress's paths answer 503",
    ),
    "auth-signin": AnnotationInfo(
        _D,
        "of nginx variables only $host, $http_host, $scheme, $request_uri and "
        "$escaped_request_uri are expanded; others are refused with a diagnostic",
    ),
    "auth-signin-redirect-param": AnnotationInfo(_H),
    "auth-method": AnnotationInfo(_H),
    "auth-response-headers": AnnotationInfo(_H),
    "auth-request-redirect": AnnotationInfo(
        _D, "a literal URL or path; nginx variables are refused"
    ),
    "auth-proxy-set-headers": AnnotationInfo(_N),
    "auth-always-set-cookie": AnnotationInfo(
        _D,
        "without it the auth service's Set-Cookie is added to every forwarded response, "
        "where nginx adds it to 2xx and 3xx ones only",
    ),
    "auth-cache-key": AnnotationInfo(
        _D,
        "of nginx variables $remote_addr, $host, $http_host, $scheme, $request_uri, $uri, "
        "$args, $http_* and $cookie_* are expanded; answers are remembered per proxy process",
    ),
    "auth-cache-duration": AnnotationInfo(_H),
    "auth-keepalive": AnnotationInfo(_I, "Coxswain pools its connections to auth services"),
    "auth-keepalive-share-vars": AnnotationInfo(_I, "an nginx subrequest setting"),
    "auth-keepalive-requests": AnnotationInfo(_I, "Coxswain pools its own connections"),
    "auth-keepalive-timeout": AnnotationInfo(_I, "Coxswain pools its own connections"),
    "enable-global-auth": AnnotationInfo(
        _I, "Coxswain has no global auth-url (ingress-nginx's ConfigMap global-auth-url)"
    ),
    "auth-tls-secret": AnnotationInfo(
        _D,
        "the client certificate must be issued directly by a CA of ca.crt (intermediates go "
        "there); a Secret without ca.crt makes the Ingress's paths answer 503",
    ),
    "auth-tls-verify-client": AnnotationInfo(_H),
    "auth-tls-verify-depth": AnnotationInfo(
        _D, "accepted; the certificate's issuer must be in ca.crt, whatever the depth"
    ),
    "auth-tls-error-page": AnnotationInfo(
        _D, "a 302 to it, also for a path (nginx serves a path internally)"
    ),
    "auth-tls-pass-certificate-to-upstream": AnnotationInfo(_H),
    "auth-tls-match-cn": AnnotationInfo(_D, "RE2 syntax, where ingress-nginx has PCRE"),
    "satisfy": AnnotationInfo(_N),
    "enable-cors": AnnotationInfo(_D, _CORS),
    "cors-allow-origin": AnnotationInfo(_D, _CORS),
    "cors-allow-methods": AnnotationInfo(_H),
    "cors-allow-headers": AnnotationInfo(_H),
    "cors-expose-headers": AnnotationInfo(_H),
    "cors-allow-credentials": AnnotationInfo(_H),
    "cors-max-age": AnnotationInfo(_H),
    "custom-headers": AnnotationInfo(_N),
    # Sessions and rate limits
    "affinity": AnnotationInfo(
        _D,
        "balanced keys are hashed onto the endpoints by rendezvous hashing, not ingress-nginx's "
        "ring, so a balanced session of ingress-nginx's may move once; on a path with a canary "
        "the canary decides",
    ),
    "affinity-mode": AnnotationInfo(_H),
    "affinity-canary-behavior": AnnotationInfo(_N),
    "session-cookie-name": AnnotationInfo(_H),
    "session-cookie-path": AnnotationInfo(_H),
    "session-cookie-domain": AnnotationInfo(_H),
    "session-cookie-expires": AnnotationInfo(_H),
    "session-cookie-max-age": AnnotationInfo(_H),
    "session-cookie-samesite": AnnotationInfo(_H),
    "session-cookie-conditional-samesite-none": AnnotationInfo(_H),
    "session-cookie-secure": AnnotationInfo(_H),
    "session-cookie-change-on-failure": AnnotationInfo(
        _D, "over HTTP/2 to the backend the cookie is not moved"
    ),
    "limit-rps": AnnotationInfo(_H),
    "limit-rpm": AnnotationInfo(_H),
    "limit-connections": AnnotationInfo(_H),
    "limit-burst-multiplier": AnnotationInfo(_H),
    "limit-whitelist": AnnotationInfo(_D, _PEER),
    "limit-allowlist": AnnotationInfo(_D, _PEER),
    "limit-rate": AnnotationInfo(_N),
    "limit-rate-after": AnnotationInfo(_N),
    # TLS towards clients
    "ssl-ciphers": AnnotationInfo(_I, _NO_TLS_KNOBS),
    "ssl-prefer-server-ciphers": AnnotationInfo(_I, _NO_TLS_KNOBS),
    "http2-push-preload": AnnotationInfo(_I, "HTTP/2 server push is obsolete (RFC 9113 §8.4)"),
    # Observability
    "enable-access-log": AnnotationInfo(_I, "Coxswain's access log is set per proxy"),
    "enable-rewrite-log": AnnotationInfo(_I, "an nginx debugging setting"),
    "enable-opentelemetry": AnnotationInfo(_N),
    "opentelemetry-trust-incoming-span": AnnotationInfo(_N),
    "opentelemetry-operation-name": AnnotationInfo(_N),
    # Web application firewall: nginx modules Coxswain does not have
    "enable-modsecurity": AnnotationInfo(_N),
    "enable-owasp-core-rules": AnnotationInfo(_N),
    "modsecurity-transaction-id": AnnotationInfo(_N),
    # Raw nginx configuration
    "configuration-snippet": AnnotationInfo(_R, _RAW),
    "server-snippet": AnnotationInfo(_R, _RAW),
    "auth-snippet": AnnotationInfo(_R, _RAW),
    "stream-snippet": AnnotationInfo(_R, _RAW),
    "modsecurity-snippet": AnnotationInfo(_R, _RAW),
}
"""Every annotation ingress-nginx defines (its annotation reference and its parsers), by name
without prefix."""

_REASONS: Final = {
    AnnotationClass.IGNORED: "AnnotationIgnored",
    AnnotationClass.NOT_YET: "AnnotationNotImplemented",
    AnnotationClass.REFUSED: "AnnotationRefused",
    AnnotationClass.UNKNOWN: "AnnotationUnknown",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassifiedAnnotation:
    """One annotation of an Ingress as written (``key``, with its prefix), its name without
    the prefix, and what Coxswain does with it."""

    key: str
    name: str
    info: AnnotationInfo

    @property
    def explanation(self) -> str:
        """A sentence for the diagnostic and the report."""
        klass = self.info.klass
        note = f": {self.info.note}" if self.info.note else ""
        if klass is AnnotationClass.REFUSED:
            return f"refused{note}; the rest of the Ingress is served"
        if klass is AnnotationClass.NOT_YET:
            return f"not implemented by Coxswain yet{note or '; it has no effect'}"
        if klass is AnnotationClass.IGNORED:
            return f"accepted and ignored{note}"
        if klass is AnnotationClass.UNKNOWN:
            return "ingress-nginx defines no such annotation; it has no effect"
        if klass is AnnotationClass.DIFFERENT:
            return f"honoured with a difference{note}"
        return "honoured"


def classify(ingress: Ingress) -> tuple[list[ClassifiedAnnotation], list[Diagnostic]]:
    """Every annotation of ``ingress`` under either prefix, in key order, and a warning for
    each that is not honoured as written. Pure."""
    classified: list[ClassifiedAnnotation] = []
    found: list[Diagnostic] = []
    for key in sorted(ingress.meta.annotations):
        prefix = next((p for p in PREFIXES if key.startswith(p)), None)
        if prefix is None:
            continue
        name = key[len(prefix) :]
        info = ANNOTATIONS.get(name, AnnotationInfo(AnnotationClass.UNKNOWN))
        item = ClassifiedAnnotation(key=key, name=name, info=info)
        classified.append(item)
        reason = _REASONS.get(info.klass)
        if reason is not None:
            found.append(
                Diagnostic(
                    key=ingress.meta.key,
                    field=f"metadata.annotations[{key!r}]",
                    # failing closed stops the Ingress serving: an error, not a warning
                    severity=Severity.ERROR if info.note == _FAIL_CLOSED else Severity.WARNING,
                    reason=reason,
                    message=item.explanation,
                )
            )
    return classified, found


def annotation_value(ingress: Ingress, name: str) -> tuple[str, str] | None:
    """The value of annotation ``name`` and the key it was read from (Coxswain's prefix
    first), or None when neither prefix sets it."""
    for prefix in PREFIXES:
        value = ingress.meta.annotations.get(prefix + name)
        if value is not None:
            return value, prefix + name
    return None


def invalid_annotation(
    ingress: Ingress, key: str, message: str, severity: Severity = Severity.WARNING
) -> Diagnostic:
    """The ``InvalidAnnotation`` finding of an annotation whose value does not parse."""
    return Diagnostic(
        key=ingress.meta.key,
        field=f"metadata.annotations[{key!r}]",
        severity=severity,
        reason="InvalidAnnotation",
        message=message,
    )
