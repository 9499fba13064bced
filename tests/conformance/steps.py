"""Running a scenario's steps against the compiled world and the live proxy.

Each step runs in the test's client thread while the proxy serves (``run_proxy``); every
failure is collected with the step and case it belongs to, so that one run shows all that a
scenario gets wrong, as upstream's subtests do.
"""

from __future__ import annotations

import base64
import math
import os
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tests.conformance.cases import read_case
from tests.conformance.certificates import suite_tls
from tests.conformance.compare import compare_round_trip, is_failure
from tests.conformance.echo import encode_frame, pod_name, take_frame
from tests.conformance.exchange import Handshake, Target, calculate_host, round_trip
from tests.conformance.status_checks import STATUS_CHECKS
from tests.conformance.steps_grpc import GRPC_STEPS
from tests.conformance.steps_l4 import L4_STEPS
from tests.conformance.world import GATEWAY_ADDRESS

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conformance.cases import Case
    from tests.conformance.world import Compiled, World
    from tests.integration.proxy_harness import Running

__all__ = ["Session"]

# Weighted distributions: upstream's tolerance; fewer requests than its 500, the proxy's
# choices seeded so that the verdict is the same on every run. 200 requests put a 10-point
# error in the split (say 60/40 for 70/30) 4.4 standard deviations out of tolerance.
WEIGHT_TOLERANCE: Final = 0.05
WEIGHT_REQUESTS: Final = 200
WEIGHT_SEED: Final = 1
_TRAFFIC_STEPS: Final = {**L4_STEPS, **GRPC_STEPS}
MIRROR_WAIT: Final = 5.0  # seconds for a mirrored copy to arrive; upstream's RequestTimeout is 10


