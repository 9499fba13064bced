"""Where the CRDs that tests install live: Coxswain's chart and the official Gateway API ones.

The Gateway API CRDs are not vendored: as for the golden tests, they are read from
``$COXSWAIN_GATEWAY_API_CRDS``, by default the shared folder beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COXSWAIN_CRDS = ROOT / "helm" / "coxswain" / "crds"
GATEWAY_API_CRDS = Path(
    os.environ.get(
        "COXSWAIN_GATEWAY_API_CRDS", str(ROOT.parent / "shared" / "gateway-api" / "v1.6.1")
    )
)
