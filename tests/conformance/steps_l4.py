"""The traffic steps of the TLSRoute, TCPRoute and UDPRoute scenarios.

Each step names a Gateway and optionally a listener (else its first, as the suite takes the
port of a Gateway's address), is sent to the proxy's port for that listener, and returns its
problems (empty when it met upstream's expectations):

- ``tcp``: ``MakeTCPRequestAndExpectEventuallyValidResponse``; with ``sni`` over TLS, the
  chain verified against the CA ConfigMap ``tls``; ``expect`` holds ``backend``,
  ``namespace``, ``backend_is_tls`` and ``hostname`` (:func:`.exchange_l4.tcp_checks`);
- ``tls_rejected``: ``MakeTLSConnectionAndExpectEventuallyConnectionRejection`` for ``sni``;
- ``udp``: ``ExpectEchoResponseFromBackend``, the answer's ``service`` and ``namespace``
  checked when given;
- ``dns``: the UDPRoute test's query for ``name``;
- ``tcp_weights`` and ``udp_weights``: ``TestWeightedDistribution`` over new connections or
  new UDP sessions (one socket each), the pod's Deployment counted by ``namespace/name``; a
  single backend of weight 1 is the multiple-routes tests' "only the oldest route".
"""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, Any, Final

from tests.conformance.certificates import suite_tls
from tests.conformance.echo import pod_name
from tests.conformance.exchange_l4 import (
    TIMEOUT,
    dns_answered,
    tcp_checks,
    tcp_pod,
    tls_rejected,
    udp_echo,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.proxy_harness import Running

__all__ = ["L4_STEPS", "weights_step"]

# As the HTTP weights (.steps): upstream's tolerance, fewer samples than its 500, the proxy's
# choices seeded so that the verdict is the same on every run.
_TOLERANCE: Final = 0.05
_SAMPLES: Final = 200
_SEED: Final = 1


def _tcp(
    port: Callable[[str, str | None], int], running: Running, *, gateway: str,
    expect: dict[str, Any], listener: str | None = None, sni: str | None = None,
    tls: str | None = None,
) -> list[str]:  # fmt: skip
    trust = suite_tls()[1].trust[tls] if tls else None
    problem = tcp_checks(port(gateway, listener), expect, sni=sni, trust=trust)
    return [problem] if problem else []


def _tls_rejected(
    port: Callable[[str, str | None], int], running: Running, *, gateway: str, sni: str,
    listener: str | None = None,
) -> list[str]:  # fmt: skip
    problem = tls_rejected(port(gateway, listener), sni)
    return [f"{sni}: {problem}"] if problem else []


def _udp(
    port: Callable[[str, str | None], int], running: Running, *, gateway: str,
    listener: str | None = None, service: str = "", namespace: str = "",
) -> list[str]:  # fmt: skip
    answer = udp_echo(port(gateway, listener))
    if isinstance(answer, str):
        return [answer]
    wanted = {"service": service, "namespace": namespace}
    return [
        f"{key} {answer.get(key)!r}, not {value!r}"
        for key, value in wanted.items()
        if value and answer.get(key) != value
    ]


def _dns(
    port: Callable[[str, str | None], int], running: Running, *, gateway: str, name: str,
    listener: str | None = None,
) -> list[str]:  # fmt: skip
    problem = dns_answered(port(gateway, listener), name)
    return [problem] if problem else []


def _udp_pod(target: int) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(("127.0.0.1", target))
        sock.send(b"gateway-api-conformance-udp-weight\n")
        return str(json.loads(sock.recv(4096))["pod"])


def weights_step(
    send: Callable[[int], str],
) -> Callable[..., list[str]]:
    """A weights step over ``send``, which sends one sample to a port and returns the pod
    that answered (raising ``OSError``, ``ValueError`` or ``KeyError`` when it failed)."""

    def step(
        port: Callable[[str, str | None], int], running: Running, *, gateway: str,
        weights: dict[str, float], listener: str | None = None,
    ) -> list[str]:  # fmt: skip
        target = port(gateway, listener)
        running.proxy.rng.seed(_SEED)
        pods = {pod_name(*key.split("/")[::-1]): key for key in weights}
        seen = dict.fromkeys(weights, 0)
        for _ in range(_SAMPLES):
            try:
                pod = send(target)
            except (OSError, ValueError, KeyError) as err:
                return [f"a sample failed: {err!r}"]
            if pod not in pods:
                return [f"answered by an unexpected pod {pod!r}"]
            seen[pods[pod]] += 1
        problems = []
        for key, share in weights.items():
            got = seen[key] / _SAMPLES
            if (share > 0) != (got > 0) or abs(got - share) > _TOLERANCE:
                problems.append(f"{key} got {got:.3f} of the traffic, not {share}")
        return problems

    return step


L4_STEPS: Final[dict[str, Callable[..., list[str]]]] = {
    "tcp": _tcp,
    "tls_rejected": _tls_rejected,
    "udp": _udp,
    "dns": _dns,
    "tcp_weights": weights_step(tcp_pod),
    "udp_weights": weights_step(_udp_pod),
}
