"""Where a finding's object starts, at its edges (``compile.model.places.locate``): a body
without ``metadata.namespace``, or with an empty one, is in the ``default`` namespace, as
``kubectl apply`` puts it."""

from __future__ import annotations

import pytest

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import SourcedBody
from coxswain.compile.model.places import locate


@pytest.mark.parametrize("metadata", [{"name": "web"}, {"name": "web", "namespace": ""}])
def test_a_body_without_a_namespace_is_located_in_default(metadata: dict[str, str]) -> None:
    key = ObjectKey("Ingress", "default", "web")
    finding = Diagnostic(key=key, field="", severity=Severity.ERROR, reason="R", message="m")
    body = SourcedBody(body={"kind": "Ingress", "metadata": metadata}, path="app.yaml", line=7)
    [located] = locate([finding], [body])
    assert (located.file, located.line) == ("app.yaml", 7)
