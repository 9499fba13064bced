"""Scenario files: one upstream conformance test each, its expectations as data.

``scenarios/<ShortName>.yaml`` (the upstream ``ShortName``) holds:

- ``upstream``: the Go file it is transcribed from (``conformance/tests/…go`` at v1.6.1);
- ``features``: the test's ``Features``; a scenario runs only when the GatewayClass status of
  the compiler declares every one of them (``supportedFeatures``), as the suite skips tests of
  features an implementation does not support;
- ``manifests``: the test's ``Manifests`` (under ``manifests/``), applied after the base;
- ``fill`` (optional): EndpointSlices of those manifests the test fills with a Deployment's
  pods, by ``namespace/name``;
- ``config`` (optional): ``CompileConfig`` fields this scenario sets, for what the upstream
  suite leaves to the implementer's setup (the ranges its static addresses come from);
- ``skip`` or ``xfail`` (optional): why the scenario cannot run here, or what Coxswain gets
  wrong (strict: the scenario must fail);
- ``steps``: the test's checks in order: a status check (:data:`.status_checks.STATUS_CHECKS`),
  ``requests`` (a target and its cases, :mod:`.cases`), ``weights`` (a weighted
  distribution), layer-4 traffic (:mod:`.steps_l4`), gRPC calls (:mod:`.steps_grpc`),
  ``apply`` (a manifest applied), ``patch`` (one field of an object set, its generation
  bumped), ``copy`` (an object created from another) or ``delete`` (an object
  deleted); after those four everything is recompiled and the proxy reloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = ["SCENARIOS", "Scenario", "read_scenarios"]

SCENARIOS: Final = Path(__file__).parent / "scenarios"
_FIELDS: Final = {"upstream", "features", "manifests", "fill", "config", "skip", "xfail", "steps"}


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario file, read."""

    name: str
    upstream: str
    features: tuple[str, ...]
    manifests: tuple[str, ...]
    fill: dict[str, str]
    config: dict[str, Any]
    skip: str
    xfail: str
    steps: tuple[dict[str, Any], ...]


def read_scenarios() -> list[Scenario]:
    """Every scenario file, sorted by name; an unknown field is an error."""
    found = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if unknown := set(data) - _FIELDS:
            raise ValueError(f"{path.name}: unknown fields {sorted(unknown)}")
        found.append(
            Scenario(
                name=path.stem,
                upstream=data["upstream"],
                features=tuple(data["features"]),
                manifests=tuple(data.get("manifests", ())),
                fill=dict(data.get("fill", {})),
                config=dict(data.get("config", {})),
                skip=data.get("skip", ""),
                xfail=data.get("xfail", ""),
                steps=tuple(data.get("steps", ())),
            )
        )
    return found
