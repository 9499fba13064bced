"""Summing the Prometheus expositions of several worker processes into one.

Each worker of ``--workers N`` counts in a registry of its own (:mod:`.metrics`); the
supervisor's ``/metrics`` is their sum, so that a scrape sees the pod as a whole, as one
nginx or Envoy process would show it. Samples with the same name and labels are added:
right for counters, histogram buckets, sums and counts, and for the open-connections gauge;
``coxswain_snapshot_info{version}`` becomes the number of workers serving each version.
``*_created`` series (a counter's creation time) are dropped: a sum of times means nothing.

prometheus_client's multiprocess mode would do the same through files shared by the workers;
it needs an environment variable set before import, a shared directory cleaned at start, and
a mode chosen per gauge, and it would make every registry of the process shared (the tests run
several proxies in one process, each with its own registry), so the supervisor asks each
worker over HTTP instead.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["sum_expositions"]


def sum_expositions(texts: Iterable[str]) -> bytes:
    """One exposition in the Prometheus text format (0.0.4) whose samples are the sums of
    the same samples in ``texts``; families and samples keep their first-seen order."""
    families: dict[str, tuple[str, str]] = {}  # name → (type, help)
    samples: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            if family.name.endswith("_created"):
                continue
            families.setdefault(family.name, (family.type, family.documentation))
            sums = samples.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sample.labels.items()))
                sums[key] = sums.get(key, 0.0) + sample.value
    lines = []
    for name, (kind, documentation) in families.items():
        shown = f"{name}_total" if kind == "counter" else name  # as generate_latest writes it
        lines.append(f"# HELP {shown} {_escape_help(documentation)}")
        lines.append(f"# TYPE {shown} {kind}")
        for (sample_name, labels), value in samples[name].items():
            label_text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
            braces = f"{{{label_text}}}" if labels else ""
            lines.append(f"{sample_name}{braces} {_number(value)}")
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
