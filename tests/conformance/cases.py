"""One request of a conformance test and what must come of it, as the scenarios write it.

The fields are those of upstream's ``ExpectedResponse`` (``conformance/utils/http/http.go``,
v1.6.1), flattened and in snake case; defaults are upstream's (GET, status 200, the expected
request equal to the request sent). A case is read from the ``cases`` of a ``requests`` step
of a scenario file (``scenarios/<ShortName>.yaml``); an unknown field is an error, so that a
typo cannot turn an expectation off.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Case", "ExpectedRequest", "Redirect", "read_case"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedRequest:
    """What the backend must receive (upstream ``ExpectedRequest``); ``None`` fields and an
    empty ``headers`` are not compared, as upstream leaves them unset."""

    host: str = ""
    method: str = ""
    path: str = ""
    headers: dict[str, str] | None = None
    absent_headers: tuple[str, ...] = ()
    http_port: str = ""
    sni: str = ""  # the SNI the backend's TLS received (upstream ``Request.SNI``)
    client_cert: str = ""  # namespace/name of the Secret whose certificate the backend received


@dataclass(frozen=True, slots=True, kw_only=True)
class Redirect:
    """Upstream ``RedirectRequest``: an empty field takes the default ``CompareRoundTrip``
    gives it (host: any; scheme and path: the request's; port: the scheme's)."""

    scheme: str = ""
    host: str = ""
    port: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One ``ExpectedResponse``."""

    name: str = ""
    host: str = ""
    method: str = "GET"
    path: str = "/"
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    server_name: str = ""  # the SNI and the name the certificate must have (HTTPS)
    # upstream ``Request.Protocol``: "H2" (over TLS, ALPN h2), H2C_PRIOR_KNOWLEDGE, or HTTP/1.1
    protocol: str = ""
    client_cert: str = ""  # namespace/name of the Secret whose certificate the client presents
    sni: str = ""  # upstream ``Request.SNI``: not sent, expected at the backend (TLS to it)
    backend_client_cert: str = ""  # upstream ``Request.ClientCert``: expected at the backend
    listener: str | None = None  # the listener whose port the request goes to (its address)
    expected_request: ExpectedRequest | None = None
    status: tuple[int, ...] = (200,)
    response_headers: dict[str, str] = field(default_factory=dict)
    valid_header_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    absent_response_headers: tuple[str, ...] = ()
    ignore_whitespace: bool = False
    backend: str = ""
    namespace: str = ""
    redirect: Redirect | None = None
    backend_set_response_headers: dict[str, str] = field(default_factory=dict)
    mirrored_to: tuple[str, ...] = ()  # namespace/name of each mirror's Deployment
    expect_failure: bool = False  # MakeRequestAndExpectFailure: anything but 200 or a timeout
    expect_error: bool = False  # MakeTLSRequestAndExpectFailureResponse: no response at all


def _known(kind: type, data: dict[str, Any]) -> None:
    unknown = set(data) - {f.name for f in fields(kind)}
    if unknown:
        raise ValueError(f"unknown {kind.__name__} fields: {sorted(unknown)}")


def read_case(data: dict[str, Any]) -> Case:
    """A case from its scenario-file form."""
    _known(Case, data)
    values = dict(data)
    if "expected_request" in values:
        expected = dict(values["expected_request"])
        _known(ExpectedRequest, expected)
        expected["absent_headers"] = tuple(expected.get("absent_headers", ()))
        values["expected_request"] = ExpectedRequest(**expected)
    if "redirect" in values:
        _known(Redirect, values["redirect"])
        values["redirect"] = Redirect(**values["redirect"])
    status = values.get("status", 200)
    values["status"] = tuple(status) if isinstance(status, list) else (status,)
    for name in ("absent_response_headers", "mirrored_to"):
        values[name] = tuple(values.get(name, ()))
    values["valid_header_values"] = {
        k: tuple(v) for k, v in values.get("valid_header_values", {}).items()
    }
    return Case(**values)
