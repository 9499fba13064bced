"""The traffic steps of the GRPCRoute scenarios (the ``GATEWAY-GRPC`` profile).

Each step names a Gateway and optionally a listener (else its first), is sent over h2c with
prior knowledge to the proxy's port for that listener, and returns its problems (empty when
it met upstream's expectations):

- ``grpc``: ``MakeRequestAndExpectEventuallyConsistentResponse`` for each case: ``method``
  (``Echo``, ``EchoTwo`` or ``EchoThree``), ``metadata``, ``authority`` (the address dialled
  when not given), and what must come of it: ``code`` (``OK`` unless given), and for an OK
  call ``backend`` (the pod's prefix) and ``namespace`` (upstream's ``compareResponse``);
- ``grpc_weights``: ``TestWeightedDistribution`` over ``Echo`` calls, each on a new
  connection with its own ``x-jitter`` metadata as upstream's ``AddEntropy`` adds, the pod's
  Deployment counted by ``namespace/name`` (:func:`.steps_l4.weights_step`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final

import grpc

from tests.conformance.echo_grpc import call_echo
from tests.conformance.steps_l4 import weights_step

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.proxy_harness import Running

__all__ = ["GRPC_STEPS"]

_CASE_FIELDS: Final = {"method", "metadata", "authority", "code", "backend", "namespace"}


def _channel(port: int, authority: str = "") -> grpc.Channel:
    """A channel to the proxy's ``port`` whose calls carry ``authority``
    (``grpc.WithAuthority``), else the address dialled, as upstream's client sends."""
    options = [("grpc.default_authority", authority)] if authority else []
    return grpc.insecure_channel(f"127.0.0.1:{port}", options=options)


def _case_problem(port: int, case: dict[str, Any]) -> str | None:
    if unknown := set(case) - _CASE_FIELDS:
        raise ValueError(f"unknown gRPC case fields: {sorted(unknown)}")
    with _channel(port, case.get("authority", "")) as channel:
        answer = call_echo(channel, case.get("method", "Echo"), case.get("metadata", {}))
    code = case.get("code", "OK")
    if answer.code != code:
        return f"status {answer.code}, not {code}"
    if code != "OK":
        return None
    method = case.get("method", "Echo")
    if not answer.method.endswith(f"/{method}"):
        return f"the echo was called as {answer.method!r}, not {method}"
    namespace = case.get("namespace", "")
    if namespace and answer.namespace != namespace:
        return f"namespace {answer.namespace!r}, not {namespace!r}"
    backend = case.get("backend", "")
    if not answer.pod.startswith(backend):
        return f"answered by pod {answer.pod!r}, not one of {backend!r}"
    return None


def _grpc(
    port: Callable[[str, str | None], int], running: Running, *, gateway: str,
    cases: list[dict[str, Any]], listener: str | None = None,
) -> list[str]:  # fmt: skip
    target = port(gateway, listener)
    problems = []
    for index, case in enumerate(cases):
        if problem := _case_problem(target, case):
            label = f"{case.get('authority', '')} {case.get('method', 'Echo')}".strip()
            problems.append(f"case {index} ({label} {case.get('metadata', {})}): {problem}")
    return problems


def _grpc_pod(port: int) -> str:
    """One ``Echo`` on a new connection (upstream samples with a new client each time), with
    ``x-jitter`` metadata as ``AddEntropy`` adds; the pod that answered."""
    with _channel(port) as channel:
        answer = call_echo(channel, "Echo", {"x-jitter": os.urandom(4).hex()})
    if answer.code != "OK":
        raise ValueError(f"status {answer.code}")
    return answer.pod


GRPC_STEPS: Final[dict[str, Callable[..., list[str]]]] = {
    "grpc": _grpc,
    "grpc_weights": weights_step(_grpc_pod),
}
