"""Raw BackendTLSPolicy bodies → typed objects (gateway.networking.k8s.io/v1, GEP-1897). Total.

The lists are read as far as the CRD bounds them (``targetRefs`` 16, ``caCertificateRefs`` 8,
``subjectAltNames`` 5, ``options`` 16 keys); what lies past a bound is reported and ignored.
Targets the CRD's rules would refuse (the same target twice, with the same or no
``sectionName``) keep their first entry. Anything in ``validation`` that cannot be honoured as
written (no hostname, a hostname that is not a ``PreciseHostname``, both or neither of
``caCertificateRefs`` and ``wellKnownCACertificates``, a Subject Alternative Name without its
value) is kept in ``invalid``: the compiler refuses the policy rather than verify the backend
more loosely than asked. ``options`` keys are implementation-specific and Coxswain defines
none: each is reported as a warning and ignored.
"""

from __future__ import annotations

import re
from sys import intern
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.diagnostics import Severity
from coxswain.compile.hostnames import ascii_lower, is_hostname, is_wildcard
from coxswain.compile.model.decode_gateway import object_ref
from coxswain.compile.model.gateway_objects import BackendTLSPolicy, ObjectRef, PolicyTarget
from coxswain.compile.model.limits import preview
from coxswain.compile.snapshot import SubjectAltName

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = ["decode_backend_tls_policy"]

_MAX_TARGETS: Final = 16
_MAX_CA_REFS: Final = 8
_MAX_SANS: Final = 5
_MAX_OPTIONS: Final = 16
# Gateway API AbsoluteURI: a scheme, then "//" and an authority (RFC 3986), at most 253 long.
_ABSOLUTE_URI: Final = re.compile(r"[^:/?#]+://[^/?#]*[^?#]*(\?[^#]*)?(#.*)?")
_URI_MAX: Final = 253


