"""Where the CRDs that tests install live: Coxswain's and the official Gateway API ones, both in
the Helm chart, so that the tests, the emulator and ``helm install`` read the same files.

The Gateway API CRDs are the chart's ``gateway-api-crds`` subchart (``make gateway-api-crds``
replaces them; its README says why a subchart): one folder per release channel, byte for byte as
upstream publishes them, at the version its ``Chart.yaml`` names (``appVersion``), the one
version everything else reads. Tests use the standard channel, the one Coxswain implements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import yaml

ROOT: Final = Path(__file__).resolve().parents[2]
CHART: Final = ROOT / "helm" / "coxswain"
COXSWAIN_CRDS: Final = CHART / "crds"
GATEWAY_API_CHART: Final = CHART / "charts" / "gateway-api-crds"
GATEWAY_API_CHANNELS: Final = ("standard", "experimental")
GATEWAY_API_VERSION: Final[str] = yaml.safe_load(
    (GATEWAY_API_CHART / "Chart.yaml").read_text(encoding="utf-8")
)["appVersion"]
GATEWAY_API_CRDS: Final = GATEWAY_API_CHART / "standard"
