"""Upstream's verdict on one exchange: ``CompareRoundTrip`` of
``conformance/utils/http/http.go`` (v1.6.1), rule for rule.

1. A 408 or 504 passes when the case accepts either (timeouts).
2. The status must be one the case accepts.
3. On 200 and 204 (a CORS preflight): the request the backend received must have the expected
   host (when one is set), path and method (the request's unless the case says otherwise,
   GET by default), namespace; the expected headers (values of one name joined with ``,``);
   the response the expected headers, one of the valid values for others (whitespace removed
   with ``ignore_whitespace``), none of the absent ones; the request none of its absent
   headers; the pod's name must start with the expected backend's; and, when the case
   expects them, the backend's TLS must have received the SNI and the client certificate
   (the ``tls`` of the echo's answer).
4. On a redirect with an expectation: host (any when unset), port (when unset: 80 or none for
   http, 443 or none for https), scheme and path (the request's when unset) must match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tests.conformance.cases import ExpectedRequest
from tests.conformance.certificates import suite_tls

if TYPE_CHECKING:
    from tests.conformance.cases import Case
    from tests.conformance.exchange import Captured

__all__ = ["compare_round_trip", "is_failure"]

_TIMEOUTS: Final = frozenset({408, 504})
_REDIRECTS: Final = frozenset({300, 301, 302, 303, 304, 305, 307, 308})


def _joined(values: list[str], ignore_whitespace: bool) -> str:
    text = ",".join(values)
    return text.replace(" ", "") if ignore_whitespace else text


def _lowered(headers: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name.lower(): values for name, values in headers.items()}


def _compare_response_headers(case: Case, got: dict[str, list[str]]) -> str | None:
    strip = case.ignore_whitespace
    for name, valid in case.valid_header_values.items():
        if name.lower() not in got:
            return f"expected {name} header to be set, actual headers: {got}"
        value = _joined(got[name.lower()], strip)
        if value not in [v.replace(" ", "") if strip else v for v in valid]:
            return f"expected {name} header to be set to one of {list(valid)}, got {value}"
    for name, expected in case.response_headers.items():
        if name.lower() not in got:
            return f"expected {name} header to be set, actual headers: {got}"
        value = _joined(got[name.lower()], strip)
        if value != (expected.replace(" ", "") if strip else expected):
            return f"expected {name} header to be set to {expected}, got {value}"
    for name in case.absent_response_headers:
        if name.lower() in got:
            return f"expected {name} header to not be set, got {got[name.lower()]}"
    return None


def _compare_received(case: Case, captured: Captured) -> str | None:
    expected = case.expected_request or ExpectedRequest(
        host=case.host, method=case.method, path=case.path, headers=case.headers or None,
        sni=case.sni, client_cert=case.backend_client_cert,
    )  # fmt: skip
    received = captured.request
    if expected.host and expected.host != received.get("host", ""):
        return f"expected host to be {expected.host}, got {received.get('host', '')}"
    if expected.path != received.get("path", ""):
        return f"expected path to be {expected.path}, got {received.get('path', '')}"
    if (expected.method or "GET") != received.get("method", ""):
        return f"expected method to be {expected.method or 'GET'}, got {received.get('method')}"
    if case.namespace != received.get("namespace", ""):
        return f"expected namespace to be {case.namespace}, got {received.get('namespace', '')}"
    headers = _lowered(received.get("headers") or {})
    for name, value in (expected.headers or {}).items():
        if name.lower() not in headers:
            return f"expected {name} header to be set, actual headers: {headers}"
        if ",".join(headers[name.lower()]) != value:
            return f"expected {name} header to be set to {value}, got {headers[name.lower()]}"
    if expected.http_port and expected.http_port != received.get("httpPort", ""):
        return f"expected httpPort {expected.http_port!r}, got {received.get('httpPort')!r}"
    if problem := _compare_response_headers(case, captured.headers):
        return problem
    for name in expected.absent_headers:
        if name.lower() in headers:
            return f"expected {name} header to not be set, got {headers[name.lower()]}"
    if not str(received.get("pod", "")).startswith(case.backend):
        return f"expected pod name to start with {case.backend}, got {received.get('pod', '')}"
    tls = received.get("tls") or {}
    if expected.sni and expected.sni != tls.get("serverName"):
        return f"expected SNI {expected.sni!r}, got {tls.get('serverName')!r}"
    if expected.client_cert and suite_tls()[1].certificate_pem(expected.client_cert) not in (
        tls.get("peerCertificates") or []
    ):
        return "expected client certificate was not captured"
    return None


def _compare_redirect(case: Case, captured: Captured) -> str | None:
    want, got = case.redirect, captured.redirect
    if want is None or got is None:
        return None
    scheme = want.scheme or captured.url.partition(":")[0]
    path = want.path or case.path.partition("?")[0]
    if (want.host or got.host) != got.host:
        return f"expected redirected hostname to be {want.host!r}, got {got.host!r}"
    if want.port:
        if want.port != got.port:
            return f"expected redirected port to be {want.port!r}, got {got.port!r}"
    elif got.scheme.lower() == "http" and got.port not in ("80", ""):
        return f"for http scheme, expected redirected port to be 80 or not set, got {got.port!r}"
    elif got.scheme.lower() == "https" and got.port not in ("443", ""):
        return f"for https scheme, expected redirected port to be 443 or not set, got {got.port!r}"
    if scheme != got.scheme:
        return f"expected redirected scheme to be {scheme!r}, got {got.scheme!r}"
    if path != got.path:
        return f"expected redirected path to be {path!r}, got {got.path!r}"
    return None


def compare_round_trip(case: Case, captured: Captured) -> str | None:
    """Why the exchange does not meet the case, or None when it does."""
    if captured.status in _TIMEOUTS and _TIMEOUTS & set(case.status):
        return None
    if captured.status not in case.status:
        return f"expected status code to be one of {list(case.status)}, got {captured.status}"
    if captured.status in (200, 204):
        return _compare_received(case, captured)
    if captured.status in _REDIRECTS:
        return _compare_redirect(case, captured)
    return None


def is_failure(captured: Captured) -> str | None:
    """``MakeRequestAndExpectFailure``: why the exchange is no failure, or None. Upstream
    takes a 408 or 504 for "not settled yet" and retries; with nothing left to settle here it
    is no failure either."""
    if captured.status == 200 or captured.status in _TIMEOUTS:
        return f"expected a failure, got {captured.status}"
    return None
