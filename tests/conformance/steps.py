"""Running a scenario's steps against the compiled world and the live proxy.

Each step runs in the test's client thread while the proxy serves (``run_proxy``); every
failure is collected with the step and case it belongs to, so that one run shows all that a
scenario gets wrong, as upstream's subtests do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tests.conformance.cases import read_case
from tests.conformance.certificates import suite_tls
from tests.conformance.compare import compare_round_trip, is_failure
from tests.conformance.echo import pod_name
from tests.conformance.exchange import Target, round_trip
from tests.conformance.status_checks import STATUS_CHECKS
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
            elif kind == "requests":
                self._requests(where, **args)
            elif kind == "weights":
                self._weights(where, **args)
            elif kind == "apply":
                self.world.apply(args)
                self.compiled = self.recompile()
            elif kind in ("patch", "delete"):
                getattr(self.world, kind)(**args)
                self.compiled = self.recompile()
            else:
                raise ValueError(f"{where}: unknown step")

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
        try:
            captured = round_trip(target, case, suite_tls()[1].client_certs)
        except OSError as err:
            return f"request failed: {err!r}"
        problem = (
            is_failure(captured) if case.expect_failure else compare_round_trip(case, captured)
        )
        if problem:
            return problem
        for mirror in case.mirrored_to:
            paths = [r["path"] for r in self.running.received[mirror][seen[mirror] :]]
            if case.path not in paths:
                return f"mirror {mirror} did not get {case.path}, got {paths}"
        return None

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
