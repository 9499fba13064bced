"""Which Ingresses are ours (Kubernetes Ingress spec, "IngressClass" and "Default IngressClass").

Rules, in order:
1. ``spec.ingressClassName`` names the class;
2. else the deprecated ``kubernetes.io/ingress.class`` annotation names it;
3. else the Ingress takes the cluster's default class: the IngressClasses annotated
   ``ingressclass.kubernetes.io/is-default-class: "true"``.
A class is ours when its ``spec.controller`` is the configured controller name, or when its
name is one the controller was told to take over (``CompileConfig.ingress_class_names``,
whether or not the IngressClass exists); an unclassed Ingress is ours too when the controller
takes Ingresses without a class (``ingress_without_class``). Ingresses of
other controllers are ignored without a word: they are someone else's. Ingresses naming a class
that is not in the input, and unclassed Ingresses when the defaults disagree, are reported,
because that is how a dump missing its IngressClass, or a cluster with two defaults, shows up;
so are the decoding findings of our classes and of classes whose controller could not be read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.decode_ingress import LEGACY_CLASS_ANNOTATION

if TYPE_CHECKING:
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.objects import Ingress
    from coxswain.compile.model.state import ClusterState

__all__ = ["select_ingresses"]


def select_ingresses(
    state: ClusterState, config: CompileConfig
) -> tuple[list[Ingress], list[Diagnostic]]:
    """The Ingresses of our classes, oldest first, and findings about class choice. Pure."""
    classes = {key.name: c for key, c in state.ingress_classes.items()}
    defaults = {c.controller == config.ingress_controller for c in classes.values() if c.is_default}
    ours: list[Ingress] = []
    # A class whose controller could not be read may be ours: its findings are shown.
    found: list[Diagnostic] = [
        d
        for c in classes.values()
        if c.controller in (config.ingress_controller, "")
        for d in c.diagnostics
    ]
    for ingress in state.ingresses.values():
        name = ingress.class_name or ingress.legacy_class
        if name is not None and name in config.ingress_class_names:
            ours.append(ingress)
        elif name is not None:
            chosen = classes.get(name)
            if chosen is None:
                found.append(_class_not_found(ingress, name))
            elif chosen.controller == config.ingress_controller:
                ours.append(ingress)
        elif defaults == {True} or config.ingress_without_class:
            ours.append(ingress)
        elif defaults == {True, False}:
            found.append(
                Diagnostic(
                    key=ingress.meta.key,
                    field="spec.ingressClassName",
                    severity=Severity.WARNING,
                    reason="AmbiguousDefaultClass",
                    message="no class is named and several IngressClasses are marked default, "
                    "not all of them ours; the Ingress is ignored",
                )
            )
    ours.sort(key=lambda i: i.meta.age_order)
    return ours, found


def _class_not_found(ingress: Ingress, name: str) -> Diagnostic:
    field = (
        "spec.ingressClassName"
        if ingress.class_name
        else f"metadata.annotations[{LEGACY_CLASS_ANNOTATION!r}]"
    )
    return Diagnostic(
        key=ingress.meta.key,
        field=field,
        severity=Severity.WARNING,
        reason="IngressClassNotFound",
        message=f"IngressClass {name!r} is not in the input; the Ingress is ignored",
    )
