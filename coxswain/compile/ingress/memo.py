"""Ingress fragments remembered between compiles, reused by identity of what they read.

Why: docs/architecture.md, "Rules of the core" — unchanged inputs are the very same objects
of the persistent state, so "this Ingress and everything its fragment read are the objects
they were" is a few identity tests, where computing the fragment again parses every
annotation. A fragment (``compile.ingress.fragments``) depends only on its Ingress, the
Services and Secrets it names (its ``read``), whether its hosts have a certificate (its
``certified`` answers) and the installation's defaults; it is reused while all of those are the
same, so the assembled table is the one ``ingress_hosts`` gives without a memo. The memo is a
value its owner (``compile.memo.CompileMemo``) holds; it keeps one fragment per Ingress of the
last call, no more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.ingress.fragments import ingress_fragment

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.config import IngressDefaults
    from coxswain.compile.ingress.fragments import IngressFragment
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.objects import Ingress, Secret
    from coxswain.compile.snapshot import Certificate, VirtualHost

__all__ = ["IngressMemo"]


@dataclass(frozen=True, slots=True)
class _Entry:
    """A fragment and the objects its ``read`` keys named when it was computed."""

    fragment: IngressFragment
    objects: tuple[tuple[ObjectKey, object], ...]


class IngressMemo:
    """Fragments of the last call by Ingress key (``rules.FragmentCache``). Not thread-safe:
    one caller at a time, as ``CompileMemo``."""

    def __init__(self) -> None:
        self.computed = 0  # fragments computed, since creation
        self.reused = 0  # fragments reused, since creation
        self._entries: dict[ObjectKey, _Entry] = {}
        self._given: IngressDefaults | None = None
        self._certificates: PMap[str, Certificate] | None = None
        self._read_from: tuple[object, object] = (None, None)  # the Services and Secrets maps
        self.texts: dict[str, tuple[VirtualHost, str]] = {}  # snapshot_json.HostTexts

    def fragments(
        self,
        ingresses: Sequence[Ingress],
        services: ServiceIndex,
        certificates: PMap[str, Certificate],
        secrets: PMap[ObjectKey, Secret],
        given: IngressDefaults,
    ) -> list[IngressFragment]:
        """``ingress_fragment`` of each of ``ingresses``, in order."""
        if self._given is not given and self._given != given:
            self._entries.clear()
        self._given = given
        # certificates equal to the last call's give every host the answers it had
        kept_certificates = self._certificates is not None and (
            self._certificates is certificates or self._certificates == certificates
        )
        self._certificates = certificates
        # the same maps of Services and Secrets name the same objects under every key
        read_from = (services.state.services, secrets)
        kept_reads = all(a is b for a, b in zip(read_from, self._read_from, strict=True))
        self._read_from = read_from

        def certified(host: str) -> bool:
            return has_certificate(certificates, host)

        def named(key: ObjectKey) -> object:
            if key.kind == "Service":
                return services.service(key.namespace, key.name)
            return secrets.get(key) if key.kind == "Secret" else object()  # never the same

        kept: dict[ObjectKey, _Entry] = {}
        answer: list[IngressFragment] = []
        for ingress in ingresses:
            key = ingress.meta.key
            entry = self._entries.get(key)
            if (
                entry is not None
                and entry.fragment.ingress is ingress
                and (kept_reads or all(named(k) is obj for k, obj in entry.objects))
                and (
                    kept_certificates
                    or all(certified(host) is was for host, was in entry.fragment.certified)
                )
            ):
                self.reused += 1
            else:
                self.computed += 1
                fragment = ingress_fragment(ingress, services, certified, secrets, given)
                entry = _Entry(fragment, tuple((k, named(k)) for k in fragment.read))
            kept[key] = entry
            answer.append(entry.fragment)
        self._entries = kept
        return answer

    def kept(self, hosts: dict[str, VirtualHost]) -> dict[str, VirtualHost]:
        """``hosts``, each made of the same rules as the last call's virtual host of its name
        replaced by that one, whose hashed piece ``texts`` holds; the texts of hosts gone are
        dropped."""
        texts: dict[str, tuple[VirtualHost, str]] = {}
        for host, vhost in hosts.items():
            known = self.texts.get(host)
            if known is None:
                continue
            texts[host] = known
            if _same_parts(known[0], vhost):
                hosts[host] = known[0]
        self.texts = texts
        return hosts


def _same_parts(old: VirtualHost, new: VirtualHost) -> bool:
    """Whether two virtual hosts of one host hold the very same rules (so are equal)."""
    return (
        old.default is new.default
        and old.passthrough is new.passthrough
        and len(old.paths) == len(new.paths)
        and all(a is b for a, b in zip(old.paths, new.paths, strict=True))
    )
