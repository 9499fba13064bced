"""The discovery CA in a cluster: kept in a Secret, issuing proxies' certificate Secrets.

docs/contracts.md: the controller holds a CA and issues each proxy a certificate naming its
ServiceAccount. In a cluster the CA lives in the Secret ``coxswain-discovery-ca`` of the
controller namespace, so that a restarted (or newly elected) controller keeps trusting the
proxies already running; the first controller creates it, and a race between two creators is
settled by the API (409: read the winner's). Each proxy identity the state grants a scope gets
the Secret ``<serviceaccount>-discovery-tls`` in the ServiceAccount's namespace (``tls.crt``,
``tls.key``, ``ca.crt``), the one the Deployments rendered by ``compile.podspec`` and the Helm
chart mount. A certificate is re-issued when it is missing, not from this CA, or within
``RENEW_BEFORE`` (:mod:`.ca`) of expiring, and deleted once its identity is granted nothing
and its proxy is gone.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Final

from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.provision import MANAGED_BY, ROLE
from coxswain.shell.control.kinds import SECRET
from coxswain.shell.control.kube import ApiFailure, Kube
from coxswain.shell.control.pacing import Pacer
from coxswain.shell.discovery.ca import CertificateAuthority, IdentityError, create_ca, renewal_due

if TYPE_CHECKING:
    import datetime

    from coxswain.compile import ClusterState
    from coxswain.shell.control.provisioner import Provisioner

__all__ = [
    "CA_SECRET",
    "CERTIFICATE_ROLE",
    "TRUST_DOMAIN",
    "ProxyCertificates",
    "load_or_create_ca",
    "secret_name",
    "stale_proxy_secrets",
]

CA_SECRET: Final = "coxswain-discovery-ca"
TRUST_DOMAIN: Final = "cluster.local"
CERTIFICATE_ROLE: Final = "discovery-tls"  # the ``ROLE`` label of proxies' certificate Secrets
_SUFFIX: Final = "-discovery-tls"


def secret_name(service_account: str) -> str:
    """The certificate Secret of a proxy ServiceAccount (``compile.podspec`` mounts it)."""
    return f"{service_account}{_SUFFIX}"


async def load_or_create_ca(
    kube: Kube, namespace: str, *, now: datetime.datetime
) -> CertificateAuthority:
    """The CA of the Secret ``CA_SECRET``, created when absent.

    Raises:
        ApiFailure, Unreachable: the Secret can be neither read nor created.
    """
    secret_path = SECRET.path(namespace, CA_SECRET)
    try:
        return _ca_from(await kube.request("GET", secret_path))
    except ApiFailure as err:
        if err.status != 404:
            raise
    ca = create_ca(trust_domain=TRUST_DOMAIN, now=now)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": CA_SECRET,
            "namespace": namespace,
            "labels": {MANAGED_BY[0]: MANAGED_BY[1]},
        },
        "type": "Opaque",
        "data": {"ca.crt": _b64(ca.cert_pem), "ca.key": _b64(ca.key_pem)},
    }
    try:
        await kube.request("POST", SECRET.path(namespace), body=secret)
    except ApiFailure as err:
        if err.status != 409:
            raise
        return _ca_from(await kube.request("GET", secret_path))  # another won
    return ca


def _ca_from(secret: dict[str, Any]) -> CertificateAuthority:
    data = secret.get("data") or {}
    return CertificateAuthority(
        trust_domain=TRUST_DOMAIN,
        cert_pem=base64.b64decode(data.get("ca.crt", "")),
        key_pem=base64.b64decode(data.get("ca.key", "")),
    )


class ProxyCertificates:
    """Keeps a certificate Secret for each proxy identity, issued by the cluster's CA.

    Checking a certificate (parse and signature) takes 120–146 µs (docs/benchmarks.md,
    "Certificate checks"), and a round would check every granted identity's: tens of
    milliseconds on the event loop at hundreds of dedicated Gateways. So each certificate is
    checked once and its renewal time remembered, for as long as its Secret holds it; and the
    round after they were issued, checking 500 new ones (73 ms), checkpoints between checks
    (:mod:`.pacing`).
    """

    def __init__(self, provisioner: Provisioner, ca: CertificateAuthority) -> None:
        self._provisioner = provisioner
        self._ca = ca
        self._due: dict[str, datetime.datetime | None] = {}  # tls.crt (base64) → renewal time

    async def issue(
        self,
        identities: list[tuple[str, str]],
        secrets: dict[tuple[str, str], dict[str, Any]],
        *,
        now: datetime.datetime,
    ) -> None:
        """Apply a certificate Secret for each ``(namespace, serviceaccount)`` whose current one
        (in ``secrets``, by namespace and name) is missing, not from this CA, or due for
        renewal."""
        due: dict[str, datetime.datetime | None] = {}
        pacer = Pacer()
        for namespace, account in identities:
            name = secret_name(account)
            secret = secrets.get((namespace, name))
            if secret is not None:
                encoded = (secret.get("data") or {}).get("tls.crt", "")
                if encoded not in self._due:
                    self._due[encoded] = self._renewal(encoded)
                    await pacer.tick()
                renewal = due[encoded] = self._due[encoded]
                if renewal is not None and now < renewal:
                    continue
            await self._apply(namespace, name, account, now)
        self._due = due  # only certificates still held: the table follows the identities

    def _renewal(self, encoded: str) -> datetime.datetime | None:
        try:
            return renewal_due(base64.b64decode(encoded), self._ca.cert_pem)
        except (IdentityError, ValueError):
            return None

    async def _apply(self, namespace: str, name: str, account: str, now: datetime.datetime) -> None:
        issued = self._ca.issue_proxy(namespace=namespace, name=account, now=now)
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {MANAGED_BY[0]: MANAGED_BY[1], ROLE: CERTIFICATE_ROLE},
            },
            "type": "kubernetes.io/tls",
            "data": {
                "tls.crt": _b64(issued.cert_pem),
                "tls.key": _b64(issued.key_pem),
                "ca.crt": _b64(self._ca.cert_pem),
            },
        }
        await self._provisioner.apply("Secret", namespace, name, json.dumps(body, sort_keys=True))


def stale_proxy_secrets(
    certificates: dict[tuple[str, str], dict[str, Any]],
    identities: set[tuple[str, str]],
    state: ClusterState,
) -> list[ObjectKey]:
    """Certificate Secrets whose ServiceAccount is granted nothing any more and whose proxy is
    gone: a Gateway back in the shared pool, once its dedicated Deployment has been pruned
    (until then the proxy still runs, and may reconnect, with it)."""
    stale = []
    for namespace, name in certificates:
        account = name.removesuffix(_SUFFIX)
        running = ObjectKey("Deployment", namespace, account) in state.deployments
        if (namespace, account) not in identities and not running:
            stale.append(ObjectKey("Secret", namespace, name))
    return sorted(stale)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
