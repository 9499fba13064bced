"""Render the Helm chart with Helm's own engine (helm_python: Helm v4's Go SDK, offline) and
validate what it renders.

- ``render(values, name=..., namespace=...)`` runs the chart's values schema and templates
  exactly as ``helm install --dry-run=client`` would, and returns the objects as dicts.
- ``validate(obj)`` checks one rendered object: built-in kinds against the official
  ``kubernetes`` client's models (strict pydantic models: unknown fields, wrong types and
  missing required fields are errors; keys must be the API's camelCase names), custom kinds
  against their CRD's ``openAPIV3Schema`` (the Gateway API CRDs and Coxswain's own, as the chart
  ships them: ``tests.apiserver.crds``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import helm_python
import jsonschema
import yaml
from kubernetes import client

from tests.apiserver.crds import CHART, COXSWAIN_CRDS, GATEWAY_API_CRDS, ROOT

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CHART_DIR",
    "ROOT",
    "Rendered",
    "chart",
    "crd_schema",
    "render",
    "schema_error",
    "validate",
]

CHART_DIR: Final = CHART
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are 1 MB of YAML

# (apiVersion, kind) → the kubernetes client model of every built-in kind the chart renders.
MODELS: Final[dict[tuple[str, str], type[Any]]] = {
    ("v1", "Namespace"): client.V1Namespace,
    ("v1", "Service"): client.V1Service,
    ("v1", "ServiceAccount"): client.V1ServiceAccount,
    ("apps/v1", "Deployment"): client.V1Deployment,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): client.V2HorizontalPodAutoscaler,
    ("policy/v1", "PodDisruptionBudget"): client.V1PodDisruptionBudget,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): client.V1ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): client.V1ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): client.V1Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): client.V1RoleBinding,
    ("networking.k8s.io/v1", "IngressClass"): client.V1IngressClass,
    ("networking.k8s.io/v1", "NetworkPolicy"): client.V1NetworkPolicy,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): client.V1CustomResourceDefinition,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): (
        client.V1ValidatingAdmissionPolicy
    ),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
        client.V1ValidatingAdmissionPolicyBinding
    ),
}
# (apiVersion, kind) → the CRD file that defines it.
CUSTOM: Final[dict[tuple[str, str], Path]] = {
    ("gateway.networking.k8s.io/v1", "GatewayClass"): GATEWAY_API_CRDS
    / "gateway.networking.k8s.io_gatewayclasses.yaml",
    ("gateway.coxswain-labs.dev/v1alpha1", "CoxswainGatewayParameters"): COXSWAIN_CRDS
    / "gateway.coxswain-labs.dev_coxswaingatewayparameters.yaml",
}
_GENERIC: Final = re.compile(r"(List|Dict)\[(?:str, )?(.*)\]")  # the models' type names


@functools.cache
def chart() -> helm_python.Chart:
    """The chart, loaded once (Helm reads the directory, ``values.schema.json`` included)."""
    return helm_python.Chart.load(CHART_DIR)


@dataclass(frozen=True)
class Rendered:
    """One rendering: every object (template order), NOTES.txt, and each template's text."""

    objects: list[dict[str, Any]]
    notes: str
    manifests: dict[str, str]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> dict[str, Any]:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
        return found[0]

    def names(self, kind: str) -> set[str]:
        return {o["metadata"]["name"] for o in self.of_kind(kind)}


def render(
    values: dict[str, Any] | None = None,
    *,
    name: str = "coxswain",
    namespace: str = "coxswain-system",
) -> Rendered:
    """The chart rendered for an install of release ``name`` into ``namespace``."""
    manifests = chart().render(values, name=name, namespace=namespace, is_install=True)
    objects: list[dict[str, Any]] = []
    notes = ""
    for path in sorted(manifests):
        if path.endswith("NOTES.txt"):
            notes = manifests[path]
            continue
        for document in yaml.load_all(manifests[path], Loader=_LOADER):
            if document is not None:
                assert isinstance(document, dict), f"{path}: {document!r}"
                objects.append(document)
    return Rendered(objects=objects, notes=notes, manifests=manifests)


def schema_error(values: dict[str, Any]) -> str:
    """The message with which Helm refuses ``values`` (fails the test if it accepts them)."""
    try:
        chart().render(values, name="coxswain", namespace="coxswain-system")
    except helm_python.HelmValuesError as err:
        return str(err)
    raise AssertionError(f"values accepted: {values!r}")


@functools.cache
def crd_schema(path: Path, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one version of the CRD in ``path``."""
    crd = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{path.name} has no version {version}")


def validate(obj: dict[str, Any]) -> None:
    """Raise (AssertionError, pydantic or jsonschema errors) unless ``obj`` is a valid object."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    assert isinstance(obj.get("metadata", {}).get("name"), str), f"{key}: no metadata.name"
    model = MODELS.get(key)
    if model is not None:
        model.model_validate(obj)  # types, required fields, no unknown field
        _camel_case_only(obj, model.__name__, obj["kind"])
        return
    crd = CUSTOM.get(key)
    assert crd is not None, f"no model or CRD known for {key}"
    client.V1ObjectMeta.model_validate(obj["metadata"])
    schema = crd_schema(crd, str(key[0]).rpartition("/")[2])
    jsonschema.Draft7Validator(schema).validate(obj)


def _camel_case_only(data: Any, type_name: str, where: str) -> None:
    """Every key is one of the API's JSON names (the models also accept snake_case aliases)."""
    generic = _GENERIC.fullmatch(type_name)
    if generic is not None:
        inner = generic.group(2)
        if isinstance(data, list) and generic.group(1) == "List":
            for index, item in enumerate(data):
                _camel_case_only(item, inner, f"{where}[{index}]")
        elif isinstance(data, dict) and generic.group(1) == "Dict":
            for name, item in data.items():
                _camel_case_only(item, inner, f"{where}.{name}")
        return
    model = getattr(client, type_name, None)
    if model is None or not isinstance(data, dict):
        return  # str, int, bool, object (IntOrString, free-form)
    json_names = {json_name: attr for attr, json_name in model.attribute_map.items()}
    for name, item in data.items():
        assert name in json_names, f"{where}: unknown field {name!r} for {type_name}"
        _camel_case_only(item, model.openapi_types[json_names[name]], f"{where}.{name}")
