"""Where each finding is: the file and line of the body of the object it names.

``parse_manifests`` gives every body its ``file:line``; ``locate`` gives every finding the place
of its object, so that ``coxswain compile`` (on standard error and in ``--emit diagnostics``),
``coxswain serve`` and the golden tests say where alike. An object's key is read from its body
as the decoder reads it (a namespaced object without a namespace is in ``default``; a
cluster-scoped one has none), and when several bodies share a key the first place in (file,
line) order is kept, so the result does not depend on the order of the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.manifests import SourcedBody

__all__ = ["Places", "locate", "object_places", "placed", "placing"]


# (kind, namespace/name) and (kind, name) of an object → the file and line of its body.
Places = dict[tuple[str, str], tuple[str, int]]


def locate(diagnostics: Iterable[Diagnostic], bodies: Iterable[SourcedBody]) -> list[Diagnostic]:
    """``diagnostics``, in their order, each with the place of its object when a body has it.

    A finding that has a place already (one about a body that is no object) keeps it.
    """
    return placed(diagnostics, object_places(bodies))


def object_places(bodies: Iterable[SourcedBody]) -> Places:
    """Where each object of ``bodies`` is: all ``locate`` reads of them, so that a caller may
    let the bodies go before the findings are known (``coxswain compile``)."""
    places: Places = {}
    for sourced in bodies:
        _place(sourced, places)
    return places


def placing(bodies: Iterable[SourcedBody], places: Places) -> Iterator[SourcedBody]:
    """``bodies`` as they come, each one's place put in ``places`` on the way: their
    ``object_places`` once they are all given, without holding them (``coxswain compile``
    decodes each body and lets it go)."""
    for sourced in bodies:
        _place(sourced, places)
        yield sourced


def _place(sourced: SourcedBody, places: Places) -> None:
    body = sourced.body
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    if not isinstance(meta, Mapping):
        return
    kind, name, namespace = body.get("kind"), meta.get("name"), meta.get("namespace")
    if not isinstance(kind, str) or not isinstance(name, str):
        return
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    here = (sourced.path, sourced.line)
    # Both spellings: the key's namespace is "" for cluster-scoped kinds.
    for ref in (f"{namespace}/{name}", name):
        places[(kind, ref)] = min(places.get((kind, ref), here), here)


def placed(diagnostics: Iterable[Diagnostic], places: Places) -> list[Diagnostic]:
    """``locate`` with the ``object_places`` of the bodies."""
    found: list[Diagnostic] = []
    for d in diagnostics:
        place = None if d.file or d.key is None else places.get((d.key.kind, d.key.ref))
        found.append(d if place is None else replace(d, file=place[0], line=place[1]))
    return found