def decode_backend_tls_policy(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> BackendTLSPolicy:
    """A BackendTLSPolicy; ``status`` is ours to write and never read."""
    del raw
    invalid: list[tuple[str, str]] = []
    validation = fields.mapping(spec.get("validation"), "spec.validation")
    if validation is None:
        invalid.append(("spec.validation", "the policy has no validation"))
        validation = {}
    hostname = _hostname(fields, validation.get("hostname"), invalid)
    ca_refs = _ca_refs(fields, validation.get("caCertificateRefs"))
    well_known = (
        fields.string(
            validation.get("wellKnownCACertificates"), "spec.validation.wellKnownCACertificates"
        )
        or None
    )
    if ca_refs and well_known is not None:
        invalid.append(
            (
                "spec.validation",
                "caCertificateRefs and wellKnownCACertificates cannot both be set",
            )
        )
    elif not ca_refs and well_known is None:
        invalid.append(
            (
                "spec.validation",
                "one of caCertificateRefs and wellKnownCACertificates must be set",
            )
        )
    sans = _subject_alt_names(fields, validation.get("subjectAltNames"), invalid)
    _options(fields, spec.get("options"))
    return BackendTLSPolicy(
        meta=meta,
        targets=pvector(_targets(fields, spec.get("targetRefs"))),
        ca_refs=pvector(ca_refs),
        well_known=well_known,
        hostname=hostname,
        subject_alt_names=pvector(sans),
        invalid=pvector(invalid),
        diagnostics=fields.diagnostics(),
    )


def _bounded(fields: FieldReader, raw: object, field: str, bound: int) -> list[Any]:
    items = fields.items(raw, field)
    if len(items) > bound:
        fields.problem(
            field,
            "InvalidField",
            f"{len(items)} entries, more than {bound}; those past the {bound}th are ignored",
        )
    return items[:bound]


def _targets(fields: FieldReader, raw: object) -> list[PolicyTarget]:
    targets: dict[tuple[str, str, str, str | None], PolicyTarget] = {}
    items = _bounded(fields, raw, "spec.targetRefs", _MAX_TARGETS)
    if not items:
        fields.problem("spec.targetRefs", "InvalidField", "the policy targets nothing")
    for index, item in enumerate(items):
        field = f"spec.targetRefs[{index}]"
        entry = fields.mapping(item, field)
        if entry is None:
            continue
        name = fields.string(entry.get("name"), f"{field}.name")
        if not name:
            fields.require(entry.get("name"), f"{field}.name", "the target has no name; ignored")
            continue
        target = PolicyTarget(
            group=fields.string(entry.get("group"), f"{field}.group") or "",
            kind=fields.string(entry.get("kind"), f"{field}.kind") or "",
            name=name,
            section_name=fields.string(entry.get("sectionName"), f"{field}.sectionName") or None,
            field=intern(field),
        )
        key = (target.group, target.kind, target.name, target.section_name)
        if key in targets:
            fields.problem(field, "InvalidField", "the same target is named twice; ignored")
            continue
        targets[key] = target
    return list(targets.values())


def _hostname(fields: FieldReader, raw: object, invalid: list[tuple[str, str]]) -> str:
    field = "spec.validation.hostname"
    hostname = fields.string(raw, field)
    if not hostname:
        invalid.append((field, "the policy has no hostname to send and verify"))
        return ""
    if not is_hostname(hostname) or hostname != ascii_lower(hostname):
        invalid.append((field, f"{preview(hostname)} is not a lower-case DNS name"))
    return hostname


def _ca_refs(fields: FieldReader, raw: object) -> list[ObjectRef]:
    where = "spec.validation.caCertificateRefs"
    refs = []
    for index, item in enumerate(_bounded(fields, raw, where, _MAX_CA_REFS)):
        # LocalObjectReference: the group and kind are required; no namespace can be written
        ref = object_ref(fields, item, f"{where}[{index}]", group="", kind="")
        if ref is not None:
            refs.append(ref)
    return refs


def _subject_alt_names(
    fields: FieldReader, raw: object, invalid: list[tuple[str, str]]
) -> list[SubjectAltName]:
    where = "spec.validation.subjectAltNames"
    found: list[SubjectAltName] = []
    for index, item in enumerate(_bounded(fields, raw, where, _MAX_SANS)):
        field = f"{where}[{index}]"
        entry = fields.mapping(item, field)
        if entry is None:
            invalid.append((field, "not an object"))
            continue
        kind = fields.string(entry.get("type"), f"{field}.type")
        hostname = fields.string(entry.get("hostname"), f"{field}.hostname") or ""
        uri = fields.string(entry.get("uri"), f"{field}.uri") or ""
        if kind == "Hostname" and not uri:
            if not (is_hostname(hostname) or is_wildcard(hostname)):
                invalid.append((f"{field}.hostname", f"{preview(hostname)} is not a DNS name"))
                continue
            found.append(SubjectAltName(type=kind, value=ascii_lower(hostname)))
        elif kind == "URI" and not hostname:
            if len(uri) > _URI_MAX or _ABSOLUTE_URI.fullmatch(uri) is None:
                invalid.append((f"{field}.uri", f"{preview(uri)} is not an absolute URI"))
                continue
            found.append(SubjectAltName(type=kind, value=uri))
        else:
            invalid.append(
                (
                    field,
                    f"type {preview(kind)} needs exactly its own value: hostname for "
                    "Hostname, uri for URI",
                )
            )
    return found


def _options(fields: FieldReader, raw: object) -> None:
    options = fields.string_map(raw, "spec.options")
    if len(options) > _MAX_OPTIONS:
        fields.problem(
            "spec.options", "InvalidField", f"{len(options)} keys, more than {_MAX_OPTIONS}"
        )
    for name in sorted(options)[:_MAX_OPTIONS]:
        fields.problem(
            f"spec.options[{name!r:.60}]",
            "UnsupportedValue",
            "Coxswain defines no BackendTLSPolicy option; ignored",
            Severity.WARNING,
        )