@dataclass
class Session:
    """One scenario's run: the world, what it compiled to, the proxy, and the failures."""

    world: World
    compiled: Compiled
    running: Running
    recompile: Callable[[], Compiled]
    failures: list[str] = field(default_factory=list)

    def run(self, steps: tuple[dict[str, Any], ...]) -> None:
        for number, step in enumerate(steps):
            ((kind, args),) = step.items()
            where = f"step {number} ({kind})"
            if kind in STATUS_CHECKS:
                if problem := STATUS_CHECKS[kind](self.compiled, **args):
                    self.failures.append(f"{where}: {problem}")
            elif kind in _TRAFFIC_STEPS:
                problems = _TRAFFIC_STEPS[kind](self._port, self.running, **args)
                self.failures.extend(f"{where}: {problem}" for problem in problems)
            elif kind == "requests":
                self._requests(where, **args)
            elif kind == "weights":
                self._weights(where, **args)
            elif kind == "websocket":
                self._websocket(where, **args)
            elif kind == "mirror_percentages":
                self._mirror_percentages(where, **args)
            elif kind == "backend_header_names_pod":
                self._backend_header_names_pod(where, **args)
            elif kind == "apply":
                self.world.apply(args)
                self.compiled = self.recompile()
            elif kind in ("patch", "copy", "delete"):
                getattr(self.world, kind)(**args)
                self.compiled = self.recompile()
            else:
                raise ValueError(f"{where}: unknown step")

    def _port(self, gateway: str, listener: str | None) -> int:
        """The proxy's port for a Gateway's listener (the one named, else its first)."""
        return self.compiled.target_port(gateway, self.world.listener(gateway, listener)[0])

    def _target(self, gateway: str, listener: str | None, tls: str | None) -> Target:
        name, port = self.world.listener(gateway, listener)
        trust = suite_tls()[1].trust[tls] if tls else None
        return Target(self.compiled.target_port(gateway, name), f"{GATEWAY_ADDRESS}:{port}", trust)

    def _requests(
        self, where: str, *, gateway: str, cases: list[dict[str, Any]],
        listener: str | None = None, tls: str | None = None,
    ) -> None:  # fmt: skip
        for index, data in enumerate(cases):
            case = read_case(data)
            target = self._target(gateway, case.listener or listener, tls)
            label = f"{where} case {index} {case.name or case.method + ' ' + case.host + case.path}"
            if problem := self._exchange(target, case):
                self.failures.append(f"{label}: {problem}")

    def _exchange(self, target: Target, case: Case) -> str | None:
        seen = {key: len(log) for key, log in self.running.received.items()}
        handshake = Handshake()
        try:
            captured = round_trip(target, case, suite_tls()[1].leaves, handshake)
        except OSError as err:
            if case.client_cert and not handshake.certificate_requested:
                return f"request failed ({err!r}) and the server asked for no client certificate"
            return None if case.expect_error else f"request failed: {err!r}"
        if case.client_cert and not handshake.certificate_requested:
            return "client certificate was not presented during the handshake"
        if case.expect_error:
            return f"expected the request to fail, got a response {captured.status}"
        problem = (
            is_failure(captured) if case.expect_failure else compare_round_trip(case, captured)
        )
        if problem:
            return problem
        for mirror in case.mirrored_to:
            if not self._mirrored(mirror, seen[mirror], case.path):
                return f"mirror {mirror} did not get {case.path} within {MIRROR_WAIT} s"
        return None

    def _mirrored(self, mirror: str, since: int, path: str) -> bool:
        """Whether ``mirror`` got ``path`` after its first ``since`` requests: a mirror is sent
        beside the request, and may arrive after the answer (upstream polls the logs)."""
        deadline = time.monotonic() + MIRROR_WAIT
        while True:
            if any(r["path"] == path for r in self.running.received[mirror][since:]):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def _weights(
        self, where: str, *, gateway: str, path: str, weights: dict[str, float],
        host: str = "", listener: str | None = None,
    ) -> None:  # fmt: skip
        """``TestWeightedDistribution``: every backend of weight above 0 gets traffic, and
        each its share within the tolerance; no other backend answers."""
        target = self._target(gateway, listener, None)
        self.running.proxy.rng.seed(WEIGHT_SEED)
        pods = {pod_name(*key.split("/")[::-1]): key for key in weights}
        seen = dict.fromkeys(weights, 0)
        case = read_case({"path": path, "host": host})
        for _ in range(WEIGHT_REQUESTS):
            pod = round_trip(target, case).request.get("pod", "")
            if pod not in pods:
                self.failures.append(f"{where}: answered by an unexpected pod {pod!r}")
                return
            seen[pods[pod]] += 1
        for key, share in weights.items():
            got = seen[key] / WEIGHT_REQUESTS
            if (share > 0) != (got > 0) or abs(got - share) > WEIGHT_TOLERANCE:
                self.failures.append(f"{where}: {key} got {got:.3f} of the traffic, not {share}")

    def _mirror_percentages(
        self, where: str, *, gateway: str, case: dict[str, Any], percents: dict[str, int]
    ) -> None:
        """``testMirroredRequestsDistribution``: each case answered as expected, and each
        mirror's share of copies within 3 standard deviations of its percentage."""
        self.running.proxy.rng.seed(WEIGHT_SEED)
        target = self._target(gateway, None, None)
        expected = read_case(case)
        seen = {key: len(self.running.received[key]) for key in percents}
        for _ in range(WEIGHT_REQUESTS):
            if problem := compare_round_trip(expected, round_trip(target, expected)):
                self.failures.append(f"{where}: {problem}")
                return
        time.sleep(0.2)  # the last copies may still be on their way
        for key, percent in percents.items():
            got = sum(r["path"] == expected.path for r in self.running.received[key][seen[key] :])
            share = percent / 100
            margin = 3 * math.sqrt(WEIGHT_REQUESTS * share * (1 - share))
            if abs(got - WEIGHT_REQUESTS * share) > margin:
                self.failures.append(
                    f"{where}: {key} got {got} of {WEIGHT_REQUESTS}, not {percent}%"
                )

    def _backend_header_names_pod(
        self, where: str, *, gateway: str, header: str, requests: int, path: str = "/"
    ) -> None:
        """``HTTPRouteRequestHeaderModifierBackendWeights``: the header each backendRef's
        filter sets names the pod that received the request, on every request."""
        target = self._target(gateway, None, None)
        case = read_case({"path": path})
        for _ in range(requests):
            received = round_trip(target, case).request
            values = received.get("headers", {}).get(header, [])
            if len(values) != 1 or not received.get("pod", "").startswith(values[0]):
                self.failures.append(
                    f"{where}: {header} {values} on a request to {received.get('pod')}"
                )
                return

    def _websocket(self, where: str, *, gateway: str, path: str, messages: list[str]) -> None:
        """``HTTPRouteBackendProtocolWebSocket``: a WebSocket opened through the Gateway
        (RFC 6455 §4.1) gets each message, text then binary, echoed back whole."""
        target = self._target(gateway, None, None)
        key = base64.b64encode(os.urandom(16)).decode()
        with socket.create_connection(("127.0.0.1", target.port), timeout=10) as sock:
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: {calculate_host(target.gateway_address, 'http')}\r\n"
                f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\nOrigin: ws://gateway/{where}\r\n\r\n".encode()
            )
            buffer = bytearray()
            while b"\r\n\r\n" not in buffer:
                buffer += _received(sock)
            head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                self.failures.append(f"{where}: no switch: {head!r}")
                return
            buffer = bytearray(rest)
            for opcode, message in [(0x1, messages[0].encode()), (0x2, bytes(range(1, 8)))]:
                sock.sendall(encode_frame(opcode, message, os.urandom(4)))
                while (frame := take_frame(buffer)) is None:
                    buffer += _received(sock)
                if frame != (opcode, message):
                    self.failures.append(f"{where}: sent {message!r}, got {frame!r}")


def _received(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    if not data:
        raise ConnectionError("the WebSocket connection closed early")
    return data
