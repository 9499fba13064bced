"""The migration report: what Coxswain would do with each ingress-nginx annotation of each
Ingress, read offline from a dump, before a cluster switches (docs/migrating-from-ingress-nginx.md).

Every Ingress of the dump is reported, whatever its class: the point is to read a cluster that
ingress-nginx serves today. Each annotation under either prefix gets its class
(:class:`~coxswain.compile.ingress.registry.AnnotationClass`) and, when its value does not
parse, the problem (the annotation is then dropped and the rest of the Ingress serves). The
summary counts annotations by class and the Ingresses that would behave differently (one of
their annotations is honoured with a difference, not yet implemented, refused, unknown or
invalid). Pure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coxswain.compile.ingress.annotations import parse_options
from coxswain.compile.ingress.registry import AnnotationClass, classify

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.compile.model.objects import Ingress

__all__ = ["MigrationEntry", "migration_data", "migration_report", "migration_table"]

_SAME = frozenset({AnnotationClass.HONOURED, AnnotationClass.IGNORED})
"""Classes under which an Ingress behaves as under ingress-nginx."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationEntry:
    """One annotation of one Ingress (``ingress`` is ``ns/name``)."""

    ingress: str
    annotation: str
    klass: AnnotationClass
    explanation: str
    problem: str = ""


def migration_report(ingresses: Iterable[Ingress]) -> list[MigrationEntry]:
    """One entry per annotation under either prefix, Ingresses by ``ns/name``. Pure."""
    entries: list[MigrationEntry] = []
    for ingress in sorted(ingresses, key=lambda i: (i.meta.key.namespace, i.meta.key.name)):
        classified, _ = classify(ingress)
        _, found = parse_options(ingress)
        problems = {d.field: d.message for d in found if d.reason == "InvalidAnnotation"}
        entries.extend(
            MigrationEntry(
                ingress=ingress.meta.key.ref,
                annotation=item.key,
                klass=item.info.klass,
                explanation=item.explanation,
                problem=problems.get(f"metadata.annotations[{item.key!r}]", ""),
            )
            for item in classified
        )
    return entries


def _summary(entries: list[MigrationEntry], ingresses: int) -> dict[str, int]:
    counts = Counter(str(e.klass) for e in entries)
    affected = {e.ingress for e in entries if e.klass not in _SAME or e.problem}
    summary = {str(k): counts.get(str(k), 0) for k in AnnotationClass}
    summary["invalid"] = sum(1 for e in entries if e.problem)
    summary["ingresses"] = ingresses
    summary["ingressesBehavingDifferently"] = len(affected)
    return summary


def migration_data(entries: list[MigrationEntry], ingresses: int) -> dict[str, Any]:
    """The report as data (``-o json`` / ``-o yaml``)."""
    rows: list[dict[str, str]] = []
    for e in entries:
        row = {
            "ingress": e.ingress,
            "annotation": e.annotation,
            "class": str(e.klass),
            "explanation": e.explanation,
        }
        if e.problem:
            row["invalid"] = e.problem
        rows.append(row)
    return {"annotations": rows, "summary": _summary(entries, ingresses)}


def migration_table(entries: list[MigrationEntry], ingresses: int) -> str:
    """The report for people: one line per annotation, then the summary."""
    rows = [("INGRESS", "ANNOTATION", "CLASS", "EXPLANATION")]
    for e in entries:
        note = f"{e.explanation}; invalid value: {e.problem}" if e.problem else e.explanation
        rows.append((e.ingress, e.annotation, str(e.klass), note))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        for r in rows
    ]
    summary = _summary(entries, ingresses)
    lines.append("")
    lines.append(
        f"{summary['ingresses']} Ingress(es), {summary['ingressesBehavingDifferently']} would "
        "behave differently under Coxswain"
    )
    counted = [*map(str, AnnotationClass), "invalid"]
    lines.append("annotations: " + ", ".join(f"{k} {summary[k]}" for k in counted))
    return "\n".join(line.rstrip() for line in lines) + "\n"
